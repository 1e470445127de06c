package scoring

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/eval"
)

func pass(b bool) *bool { return &b }

func score(metric string, value float64, p *bool, detail string) eval.Score {
	return eval.Score{GraderID: metric, Metric: metric, Value: value, Pass: p, Detail: detail}
}

func TestCaseRowVerdict(t *testing.T) {
	critical := eval.VerdictPolicy{ID: "default", Version: "1", CriticalCases: []eval.CaseMatcher{{Prefix: "auth/"}}}
	onlyExact := eval.VerdictPolicy{ID: "exact-only", Version: "1", Metrics: []string{"exact"}}
	result := func(scores ...eval.Score) *eval.CaseResult { return &eval.CaseResult{Scores: scores} }
	tests := []struct {
		name         string
		policy       eval.VerdictPolicy
		run          eval.Run
		wantVerdict  string
		wantBasis    string
		wantCritical bool
	}{
		{
			name:        "pass",
			run:         eval.Run{CaseID: "a", Status: eval.StatusSucceeded, Result: result(score("exit_code", 0, pass(true), ""), score("latency", 3, nil, ""))},
			wantVerdict: VerdictPass, wantBasis: BasisGraders,
		},
		{
			name:        "a grader fails",
			run:         eval.Run{CaseID: "a", Status: eval.StatusSucceeded, Result: result(score("exit_code", 0, pass(true), ""), score("exact", 0, pass(false), ""))},
			wantVerdict: VerdictFail, wantBasis: BasisGraders,
		},
		{
			name:        "a grader skip fails the case",
			run:         eval.Run{CaseID: "a", Status: eval.StatusSucceeded, Result: result(score("r", 0, pass(false), "skipped: bad params"))},
			wantVerdict: VerdictFail, wantBasis: BasisGraders,
		},
		{
			name:        "graders and judges",
			run:         eval.Run{CaseID: "a", Status: eval.StatusSucceeded, Result: result(score("exit_code", 0, pass(true), ""), score("judge:helpful", 0.8, pass(true), ""))},
			wantVerdict: VerdictPass, wantBasis: "graders+judges",
		},
		{
			name:        "a judge fails",
			run:         eval.Run{CaseID: "a", Status: eval.StatusSucceeded, Result: result(score("exit_code", 0, pass(true), ""), score("judge:helpful", 0.2, pass(false), ""))},
			wantVerdict: VerdictFail, wantBasis: "graders+judges",
		},
		{
			name:        "a skipped judge does not decide",
			run:         eval.Run{CaseID: "a", Status: eval.StatusSucceeded, Result: result(score("exit_code", 0, pass(true), ""), score("judge:helpful", 0, pass(false), "skipped: no API key"))},
			wantVerdict: VerdictPass, wantBasis: "graders+judges:skipped",
		},
		{
			name:        "only skipped judges",
			run:         eval.Run{CaseID: "a", Status: eval.StatusSucceeded, Result: result(score("judge:helpful", 0, pass(false), "skipped: no API key"))},
			wantVerdict: VerdictError, wantBasis: BasisJudgesSkipped,
		},
		{
			name:        "the run failed with passing scores",
			run:         eval.Run{CaseID: "a", Status: eval.StatusFailed, Error: &eval.Error{Code: eval.CodeTimeout}, Result: result(score("exact", 1, pass(true), ""))},
			wantVerdict: VerdictFail, wantBasis: BasisRun,
		},
		{
			name:        "the run failed and its run score says so",
			run:         eval.Run{CaseID: "a", Status: eval.StatusFailed, Error: &eval.Error{Code: eval.CodeExit}, Result: result(score("exit_code", 2, pass(false), ""), score("run", 0, pass(false), "exit 2"))},
			wantVerdict: VerdictFail, wantBasis: BasisGraders,
		},
		{
			name:        "dispatch error",
			run:         eval.Run{CaseID: "a", Status: eval.StatusFailed, Error: &eval.Error{Code: eval.CodeDispatch, Message: "no runtime"}},
			wantVerdict: VerdictError, wantBasis: BasisDispatch,
		},
		{
			name:        "dispatch error with a partial result",
			run:         eval.Run{CaseID: "a", Status: eval.StatusFailed, Error: &eval.Error{Code: eval.CodeDispatch}, Result: result(score("exit_code", 0, pass(true), ""))},
			wantVerdict: VerdictError, wantBasis: BasisDispatch,
		},
		{
			name:        "internal error",
			run:         eval.Run{CaseID: "a", Status: eval.StatusFailed, Error: &eval.Error{Code: eval.CodeInternal}, Result: result(score("exit_code", 0, pass(true), ""))},
			wantVerdict: VerdictError, wantBasis: BasisDispatch,
		},
		{
			name:        "succeeded without a result",
			run:         eval.Run{CaseID: "a", Status: eval.StatusSucceeded},
			wantVerdict: VerdictError, wantBasis: BasisDispatch,
		},
		{
			name:        "cancelled",
			run:         eval.Run{CaseID: "a", Status: eval.StatusFailed, Error: &eval.Error{Code: eval.CodeCancelled}},
			wantVerdict: VerdictError, wantBasis: BasisCancelled,
		},
		{name: "queued", run: eval.Run{CaseID: "a", Status: eval.StatusQueued}, wantVerdict: VerdictPending, wantBasis: BasisPending},
		{name: "running", run: eval.Run{CaseID: "a", Status: eval.StatusRunning}, wantVerdict: VerdictPending, wantBasis: BasisPending},
		{
			name:        "no pass verdicts: the run decides",
			run:         eval.Run{CaseID: "a", Status: eval.StatusSucceeded, Result: result(score("latency", 3, nil, ""))},
			wantVerdict: VerdictPass, wantBasis: BasisRun,
		},
		{
			name:        "critical case failing",
			policy:      critical,
			run:         eval.Run{CaseID: "auth/login", Status: eval.StatusSucceeded, Result: result(score("exact", 0, pass(false), ""))},
			wantVerdict: VerdictFail, wantBasis: BasisGraders, wantCritical: true,
		},
		{
			name:        "critical case passing",
			policy:      critical,
			run:         eval.Run{CaseID: "auth/logout", Status: eval.StatusSucceeded, Result: result(score("exact", 1, pass(true), ""))},
			wantVerdict: VerdictPass, wantBasis: BasisGraders, wantCritical: true,
		},
		{
			name:        "policy metrics leave others out",
			policy:      onlyExact,
			run:         eval.Run{CaseID: "a", Status: eval.StatusSucceeded, Result: result(score("exact", 1, pass(true), ""), score("style", 0, pass(false), ""))},
			wantVerdict: VerdictPass, wantBasis: BasisGraders,
		},
		{
			name:        "policy metrics absent",
			policy:      onlyExact,
			run:         eval.Run{CaseID: "a", Status: eval.StatusSucceeded, Result: result(score("style", 1, pass(true), ""))},
			wantVerdict: VerdictError, wantBasis: BasisPolicyMetrics,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.policy
			if p.ID == "" {
				p = DefaultPolicy()
			}
			row := CaseRow(p, tt.run)
			if row.Verdict != tt.wantVerdict || row.VerdictBasis != tt.wantBasis {
				t.Errorf("verdict = %s (%s), want %s (%s)", row.Verdict, row.VerdictBasis, tt.wantVerdict, tt.wantBasis)
			}
			if row.CasePass != (tt.wantVerdict == VerdictPass) {
				t.Errorf("casePass = %v with verdict %s", row.CasePass, row.Verdict)
			}
			if row.Critical != tt.wantCritical {
				t.Errorf("critical = %v, want %v", row.Critical, tt.wantCritical)
			}
		})
	}
}

