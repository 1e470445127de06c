package scorecards

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"net"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/scoring"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
)

// The detail read (Get) is polled every 250 ms while a batch runs, by
// `--wait` and dashboards, on the same cores as the batch. Rebuilding a
// batch of 2,000 cases from the store on each poll (decode the record,
// read and decode every child run, build its case row, count the children
// for progress) costs some 40 ms of CPU. A detailCache keeps, per batch,
// the decoded record by version, the state and case row of each child,
// and the steps, and a poll reads only what changed since the previous
// one:
//
//   - the record's version (ScorecardVersion), decoding the record only when
//     it is another;
//   - the children's latest UpdatedAt (ChildRunsUpdatedAt, one probe of an
//     index): when it is the one of the last read, and the cache compared
//     every child's state lateCommit or more after it, no child changed
//     and no child is read;
//   - otherwise the states of the children updated since the latest
//     UpdatedAt seen less lateCommit (ListChildRunStates, from the same
//     index; the states of all of them every sweepEvery, and once the
//     batch is quiet), then the documents of those whose state differs
//     from the cached one (ListChildRuns);
//   - the steps after the last one seen (steps are append-only and commit
//     in seq order).
//
// Progress is counted from the cached states, as ChildRunCounts counts the
// stored ones (which reads every child's row: milliseconds for a large
// batch). The answer is the one a fresh read gives; only its pieces are
// shared between polls.

// lateCommit bounds how long after stamping UpdatedAt a writer's run
// usually commits, clock skew between hosts included. Writers stamp
// UpdatedAt with their clock when they build the record, not when it
// commits (the case activity's finish stamps it before its transaction,
// which may wait for the SQLite writer or retry on PostgreSQL), so a run
// can become visible after another stamped later: a read re-reads the
// states of the runs updated within lateCommit of the latest it has seen,
// an index entry each; documents are read only for runs that changed.
const lateCommit = 2 * time.Second

// sweepEvery is how often a read compares the states of all the batch's
// children rather than of the recent ones, so that a write that committed
// later than lateCommit, or kept the run's UpdatedAt, shows within
// sweepEvery. The read after a batch has been quiet for lateCommit sweeps
// too (a quiet batch is read from the cache only after such a sweep), and
// so does the read after the record changed (the batch may have finished).
const sweepEvery = 30 * time.Second

// Bounds of a detailCache: the batches it keeps, and the child runs all of
// them hold (a case row is about a KB). A batch with more children than
// maxDetailChildren is rebuilt on every read, and its light read
// (?view=summary) counts instead of reading children (countedSummary).
// maxDetailChildren is a variable for the tests.
const maxDetailBatches = 64

var maxDetailChildren = 50_000

// detailCache keeps the detail reads of recently read batches, least
// recently used first out.
type detailCache struct {
	mu       sync.Mutex
	lru      list.List // of *batchDetail, most recently used first
	byKey    map[batchKey]*list.Element
	children int // held by all entries, as last counted
}

type batchKey struct{ workspace, id string }

// batchDetail is what the cache keeps of one batch. mu serializes the
// reads of the batch, so concurrent polls do not read the same changes
// twice; what a read returns is never written again.
type batchDetail struct {
	key batchKey
	mu  sync.Mutex
	// size is the children counted in detailCache.children; guarded by
	// the cache's mu.
	size int

	// The record, decoded at version, and the verdict policy it resolves
	// to.
	version int64
	sc      eval.Scorecard
	row     store.Scorecard // its stored row's columns, without Doc
	policy  eval.VerdictPolicy
	res     eval.PolicyResolution

	kids kidSet

	steps   []eval.Step // the first maxSteps, in seq order
	lastSeq int64

	// sel is the batch's selection (records.Selection), read once when
	// an answer first shows it: it never changes.
	sel *records.Selection

	// What encode keeps: the answer's template, and the JSON of the
	// first stepsEncoded steps, comma-separated.
	tmpl         *docTemplate
	stepsJSON    []byte
	stepsEncoded int
}

func newDetailCache() *detailCache {
	return &detailCache{byKey: map[batchKey]*list.Element{}}
}

// entry returns the batch's entry, made when absent, as the most recently
// used.
func (c *detailCache) entry(k batchKey) *batchDetail {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[k]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*batchDetail)
	}
	d := &batchDetail{key: k}
	c.byKey[k] = c.lru.PushFront(d)
	for c.lru.Len() > maxDetailBatches {
		c.remove(c.lru.Back())
	}
	return d
}

