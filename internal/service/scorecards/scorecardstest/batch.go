// Package scorecardstest builds stored batches with many child runs for the
// tests and benchmarks of the detail read (GET /scorecards/:id). Only test
// code imports it.
package scorecardstest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/store"
	"svc/store/records"
)

// Batch is a stored batch and the current state of its child runs, which
// its methods change in the store the way the case activities do.
type Batch struct {
	St        store.Store
	Workspace string
	ID        string
	// Children are the batch's child runs by case index; a zero ID means
	// the case has not started.
	Children []eval.Run
}

// NewBatch stores a running scorecard of cases cases (one trial each),
// created at at, whose record is as large as a real one of that size:
// the selection and the manifest's per-case digests.
func NewBatch(tb testing.TB, st store.Store, workspace, id string, cases int, at time.Time) *Batch {
	tb.Helper()
	ids := make([]string, cases)
	digests := make(map[string]string, cases)
	for i := range ids {
		ids[i] = CaseID(i)
		digests[ids[i]] = "sha256:" + strings.Repeat(fmt.Sprintf("%02x", i%256), 32)
	}
	sc := eval.Scorecard{
		ID: id, Tenant: workspace, Kind: eval.KindScorecard, Status: eval.ScorecardRunning,
		Dataset: registry.Ref{ID: "ds", Version: "1.0.0"}, Harness: registry.Ref{ID: "h", Version: "1.0.0"},
		CreatedBy: "alice", CreatedAt: at, UpdatedAt: at, Concurrency: 8, Trials: 1,
		Progress:      eval.Progress{Total: cases},
		Orchestration: &eval.Orchestration{CaseIDs: ids},
		Manifest: &eval.Manifest{IdentityVersion: 1, Cases: digests, Dataset: "sha256:" + strings.Repeat("d", 64),
			Harness: "sha256:" + strings.Repeat("e", 64), GradingPlan: "sha256:" + strings.Repeat("f", 64), SealedAt: at},
	}
	row, err := records.ScorecardRow(sc, 0)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := st.CreateScorecard(tb.Context(), row); err != nil {
		tb.Fatal(err)
	}
	return &Batch{St: st, Workspace: workspace, ID: id, Children: make([]eval.Run, cases)}
}

// CaseID is the id of case i.
func CaseID(i int) string { return fmt.Sprintf("case-%05d", i) }

// Start creates case i's canonical child run, running since at.
func (b *Batch) Start(tb testing.TB, i int, at time.Time) {
	tb.Helper()
	canonical := true
	c := registry.EvalCase{ID: CaseID(i), Task: "Write a function that returns the " + CaseID(i) + "th prime, with tests.", TimeoutSec: 60}
	r := eval.Run{
		ID: eval.ChildRunID(b.Workspace, b.ID, c.ID, 0), Tenant: b.Workspace, Harness: registry.Ref{ID: "h", Version: "1.0.0"},
		CaseID: c.ID, Status: eval.StatusRunning, CreatedAt: at, UpdatedAt: at, StartedAt: &at, Kind: eval.KindEval,
		Trigger: eval.TriggerScorecard, CreatedBy: "alice", Origin: &eval.Origin{Source: "scorecard"},
		ParentScorecardID: b.ID, Canonical: &canonical, Case: &c, Attempts: 1,
	}
	b.Children[i] = b.Add(tb, r)
}

// Finish ends case i at at: succeeded with a result of a few KB (trace,
// snapshot, evidence, three scores), passing or not.
func (b *Batch) Finish(tb testing.TB, i int, pass bool, at time.Time) {
	tb.Helper()
	r := b.Children[i]
	ts := at.Add(-time.Second)
	answer := fmt.Sprintf("def prime_%d(n):\n    # sieve up to an estimate of the nth prime\n    return sieve(n)[-1]\n", i)
	r.Status, r.FinishedAt, r.UpdatedAt = eval.StatusSucceeded, &at, at
	r.Result = &eval.CaseResult{
		Harness: "h@1.0.0", CaseID: r.CaseID, TraceRef: "trajectory:" + r.ID, TraceSealed: true, EvidenceVersion: eval.EvidenceVersion,
		Trace: []eval.TraceEvent{
			{Kind: "message", TS: &ts, Role: "user", Content: r.Case.Task.(string)},
			{Kind: "llm_call", TS: &ts, Model: "model-x", InputTokens: 812, OutputTokens: 344, CostUSD: 0.0042, DurationMs: 2310},
			{Kind: "tool_call", TS: &ts, Name: "write_file", Input: []byte(`{"path":"prime.py","bytes":412}`), Output: []byte(`{"ok":true}`)},
			{Kind: "tool_call", TS: &ts, Name: "run_tests", Input: []byte(`{"cmd":"pytest -q"}`), Output: []byte(`{"passed":7,"failed":0}`)},
			{Kind: "message", TS: &ts, Role: "assistant", Content: answer},
		},
		Snapshot: &eval.Snapshot{Kind: "prompt", Prompt: r.Case.Task.(string), Output: answer},
		Evidence: &eval.Evidence{FinalAnswer: answer, ToolCalls: []string{"write_file", "run_tests"}},
		Usage:    &eval.Usage{InputTokens: 812, OutputTokens: 344, CostUSD: 0.0042, DurationMs: 4200},
	}
	b.setScores(&r, pass, 0)
	b.put(tb, r)
}

// Rescore rewrites case i's judge score at at, as a scoring pass does.
func (b *Batch) Rescore(tb testing.TB, i int, pass bool, value float64, at time.Time) {
	tb.Helper()
	r := b.Children[i]
	res := *r.Result
	r.Result = &res
	b.setScores(&r, pass, value)
	r.UpdatedAt = at
	b.put(tb, r)
}

// Put stores r as case i's child run (any change a test wants: a flip of
// Canonical, another audience).
func (b *Batch) Put(tb testing.TB, i int, r eval.Run) {
	tb.Helper()
	b.Children[i] = r
	b.put(tb, r)
}

// Add creates r, a run the batch did not have (a second attempt at a
// slot, another audience's run).
func (b *Batch) Add(tb testing.TB, r eval.Run) eval.Run {
	tb.Helper()
	row, err := records.Row(r)
	if err != nil {
		tb.Fatal(err)
	}
	stored, err := b.St.CreateRun(tb.Context(), row)
	if err != nil {
		tb.Fatal(err)
	}
	r.CreatedAt, r.UpdatedAt = stored.CreatedAt, stored.UpdatedAt
	return r
}

func (b *Batch) setScores(r *eval.Run, pass bool, judge float64) {
	yes, verdict := true, pass
	r.Result.Scores = []eval.Score{
		{GraderID: "tests", Metric: "tests_pass", Value: map[bool]float64{true: 1, false: 0}[pass], Pass: &verdict},
		{GraderID: "len", Metric: "answer_length", Value: float64(len(r.Result.Evidence.FinalAnswer))},
		{GraderID: "judge:style", Metric: "judge:style", Value: judge, Pass: &yes, Detail: "readable, idiomatic"},
	}
	r.Result.Pass = pass
}

func (b *Batch) put(tb testing.TB, r eval.Run) {
	tb.Helper()
	row, err := records.Row(r)
	if err != nil {
		tb.Fatal(err)
	}
	stored, err := b.St.PutRun(tb.Context(), row)
	if err != nil {
		tb.Fatal(err)
	}
	r.UpdatedAt = stored.UpdatedAt
	for i := range b.Children {
		if b.Children[i].ID == r.ID {
			b.Children[i] = r
		}
	}
}