func TestCaseRowFields(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	end := start.Add(1500 * time.Millisecond)
	first, last := score("exact", 0, pass(false), "first"), score("exact", 1, pass(true), "second")
	run := eval.Run{
		ID: "run-1", CaseID: "c", Trial: 2, Status: eval.StatusSucceeded,
		StartedAt: &start, FinishedAt: &end,
		Result: &eval.CaseResult{
			Scores:   []eval.Score{first, last},
			Trace:    []eval.TraceEvent{{Kind: eval.EventError}},
			Snapshot: &eval.Snapshot{Kind: "prompt"},
		},
	}
	got := CaseRow(DefaultPolicy(), run)
	want := eval.CaseRow{
		CaseID: "c", Trial: 2, RunID: "run-1", Status: eval.StatusSucceeded,
		Verdict: VerdictFail, VerdictBasis: BasisGraders,
		Outcomes:       map[string]eval.Score{"exact": last},
		Scores:         []eval.Score{first, last},
		EvidenceStatus: &eval.EvidenceStatus{Trace: EvidenceComplete, Snapshot: EvidenceComplete},
		DurationMs:     1500,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CaseRow (-want +got):\n%s", diff)
	}
}

func TestEvidenceStatusOf(t *testing.T) {
	events := []eval.TraceEvent{{Kind: eval.EventError}}
	snap := &eval.Snapshot{Kind: "prompt"}
	tests := []struct {
		name   string
		r      *eval.CaseResult
		status eval.Status
		want   eval.EvidenceStatus
	}{
		{name: "pending", status: eval.StatusRunning, want: eval.EvidenceStatus{Trace: EvidenceDeferred, Snapshot: EvidenceMissing}},
		{name: "queued with a stale result", r: &eval.CaseResult{Trace: events, Snapshot: snap}, status: eval.StatusQueued, want: eval.EvidenceStatus{Trace: EvidenceDeferred, Snapshot: EvidenceComplete}},
		{name: "no result", status: eval.StatusFailed, want: eval.EvidenceStatus{Trace: EvidenceMissing, Snapshot: EvidenceMissing}},
		{name: "era 2 sealed", r: &eval.CaseResult{Trace: events, TraceSealed: true, EvidenceVersion: 2, Snapshot: snap}, status: eval.StatusSucceeded, want: eval.EvidenceStatus{Trace: EvidenceComplete, Snapshot: EvidenceComplete}},
		{name: "era 2 sealed, offloaded to the ledger", r: &eval.CaseResult{TraceRef: "trajectory:r1", TraceSealed: true, EvidenceVersion: 2}, status: eval.StatusSucceeded, want: eval.EvidenceStatus{Trace: EvidenceComplete, Snapshot: EvidenceMissing}},
		{name: "era 2 unsealed", r: &eval.CaseResult{Trace: events, EvidenceVersion: 2}, status: eval.StatusSucceeded, want: eval.EvidenceStatus{Trace: EvidencePartial, Snapshot: EvidenceMissing}},
		{name: "era 3 unsealed", r: &eval.CaseResult{Trace: events, EvidenceVersion: 3}, status: eval.StatusFailed, want: eval.EvidenceStatus{Trace: EvidencePartial, Snapshot: EvidenceMissing}},
		{name: "era 2 without a trace", r: &eval.CaseResult{EvidenceVersion: 2, TraceSealed: true}, status: eval.StatusSucceeded, want: eval.EvidenceStatus{Trace: EvidenceMissing, Snapshot: EvidenceMissing}},
		{name: "ingested and sealed", r: &eval.CaseResult{Trace: events, TraceSealed: true, EvidenceVersion: 2, Provenance: &eval.Provenance{Attestation: eval.AttestationSelfReported, Source: eval.SourceIngested}}, status: eval.StatusSucceeded, want: eval.EvidenceStatus{Trace: EvidencePartial, Snapshot: EvidenceMissing}},
		{name: "ingested before provenance.source", r: &eval.CaseResult{Trace: events, TraceSealed: true, EvidenceVersion: 2, Provenance: &eval.Provenance{Attestation: "ingested"}}, status: eval.StatusSucceeded, want: eval.EvidenceStatus{Trace: EvidencePartial, Snapshot: EvidenceMissing}},
		{name: "no era, a trace", r: &eval.CaseResult{Trace: events}, status: eval.StatusSucceeded, want: eval.EvidenceStatus{Trace: EvidenceComplete, Snapshot: EvidenceMissing}},
		{name: "no era, no trace", r: &eval.CaseResult{Snapshot: snap}, status: eval.StatusSucceeded, want: eval.EvidenceStatus{Trace: EvidenceMissing, Snapshot: EvidenceComplete}},
		{name: "no era, only a reference", r: &eval.CaseResult{TraceRef: "trajectory:r1"}, status: eval.StatusSucceeded, want: eval.EvidenceStatus{Trace: EvidenceMissing, Snapshot: EvidenceMissing}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EvidenceStatusOf(tt.r, tt.status); got != tt.want {
				t.Errorf("EvidenceStatusOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}