// resize records how many children d holds now, and evicts the least
// recently used batches (d itself when it alone is over the bound) until
// the cache is within its bounds. The caller holds d.mu.
func (c *detailCache) resize(d *batchDetail) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[d.key]
	if !ok || el.Value != d {
		return // evicted meanwhile
	}
	n := len(d.kids.byID)
	c.children += n - d.size
	d.size = n
	if n > maxDetailChildren {
		c.remove(el)
		return
	}
	for c.children > maxDetailChildren {
		c.remove(c.lru.Back())
	}
}

func (c *detailCache) remove(el *list.Element) {
	d := el.Value.(*batchDetail)
	c.lru.Remove(el)
	delete(c.byKey, d.key)
	c.children -= d.size
}

// detailView is one read of a batch: the pieces of the answer, shared with
// the cache and with other reads.
type detailView struct {
	sc       eval.Scorecard // the record as stored
	res      eval.PolicyResolution
	counts   store.RunCounts
	rows     []eval.CaseRow
	caseRuns map[string]string
	summary  map[string]eval.MetricSummary // of rows, when the record has none
	steps    []eval.Step
}

// maxSteps is how many steps the detail read shows.
const maxSteps = 1000

// read brings d up to date with the store and returns the view. The
// caller holds d.mu. On error what d holds is still true of some earlier
// moment.
func (d *batchDetail) read(ctx context.Context, st Store, version int64, now func() time.Time) (detailView, error) {
	changed := version != d.version
	if changed {
		sc, row, err := records.LoadScorecard(ctx, st, d.key.workspace, d.key.id)
		if err != nil {
			return detailView{}, err
		}
		policy, res := scoring.ResolvePolicy(sc.VerdictPolicy, sc.Manifest)
		if !reflect.DeepEqual(policy, d.policy) {
			d.kids = kidSet{} // every case row depends on the policy
		}
		row.Doc = nil // the record is d.sc
		d.version, d.sc, d.row, d.policy, d.res = row.Version, sc, row, policy, res
	}
	if err := d.readKids(ctx, st, changed, now); err != nil {
		return detailView{}, err
	}
	if len(d.steps) < maxSteps {
		steps, err := st.ListScorecardSteps(ctx, d.key.workspace, d.key.id, d.lastSeq, maxSteps-len(d.steps))
		if err != nil {
			return detailView{}, err
		}
		for _, s := range steps {
			d.steps = append(d.steps, stepOf(s))
			d.lastSeq = s.Seq
		}
	}
	k := &d.kids
	rows := k.table() // before caseRuns, which it may make anew
	v := detailView{sc: d.sc, res: d.res, rows: rows, caseRuns: k.caseRuns, counts: k.counts,
		// Clipped: a later read appending to d.steps cannot reach what
		// this one returns.
		steps: slices.Clip(d.steps)}
	if d.sc.Summary == nil && len(k.rows) > 0 {
		if k.summary == nil {
			k.summary = scoring.Summarize(k.rows)
		}
		v.summary = k.summary
	}
	return v, nil
}

// detail returns the detail read of batch id of workspace ws through the
// cache, the whole table, and with encode its JSON too.
func (s *Service) detail(ctx context.Context, ws, id string, encode bool) (eval.Scorecard, net.Buffers, error) {
	sc, doc, _, err := s.detailPage(ctx, ws, id, nil, false, encode)
	return sc, doc, err
}

// answer is the detail read of v: the record with the fields only the
// detail read has. The copy of the record is shallow; the fields set here
// are this read's own.
func (s *Service) answer(v detailView) eval.Scorecard {
	sc := v.sc
	res := v.res
	sc.PolicyResolution = &res
	sc.Scorecard, sc.CaseRuns, sc.Steps = v.rows, v.caseRuns, v.steps
	if sc.Scorecard == nil {
		sc.Scorecard, sc.CaseRuns = []eval.CaseRow{}, map[string]string{}
	}
	if sc.Steps == nil {
		sc.Steps = []eval.Step{}
	}
	if sc.Summary == nil {
		sc.Summary = v.summary
	}
	s.progressOf(&sc, v.counts)
	return sc
}

// Paging of the detail read's per-case table. Up to MaxUnpagedCaseTrials
// rows the detail read answers the whole table, as the spec's detail read
// does; a larger table, or a read that asks for a page, answers one page
// of it, in the table's order (case, then trial), with ScorecardPage
// saying which and where the next starts. A page of the largest batch the
// cache keeps costs its own rows to encode: the record's JSON is kept per
// version, and each row's JSON until the row changes.
const (
	// MaxUnpagedCaseTrials is the largest table the detail read answers
	// whole when no page is asked for.
	MaxUnpagedCaseTrials = 10_000
	// DefaultDetailPage is the rows of a page when the read sets no limit.
	DefaultDetailPage = 1_000
	// MaxDetailPage is the most rows a read may ask for.
	MaxDetailPage = 10_000
)

