package scorecards

import (
	"bytes"
	stdcmp "cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/scoring"
	"svc/internal/platform/derrors"
	"svc/internal/service/scorecards/scorecardstest"
	"svc/store"
	"svc/store/records"
	"svc/store/sqlite/sqlitetest"
)

// freshGet is the detail read without the cache, as Get was before it:
// the record, every canonical child run and the steps read from the store
// on each call. The cached Get must answer the same.
func freshGet(ctx context.Context, s *Service, p auth.Principal, id string) (eval.Scorecard, error) {
	return freshGetWith(ctx, s, p, id, records.FromRow)
}

// freshGetWith is freshGet decoding the child runs with decode (the
// benchmarks pass a records.DecodeCache's, as Get did before the cache).
func freshGetWith(ctx context.Context, s *Service, p auth.Principal, id string, decode func(store.Run) (eval.Run, error)) (eval.Scorecard, error) {
	sc, _, err := s.loadFull(ctx, p, id)
	if err != nil {
		return eval.Scorecard{}, err
	}
	children, err := records.ListChildrenWith(ctx, s.o.Store, sc.Tenant, sc.ID, decode)
	if err != nil {
		return eval.Scorecard{}, err
	}
	policy, res := scoring.ResolvePolicy(sc.VerdictPolicy, sc.Manifest)
	sc.PolicyResolution = &res
	sc.Scorecard = make([]eval.CaseRow, 0, len(children))
	sc.CaseRuns = make(map[string]string, len(children))
	// The table's order: by case, then trial, then run id.
	slices.SortStableFunc(children, func(a, b eval.Run) int {
		return stdcmp.Or(strings.Compare(a.CaseID, b.CaseID), stdcmp.Compare(a.Trial, b.Trial), strings.Compare(a.ID, b.ID))
	})
	for _, r := range children {
		sc.Scorecard = append(sc.Scorecard, scoring.CaseRow(policy, r))
		sc.CaseRuns[CaseRunKey(r.CaseID, r.Trial)] = r.ID
	}
	if sc.Summary == nil && len(sc.Scorecard) > 0 {
		sc.Summary = scoring.Summarize(sc.Scorecard)
	}
	steps, err := s.o.Store.ListScorecardSteps(ctx, sc.Tenant, sc.ID, 0, 1000)
	if err != nil {
		return eval.Scorecard{}, err
	}
	sc.Steps = make([]eval.Step, 0, len(steps))
	for _, st := range steps {
		sc.Steps = append(sc.Steps, eval.Step{TS: st.TS, Phase: st.Phase, Status: st.Status, Message: st.Message, CaseID: st.CaseID})
	}
	if err := s.progress(ctx, &sc); err != nil {
		return eval.Scorecard{}, err
	}
	return sc, nil
}

// detailFixture is a running batch of n cases on SQLite, a Service reading
// it through the cache and the clock of both the writers and the service.
type detailFixture struct {
	s     *Service
	st    store.Store
	batch *scorecardstest.Batch
	clk   *fakeClock
	p     auth.Principal
}

func newDetailFixture(t *testing.T, n int) *detailFixture {
	st := sqlitetest.New(t)
	clk := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	p := auth.Principal{Subject: "alice", Workspace: "acme", Roles: []auth.Role{auth.RoleMember}}
	return &detailFixture{
		s: New(Options{Store: st, Now: clk.Now}), st: st, clk: clk, p: p,
		batch: scorecardstest.NewBatch(t, st, p.Workspace, "sc_detail", n, clk.Now()),
	}
}