// unpagedCaseTrials is MaxUnpagedCaseTrials; tests lower it.
var unpagedCaseTrials = MaxUnpagedCaseTrials

// DetailPage asks for one page of the detail read's per-case table.
type DetailPage struct {
	// CasesAfter is the cursor: "<caseId>#<trial>" of the last row of the
	// previous page (its ScorecardPage.Next); the page starts after every
	// row of that case and trial. "" starts from the first row.
	CasesAfter string
	// Limit is the page's rows, from 1 to MaxDetailPage; 0 means
	// DefaultDetailPage.
	Limit int
}

// ScorecardPage is what a paged detail read says of its table: the rows
// it holds are those after After, at most Limit; Next, when more follow,
// is the cursor of the next page; Total counts the rows of the whole
// table. caseRuns holds the keys of the page's rows only; the summary,
// progress and steps are the whole batch's.
type ScorecardPage struct {
	Limit int    `json:"limit"`
	After string `json:"after,omitempty"`
	Next  string `json:"next,omitempty"`
	Total int    `json:"total"`
}

// PagedScorecard is a detail read with its page: the record's fields, and
// scorecardPage when the table is paged.
type PagedScorecard struct {
	eval.Scorecard
	ScorecardPage *ScorecardPage `json:"scorecardPage,omitempty"`
}

// ParseCasesAfter splits a cursor "<caseId>#<trial>" (the last '#'
// separates them, as a case id may hold one); a cursor of another shape
// is ErrInvalid.
func ParseCasesAfter(cursor string) (caseID string, trial int, err error) {
	i := strings.LastIndexByte(cursor, '#')
	if i <= 0 {
		return "", 0, derrors.Invalidf("casesAfter %q: want <caseId>#<trial>", clipCursor(cursor))
	}
	trial, err = strconv.Atoi(cursor[i+1:])
	if err != nil || trial < 0 || strconv.Itoa(trial) != cursor[i+1:] {
		return "", 0, derrors.Invalidf("casesAfter %q: the trial after the last # is not a whole number", clipCursor(cursor))
	}
	return cursor[:i], trial, nil
}