// check fails t unless the cached read answers what a fresh one does, the
// same JSON document included.
func (f *detailFixture) check(t *testing.T, what string) {
	t.Helper()
	got, err := f.s.Get(t.Context(), f.p, f.batch.ID)
	if err != nil {
		t.Fatalf("%s: Get: %v", what, err)
	}
	want, err := freshGet(t.Context(), f.s, f.p, f.batch.ID)
	if err != nil {
		t.Fatalf("%s: freshGet: %v", what, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%s: Get differs from a fresh read (-want +got):\n%s", what, diff)
	}
	// GetJSON writes what the handler's json.Encoder writes for a fresh
	// read, byte for byte.
	var wantJSON bytes.Buffer
	if err := json.NewEncoder(&wantJSON).Encode(want); err != nil {
		t.Fatal(err)
	}
	pieces, err := f.s.GetJSON(t.Context(), f.p, f.batch.ID)
	if err != nil {
		t.Fatalf("%s: GetJSON: %v", what, err)
	}
	var written bytes.Buffer
	if _, err := pieces.WriteTo(&written); err != nil {
		t.Fatal(err)
	}
	gotJSON := written.Bytes()
	if !bytes.Equal(gotJSON, wantJSON.Bytes()) {
		t.Fatalf("%s: GetJSON differs from the encoding of a fresh read:\n got %.2000s\nwant %.2000s", what, gotJSON, wantJSON.Bytes())
	}
}

// TestGetMatchesFreshRead drives a batch through what its children live
// through (start, finish, re-scoring, a canonical run replaced, a run
// restricted to another member and back, steps, a new policy, the
// finish), interleaved with reads, and checks after each step that the
// cached detail read answers exactly what a fresh read does.
func TestGetMatchesFreshRead(t *testing.T) {
	const n = 40
	f := newDetailFixture(t, n)
	b, clk := f.batch, f.clk
	tick := func() time.Time { return clk.add(37 * time.Millisecond) }
	f.check(t, "no child yet")

	for i := range n {
		b.Start(t, i, tick())
		if i%3 == 0 {
			f.check(t, fmt.Sprintf("case %d started", i))
		}
		if i >= 4 {
			b.Finish(t, i-4, i%5 != 0, tick())
		}
		if i%4 == 0 {
			if err := f.st.AppendScorecardSteps(t.Context(), []store.ScorecardStep{{Workspace: f.p.Workspace, ScorecardID: b.ID,
				Key: fmt.Sprintf("case:%d", i), TS: tick(), Phase: "case", Status: "failed", Message: "boom", CaseID: scorecardstest.CaseID(i)}}); err != nil {
				t.Fatal(err)
			}
		}
		f.check(t, fmt.Sprintf("case %d finished", i-4))
	}
	for i := n - 4; i < n; i++ {
		b.Finish(t, i, true, tick())
	}
	f.check(t, "every case finished")

	// Re-scoring rewrites scores and turns verdicts.
	for i := range n {
		b.Rescore(t, i, i%2 == 0, float64(i%7)/7, tick())
		if i%6 == 0 {
			f.check(t, fmt.Sprintf("case %d re-scored", i))
		}
	}
	f.check(t, "re-scored")

	// A retried slot: the first run stops being canonical, another run
	// takes the slot.
	old := b.Children[3]
	notCanonical := false
	old.Canonical, old.UpdatedAt = &notCanonical, tick()
	b.Put(t, 3, old)
	f.check(t, "case 3 has no canonical run")
	canonical := true
	retry := old
	retry.ID, retry.Canonical, retry.CreatedAt, retry.UpdatedAt = "run_retry_3", &canonical, tick(), clk.Now()
	b.Children[3] = b.Add(t, retry)
	f.check(t, "case 3 has another canonical run")

	// A run restricted to another member leaves the table (not the
	// counts), and comes back.
	personal := b.Children[5]
	personal.Kind, personal.Origin, personal.UpdatedAt = eval.KindConversation, &eval.Origin{Actor: "bob"}, tick()
	b.Put(t, 5, personal)
	f.check(t, "case 5 restricted to bob")
	personal.Kind, personal.Origin, personal.UpdatedAt = eval.KindEval, &eval.Origin{Source: "scorecard"}, tick()
	b.Put(t, 5, personal)
	f.check(t, "case 5 visible again")

	// A case id JSON escapes (for HTML too) and one beyond ASCII, in
	// caseRuns' keys and the table.
	for i, caseID := range []string{`odd<&>"case\`, "café-ü"} {
		odd := b.Children[6]
		odd.ID, odd.CaseID, odd.Case, odd.CreatedAt, odd.UpdatedAt = fmt.Sprintf("run_odd_%d", i), caseID, nil, tick(), clk.Now()
		b.Add(t, odd)
		f.check(t, "case id "+caseID)
	}

	// Another verdict policy (critical cases, deciding metrics): every
	// case row changes with the record.
	policy := eval.VerdictPolicy{ID: "strict", Version: "1.0.0", Metrics: []string{"tests_pass"},
		CriticalCases: []eval.CaseMatcher{{Prefix: "case-0000"}}}
	if _, err := records.UpdateScorecard(t.Context(), f.st, f.p.Workspace, b.ID, func(sc *eval.Scorecard) error {
		stamp := scoring.Stamp(policy)
		sc.VerdictPolicy, sc.Manifest.Policy, sc.Manifest.PolicyDigest = &stamp, &policy, stamp.Digest
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f.check(t, "new policy")

	// Quiet for longer than lateCommit: the read after sweeps, the next
	// ones read no child.
	clk.add(lateCommit + time.Second)
	f.check(t, "quiet")
	f.check(t, "quiet, again")

	// The batch finishes: the record's summary and pace replace the live
	// ones.
	if _, err := records.UpdateScorecard(t.Context(), f.st, f.p.Workspace, b.ID, func(sc *eval.Scorecard) error {
		now := tick()
		sc.Status, sc.FinishedAt, sc.Summary = eval.ScorecardSucceeded, &now, map[string]eval.MetricSummary{"casePass": {Count: n, Mean: 0.5}}
		sc.Progress.CasesPerSecond, sc.Progress.StartedAt, sc.Progress.UpdatedAt = 1.5, &now, &now
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f.check(t, "finished")
	clk.add(time.Hour)
	f.check(t, "an hour later")
}

// TestGetSeesLateCommits: a run that commits after a read saw runs stamped
// later shows on the next read when it was stamped within lateCommit of
// them, and within sweepEvery however late it was stamped; so does a
// write that keeps the run's UpdatedAt.
func TestGetSeesLateCommits(t *testing.T) {
	f := newDetailFixture(t, 10)
	b, clk := f.batch, f.clk
	for i := range 6 {
		b.Start(t, i, clk.add(time.Second))
	}
	f.check(t, "six started")

	// Stamped a second before the latest the read saw.
	b.Finish(t, 0, true, clk.Now().Add(-time.Second))
	f.check(t, "finished a second late")

	// Stamped long before: stale until the next sweep at the latest.
	late := clk.Now().Add(-time.Minute)
	b.Finish(t, 1, true, late)
	clk.add(sweepEvery)
	f.check(t, "finished a minute late, a sweep later")

	// Quiet, then a write that keeps UpdatedAt (status changes, the time
	// does not): seen by the next sweep.
	clk.add(lateCommit)
	f.check(t, "quiet")
	r := b.Children[2]
	r.Status = eval.StatusFailed
	r.Error = &eval.Error{Code: eval.CodeDispatch, Message: "gone"}
	b.Put(t, 2, r)
	clk.add(sweepEvery)
	f.check(t, "failed with its old UpdatedAt, a sweep later")

	// And a new child that commits long after its stamp.
	b.Start(t, 6, clk.Now().Add(-time.Hour))
	clk.add(sweepEvery)
	f.check(t, "created an hour late, a sweep later")
}

// TestGetConcurrent reads a batch from several goroutines while its
// children change (run with -race): every read succeeds, and once the
// writes stop the cached read answers what a fresh one does.
func TestGetConcurrent(t *testing.T) {
	const n = 60
	f := newDetailFixture(t, n)
	b, clk := f.batch, f.clk
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				sc, err := f.s.Get(t.Context(), f.p, b.ID)
				if err != nil {
					t.Error(err)
					return
				}
				// Readers only read; encoding reads every shared piece,
				// and so does writing GetJSON's, after the read is over.
				if _, err := json.Marshal(sc); err != nil {
					t.Error(err)
					return
				}
				doc, err := f.s.GetJSON(t.Context(), f.p, b.ID)
				if err == nil {
					_, err = doc.WriteTo(io.Discard)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := range n {
		b.Start(t, i, clk.add(10*time.Millisecond))
		b.Finish(t, i, i%2 == 0, clk.add(10*time.Millisecond))
	}
	close(done)
	wg.Wait()
	f.check(t, "after the writes")
}

// TestGetUnknownBatch: a batch of another workspace, or none, is 404, and
// leaves nothing in the cache.
func TestGetUnknownBatch(t *testing.T) {
	f := newDetailFixture(t, 1)
	other := auth.Principal{Subject: "eve", Workspace: "globex", Roles: []auth.Role{auth.RoleMember}}
	for _, tc := range []struct {
		p  auth.Principal
		id string
	}{{other, f.batch.ID}, {f.p, "sc_absent"}} {
		if _, err := f.s.Get(t.Context(), tc.p, tc.id); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("Get(%s, %s) = %v, want ErrNotFound", tc.p.Workspace, tc.id, err)
		}
	}
	if got := f.s.details.lru.Len(); got != 0 {
		t.Errorf("the cache holds %d batches after reads of none, want 0", got)
	}
}

// TestGetManyChildren: a batch large enough for the table's JSON to be
// cut in chunks, whose children start, finish and are re-scored in a
// random order, reads as a fresh read does throughout.
func TestGetManyChildren(t *testing.T) {
	const n = 400
	f := newDetailFixture(t, n)
	b, clk := f.batch, f.clk
	rng := rand.New(rand.NewPCG(1, 2))
	order := rng.Perm(n)
	for j, i := range order {
		b.Start(t, i, clk.add(time.Millisecond))
		if j%3 == 0 {
			done := order[rng.IntN(j+1)]
			if b.Children[done].Status == eval.StatusRunning {
				b.Finish(t, done, rng.IntN(2) == 0, clk.add(time.Millisecond))
			}
		}
		if j%25 == 0 {
			f.check(t, fmt.Sprintf("%d started", j+1))
		}
	}
	for i := range n {
		if b.Children[i].Status == eval.StatusRunning {
			b.Finish(t, i, rng.IntN(2) == 0, clk.add(time.Millisecond))
		}
	}
	f.check(t, "every case finished")
	for j := range 100 {
		b.Rescore(t, rng.IntN(n), rng.IntN(2) == 0, rng.Float64(), clk.add(time.Millisecond))
		if j%20 == 0 {
			f.check(t, fmt.Sprintf("%d re-scored", j+1))
		}
	}
	f.check(t, "re-scored")
}

// TestGetPagePagesLargeTables: above the unpaged bound the detail read
// answers the table a page at a time, in the table's order; walking the
// pages by their next cursor gives the rows of a fresh read once each,
// every page carrying the whole batch's summary, progress and steps and
// the caseRuns of its own rows, its JSON that of PagedScorecard. At or
// under the bound, and without a page asked for, the read is the spec's.
func TestGetPagePagesLargeTables(t *testing.T) {
	const n = 40
	f := newDetailFixture(t, n)
	b, clk := f.batch, f.clk
	for i := range n {
		b.Start(t, i, clk.add(time.Millisecond))
		if i != 7 { // one case still running
			b.Finish(t, i, i%3 != 0, clk.add(time.Millisecond))
		}
	}
	ctx := t.Context()
	want, err := freshGet(ctx, f.s, f.p, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	get := func(what string, q *DetailPage) PagedScorecard {
		t.Helper()
		got, _, err := f.s.GetPage(ctx, f.p, b.ID, q, false)
		if err != nil {
			t.Fatalf("%s: GetPage: %v", what, err)
		}
		// The JSON is what json.Encoder writes for the answer.
		var wantJSON bytes.Buffer
		if err := json.NewEncoder(&wantJSON).Encode(got); err != nil {
			t.Fatal(err)
		}
		_, pieces, err := f.s.GetPage(ctx, f.p, b.ID, q, true)
		if err != nil {
			t.Fatalf("%s: GetPage encoded: %v", what, err)
		}
		var written bytes.Buffer
		if _, err := pieces.WriteTo(&written); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(written.Bytes(), wantJSON.Bytes()) {
			t.Fatalf("%s: GetPage's JSON differs from its answer's:\n got %.2000s\nwant %.2000s", what, written.Bytes(), wantJSON.Bytes())
		}
		return got
	}

	// Under the bound: the spec's read, no page.
	if got := get("unpaged", nil); got.ScorecardPage != nil {
		t.Errorf("a table of %d rows is paged: %+v", n, got.ScorecardPage)
	} else if diff := cmp.Diff(want, got.Scorecard); diff != "" {
		t.Errorf("unpaged GetPage differs from a fresh read (-want +got):\n%s", diff)
	}

	defer func(old int) { unpagedCaseTrials = old }(unpagedCaseTrials)
	unpagedCaseTrials = n - 1
	if got := get("over the bound", nil); got.ScorecardPage == nil {
		t.Errorf("a table of %d rows over a bound of %d is not paged", n, unpagedCaseTrials)
	} else if diff := cmp.Diff(&ScorecardPage{Limit: DefaultDetailPage, Total: n}, got.ScorecardPage); diff != "" {
		t.Errorf("first page of the default size (-want +got):\n%s", diff)
	}

	for _, limit := range []int{1, 7, n - 1, n} {
		var rows []eval.CaseRow
		q := &DetailPage{Limit: limit}
		for pages := 0; ; pages++ {
			if pages > n {
				t.Fatalf("limit %d: the walk does not end", limit)
			}
			got := get(fmt.Sprintf("limit %d after %q", limit, q.CasesAfter), q)
			pg := got.ScorecardPage
			if pg == nil || pg.Limit != limit || pg.After != q.CasesAfter || pg.Total != n || len(got.Scorecard.Scorecard) > limit {
				t.Fatalf("limit %d after %q: page %+v of %d rows", limit, q.CasesAfter, pg, len(got.Scorecard.Scorecard))
			}
			wantRuns := map[string]string{}
			for _, r := range got.Scorecard.Scorecard {
				key := CaseRunKey(r.CaseID, r.Trial)
				wantRuns[key] = want.CaseRuns[key]
			}
			if diff := cmp.Diff(wantRuns, got.CaseRuns); diff != "" {
				t.Errorf("limit %d: caseRuns of the page (-want +got):\n%s", limit, diff)
			}
			// Everything but the table, and the selection (the page's
			// cases' digests, no case ids), is the whole batch's.
			wantPage := want
			wantPage.Scorecard = got.Scorecard.Scorecard
			pageSelection(&wantPage, records.SelectionOf(want))
			if len(wantPage.Manifest.Cases) != len(got.Scorecard.Scorecard) {
				t.Errorf("limit %d: the page shows %d case digests for %d rows", limit, len(wantPage.Manifest.Cases), len(got.Scorecard.Scorecard))
			}
			wantPage.Scorecard = want.Scorecard
			rest := got.Scorecard
			rest.Scorecard, rest.CaseRuns = want.Scorecard, want.CaseRuns
			if diff := cmp.Diff(wantPage, rest); diff != "" {
				t.Errorf("limit %d: the page's record differs from a fresh read (-want +got):\n%s", limit, diff)
			}
			rows = append(rows, got.Scorecard.Scorecard...)
			if pg.Next == "" {
				break
			}
			last := got.Scorecard.Scorecard[len(got.Scorecard.Scorecard)-1]
			if pg.Next != CaseRunKey(last.CaseID, last.Trial) {
				t.Errorf("limit %d: next %q is not the page's last row %s", limit, pg.Next, CaseRunKey(last.CaseID, last.Trial))
			}
			q = &DetailPage{CasesAfter: pg.Next, Limit: limit}
		}
		if diff := cmp.Diff(want.Scorecard, rows); diff != "" {
			t.Errorf("limit %d: the pages' rows differ from a fresh read's table (-want +got):\n%s", limit, diff)
		}
	}

	// A cursor between rows, or past the last, starts after it.
	got := get("between rows", &DetailPage{CasesAfter: scorecardstest.CaseID(4) + "x#0", Limit: 2})
	if ids := []string{got.Scorecard.Scorecard[0].CaseID, got.Scorecard.Scorecard[1].CaseID}; !slices.Equal(ids, []string{scorecardstest.CaseID(5), scorecardstest.CaseID(6)}) {
		t.Errorf("after a cursor between rows: cases %v", ids)
	}
	got = get("past the last", &DetailPage{CasesAfter: "zzz#0"})
	if len(got.Scorecard.Scorecard) != 0 || got.ScorecardPage.Next != "" {
		t.Errorf("after the last row: %d rows, next %q; want none", len(got.Scorecard.Scorecard), got.ScorecardPage.Next)
	}

	for _, q := range []DetailPage{{CasesAfter: "no-trial"}, {CasesAfter: "#0"}, {CasesAfter: "case#x"}, {CasesAfter: "case#-1"},
		{CasesAfter: "case#01"}, {Limit: -1}, {Limit: MaxDetailPage + 1}} {
		if _, _, err := f.s.GetPage(ctx, f.p, b.ID, &q, false); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("GetPage(%+v) = %v, want ErrInvalid", q, err)
		}
	}
	if _, _, err := f.s.GetPage(ctx, f.p, "sc_absent", nil, true); !errors.Is(err, derrors.ErrNotFound) {
		t.Errorf("GetPage of an absent batch = %v, want ErrNotFound", err)
	}
}

// TestSummaryOfALargeBatchCounts: above maxDetailChildren the light read
// is built from counts and steps, without the table, and agrees with the
// detail read on progress and steps.
func TestSummaryOfALargeBatchCounts(t *testing.T) {
	f := newDetailFixture(t, 6)
	for i := range 6 {
		f.batch.Start(t, i, f.clk.add(time.Second))
		if i < 4 {
			f.batch.Finish(t, i, i%2 == 0, f.clk.add(time.Second))
		}
	}
	if err := f.st.AppendScorecardSteps(t.Context(), []store.ScorecardStep{{Workspace: f.p.Workspace, ScorecardID: f.batch.ID,
		Key: "case:x", TS: f.clk.Now(), Phase: "case", Status: "failed", Message: "boom", CaseID: scorecardstest.CaseID(1)}}); err != nil {
		t.Fatal(err)
	}
	full, err := f.s.Get(t.Context(), f.p, f.batch.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer func(n int) { maxDetailChildren = n }(maxDetailChildren)
	maxDetailChildren = 3
	light, err := f.s.Summary(t.Context(), f.p, f.batch.ID)
	if err != nil {
		t.Fatal(err)
	}
	if light.Scorecard != nil || light.CaseRuns != nil || light.FailedCases != nil {
		t.Errorf("the counted light read has a table, caseRuns or failedCases: %+v", light)
	}
	if diff := cmp.Diff(full.Progress, light.Progress); diff != "" {
		t.Errorf("progress (-detail +light):\n%s", diff)
	}
	if diff := cmp.Diff(full.Steps, light.Steps); diff != "" {
		t.Errorf("steps (-detail +light):\n%s", diff)
	}
	if light.PolicyResolution == nil || *light.PolicyResolution != *full.PolicyResolution {
		t.Errorf("policyResolution %+v, want %+v", light.PolicyResolution, full.PolicyResolution)
	}
}