func clipCursor(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// GetPage is the detail read with its table paged: q nil asks for the
// spec's detail read, which is paged only when the table holds more than
// MaxUnpagedCaseTrials rows; q asks for one page whatever the size. The
// page is nil when the answer holds the whole table. With encode it
// returns the answer's JSON too (PagedScorecard's, as GetJSON's). What it
// returns is shared as Get's is: callers must not modify it. A batch of
// more than maxDetailChildren case-trials is answered by largePage, from
// the store a page at a time.
func (s *Service) GetPage(ctx context.Context, p auth.Principal, id string, q *DetailPage, encode bool) (PagedScorecard, net.Buffers, error) {
	if q != nil {
		if q.Limit < 0 || q.Limit > MaxDetailPage {
			return PagedScorecard{}, nil, derrors.Invalidf("limit %d: want 1 to %d", q.Limit, MaxDetailPage)
		}
		if q.CasesAfter != "" {
			if _, _, err := ParseCasesAfter(q.CasesAfter); err != nil {
				return PagedScorecard{}, nil, err
			}
		}
	}
	rec, row, err := s.load(ctx, p, id)
	if err != nil {
		return PagedScorecard{}, nil, err
	}
	if rec.Progress.Total > maxDetailChildren {
		var qq DetailPage
		if q != nil {
			qq = *q
		}
		sc, page, err := s.largePage(ctx, rec, row, qq)
		if err != nil || !encode {
			return PagedScorecard{Scorecard: sc, ScorecardPage: page}, nil, err
		}
		doc, err := largePageJSON(sc, page)
		return PagedScorecard{Scorecard: sc, ScorecardPage: page}, doc, err
	}
	sc, doc, page, err := s.detailPage(ctx, p.Workspace, id, q, true, encode)
	if err != nil {
		return PagedScorecard{}, nil, err
	}
	return PagedScorecard{Scorecard: sc, ScorecardPage: page}, doc, nil
}

// detailPage is the detail read of batch id of workspace ws through the
// cache, with encode its JSON too, and its table paged as q says (or, with
// large, when it holds more than unpagedCaseTrials rows).
func (s *Service) detailPage(ctx context.Context, ws, id string, q *DetailPage, large, encode bool) (eval.Scorecard, net.Buffers, *ScorecardPage, error) {
	// The version first: a read of a batch that does not exist makes no
	// entry (and evicts none).
	version, err := s.o.Store.ScorecardVersion(ctx, ws, id)
	if err != nil {
		if errors.Is(err, derrors.ErrNotFound) {
			return eval.Scorecard{}, nil, nil, notFound(id)
		}
		return eval.Scorecard{}, nil, nil, err
	}
	d := s.details.entry(batchKey{ws, id})
	d.mu.Lock()
	defer d.mu.Unlock()
	defer s.details.resize(d)
	v, err := d.read(ctx, s.o.Store, version, s.o.Now)
	if errors.Is(err, derrors.ErrNotFound) {
		err = notFound(id)
	}
	if err != nil {
		return eval.Scorecard{}, nil, nil, err
	}
	sc := s.answer(v)
	sel, err := d.selection(ctx, s.o.Store)
	if err != nil {
		return eval.Scorecard{}, nil, nil, err
	}
	if q == nil && (!large || len(sc.Scorecard) <= unpagedCaseTrials) {
		sel.Attach(&sc)
		if !encode {
			return sc, nil, nil, nil
		}
		doc, err := d.encode(sc, nil)
		return sc, doc, nil, err
	}
	if q == nil {
		q = &DetailPage{}
	}
	page := pageOf(&sc, *q)
	pageSelection(&sc, sel)
	if !encode {
		return sc, nil, page, nil
	}
	doc, err := d.encode(sc, page)
	return sc, doc, page, err
}

// selection returns the batch's selection, read once. The caller holds
// d.mu, and d.sc and d.row are read.
func (d *batchDetail) selection(ctx context.Context, st Store) (records.Selection, error) {
	if d.sel == nil {
		sel, err := records.LoadSelection(ctx, st, d.sc, d.row)
		if err != nil {
			return records.Selection{}, err
		}
		d.sel = &sel
	}
	return *d.sel, nil
}

// pageSelection sets what a page of the detail read shows of the batch's
// selection: the manifest digests of the page's own cases, and no case
// ids (the page's rows name them).
func pageSelection(sc *eval.Scorecard, sel records.Selection) {
	attachPage(sc, sel.Only(pageCaseIDs(*sc)))
}

// pageCaseIDs are the ids of the cases of sc's table, a page of it.
func pageCaseIDs(sc eval.Scorecard) []string {
	ids := make([]string, 0, len(sc.Scorecard))
	for i, r := range sc.Scorecard {
		if i == 0 || r.CaseID != sc.Scorecard[i-1].CaseID {
			ids = append(ids, r.CaseID)
		}
	}
	return ids
}

// attachPage attaches a page's selection (its cases' digests, from Only)
// to sc, and takes the case ids away.
func attachPage(sc *eval.Scorecard, sel records.Selection) {
	sel.Attach(sc)
	if sc.Orchestration != nil && sc.Orchestration.CaseIDs != nil {
		o := *sc.Orchestration
		o.CaseIDs = nil
		sc.Orchestration = &o
	}
}

// pageOf cuts sc's table (in table order: case, then trial, then run) to
// the page q asks for, and caseRuns to the page's rows, and says which
// page it is. The cursor was checked.
func pageOf(sc *eval.Scorecard, q DetailPage) *ScorecardPage {
	limit := q.Limit
	if limit == 0 {
		limit = DefaultDetailPage
	}
	rows := sc.Scorecard
	page := &ScorecardPage{Limit: limit, After: q.CasesAfter, Total: len(rows)}
	from := 0
	if q.CasesAfter != "" {
		caseID, trial, _ := ParseCasesAfter(q.CasesAfter)
		from = sort.Search(len(rows), func(i int) bool {
			r := rows[i]
			return cmp.Or(strings.Compare(r.CaseID, caseID), cmp.Compare(r.Trial, trial)) > 0
		})
	}
	to := min(len(rows), from+limit)
	// A case and trial with two canonical runs (which the store's unique
	// index rules out) is not cut between pages.
	for to < len(rows) && to > from && rows[to].CaseID == rows[to-1].CaseID && rows[to].Trial == rows[to-1].Trial {
		to++
	}
	sc.Scorecard = rows[from:to:to]
	caseRuns := make(map[string]string, to-from)
	for _, r := range sc.Scorecard {
		key := CaseRunKey(r.CaseID, r.Trial)
		if id, ok := sc.CaseRuns[key]; ok {
			caseRuns[key] = id
		}
	}
	sc.CaseRuns = caseRuns
	if to < len(rows) && to > from {
		last := rows[to-1]
		page.Next = CaseRunKey(last.CaseID, last.Trial)
	}
	return page
}
