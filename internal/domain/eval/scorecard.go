package eval

import (
	"time"

	"svc/internal/domain/registry"
)

// Scorecard states (spec §3): queued -> running -> succeeded, failed or
// cancelled; superseded is cancel's twin, fired by CI.
const (
	ScorecardQueued     Status = "queued"
	ScorecardRunning    Status = "running"
	ScorecardSucceeded  Status = "succeeded"
	ScorecardFailed     Status = "failed"
	ScorecardCancelled  Status = "cancelled"
	ScorecardSuperseded Status = "superseded"
)

// ScorecardTerminal reports whether a batch in state s is over.
func ScorecardTerminal(s Status) bool {
	switch s {
	case ScorecardSucceeded, ScorecardFailed, ScorecardCancelled, ScorecardSuperseded:
		return true
	}
	return false
}

// Kinds of batch.
const (
	KindScorecard  = "scorecard"
	KindExperiment = "experiment"
)

// Reserved ids: a one-off task experiment's dataset, and a trace
// evaluation without a dataset or harness.
const (
	DatasetAdhoc = "_adhoc"
	IDTraces     = "_traces"
)

// Failure phases of a batch (error.phase).
const (
	PhaseDispatch = "dispatch"
	PhaseJudges   = "judges"
	PhaseOffload  = "offload"
	PhasePersist  = "persist"
)

// Scorecard is the ScorecardRecord of spec §2.3.
type Scorecard struct {
	ID      string       `json:"id"`
	Tenant  string       `json:"tenant"`
	Kind    string       `json:"kind"` // scorecard or experiment
	Dataset registry.Ref `json:"dataset"`
	Harness registry.Ref `json:"harness"`
	Status  Status       `json:"status"`
	// Summary is the per-metric aggregate, present once cases have results.
	Summary map[string]MetricSummary `json:"summary,omitempty"`
	// Scorecard is the full per-case table; only the detail read has it,
	// rebuilt from the child runs.
	Scorecard []CaseRow `json:"scorecard,omitempty"`
	Error     *Error    `json:"error,omitempty"`
	Steps     []Step    `json:"steps,omitempty"`
	CreatedBy string    `json:"createdBy,omitempty"`
	// AudienceTeam is the private team whose dataset or harness the batch
	// was made from: only that team's members, admins and machine
	// credentials read the batch and its child runs (404 to others).
	AudienceTeam string    `json:"audienceTeam,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
	// FinishedAt is set with the terminal status.
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	RunIDs     []string   `json:"runIds,omitempty"`
	Subset     *Subset    `json:"subset,omitempty"`
	// VerdictPolicy is the stamped policy {id, version, digest}.
	VerdictPolicy *PolicyStamp      `json:"verdictPolicy,omitempty"`
	Manifest      *Manifest         `json:"manifest,omitempty"`
	Orchestration *Orchestration    `json:"orchestration,omitempty"`
	Scoring       []ScoringRevision `json:"scoring,omitempty"`
	AnalysisRef   string            `json:"analysisRef,omitempty"`
	Publication   *Publication      `json:"publication,omitempty"`
	Origin        *Origin           `json:"origin,omitempty"`
	JudgeModels   []string          `json:"judgeModels,omitempty"`

	// Beyond the spec: the run plan.
	Runtime     string `json:"runtime,omitempty"`
	Concurrency int    `json:"concurrency"`
	Trials      int    `json:"trials"`
	// Progress counts cases (x trials) by outcome while the batch runs.
	Progress Progress `json:"progress"`

	// ScoringInFlight is the id of the detached scoring pass running now;
	// a second pass is refused while it is set.
	ScoringInFlight string `json:"scoringInFlight,omitempty"`

	// Detail-read fields (spec §2.3).
	CaseRuns map[string]string `json:"caseRuns,omitempty"` // "<caseId>#<trial>" -> canonical child run id
	// FailedCases is the light read's (view=summary) stand-in for the
	// table: the cases with a trial that failed or erred, at most
	// MaxFailedCases, so that a poller can name failures as they happen.
	FailedCases      []string          `json:"failedCases,omitempty"`
	PolicyResolution *PolicyResolution `json:"policyResolution,omitempty"`
}

// MetricSummary aggregates one metric over a batch's case results.
type MetricSummary struct {
	Count int `json:"count"`
	// Skipped counts the scores among Count that are not measurements
	// (skips, detail "skipped: ...", and non-finite values); Mean,
	// PassRate, P50 and P95 leave them out.
	Skipped  int      `json:"skipped,omitempty"`
	Mean     float64  `json:"mean"`
	PassRate *float64 `json:"passRate,omitempty"` // over scores with a pass verdict
	P50      *float64 `json:"p50,omitempty"`
	P95      *float64 `json:"p95,omitempty"`
}

// Step is one entry of a batch's timeline.
type Step struct {
	TS      time.Time `json:"ts"`
	Phase   string    `json:"phase"`  // submit, dispatch, case, judges, aggregate, cancel, finalize
	Status  string    `json:"status"` // started, succeeded, failed, cancelled, info
	Message string    `json:"message"`
	CaseID  string    `json:"caseId,omitempty"`
}

// Subset describes a partial run: the case selection of the submit.
type Subset struct {
	Total    int      `json:"total"`
	Selected int      `json:"selected"`
	IDs      []string `json:"ids,omitempty"`
	Tags     []string `json:"tags,omitempty"`
	Limit    int      `json:"limit,omitempty"`
}

// MaxFailedCases bounds Scorecard.FailedCases.
const MaxFailedCases = 200

// Progress counts a batch's case-trials: Queued + Running + Done = Total,
// and Passed + Failed + Cancelled = Done.
type Progress struct {
	Total     int `json:"total"`
	Done      int `json:"done"`
	Passed    int `json:"passed"`
	Failed    int `json:"failed"` // the case ran and did not pass, or could not be dispatched
	Cancelled int `json:"cancelled"`
	// DispatchErrors counts the Failed that never reached a result: the
	// case could not be dispatched (its harness did not start) or failed
	// inside the platform.
	DispatchErrors int `json:"dispatchErrors,omitempty"`
	// Queued have not started; in a batch that ended early they never will.
	Queued int `json:"queued"`
	// Running have started (their child run exists) and not finished.
	Running int `json:"running"`
	// CasesPerSecond is Done over the seconds from StartedAt to UpdatedAt;
	// 0 until a case is done.
	CasesPerSecond float64 `json:"casesPerSecond"`
	// StartedAt is when the batch's first case started.
	StartedAt *time.Time `json:"startedAt,omitempty"`
	// UpdatedAt is when the counts were taken: the read while the batch
	// runs, its finish once it is over.
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
}

// PolicyStamp is the stamped verdict policy of a batch.
type PolicyStamp struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
}

// PolicyResolution is how the stamped policy resolves today (spec §2.8):
// resolved, legacy_default or unresolvable, with the reason.
type PolicyResolution struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// Orchestration is the re-drive plan of a batch: everything the workflow
// needs to dispatch, judge and redo it.
type Orchestration struct {
	// Graders override every case's own graders when set.
	Graders []registry.Grader `json:"graders,omitempty"`
	// Ungraded strips grading (experiments): cases get no scores.
	Ungraded bool       `json:"ungraded,omitempty"`
	Judges   []JudgeRef `json:"judges,omitempty"`
	// DatasetOwner is the workspace (or _shared) the dataset resolved in.
	DatasetOwner string `json:"datasetOwner,omitempty"`
	// CaseIDs is the selection, in dataset order; AdhocCase is the one
	// case of a task experiment.
	CaseIDs   []string           `json:"caseIds,omitempty"`
	AdhocCase *registry.EvalCase `json:"adhocCase,omitempty"`
}

// JudgeRef names a judge of a batch: requested and resolved versions.
type JudgeRef struct {
	ID      string `json:"id"`
	Version string `json:"version"` // as requested; may be latest
	// Resolved is the exact version resolved at submit.
	Resolved string `json:"resolved,omitempty"`
}

// ScoringRevision is one entry of a batch's append-only judgment history.
type ScoringRevision struct {
	Revision         int           `json:"revision"`
	Kind             string        `json:"kind"` // initial or rescore
	Judges           []SealedJudge `json:"judges"`
	JudgeRun         string        `json:"judgeRun,omitempty"`
	ScorePlaneDigest string        `json:"scorePlaneDigest"`
	AnalysisRef      string        `json:"analysisRef,omitempty"`
	CreatedAt        time.Time     `json:"createdAt"`
	CreatedBy        string        `json:"createdBy,omitempty"`
}

// SealedJudge is a judge as a scoring revision sealed it.
type SealedJudge struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
	// Closure is what the judge depends on: model binding, rubric, each
	// 'id@version' or "unresolved".
	Closure map[string]string `json:"closure,omitempty"`
}

// Publication is the outward-effects plan written with the terminal status.
type Publication struct {
	State     string   `json:"state"` // pending, published
	Artifacts []string `json:"artifacts"`
	Exports   []string `json:"exports"`
}

// CaseRow is one (case, trial) of the detail read's per-case table.
type CaseRow struct {
	CaseID string `json:"caseId"`
	Trial  int    `json:"trial"`
	RunID  string `json:"runId"`
	Status Status `json:"status"`
	// Verdict is pass, fail, error or pending; VerdictBasis says what
	// decided it (graders, judges, graders+judges, judges:skipped, run,
	// dispatch, cancelled, pending, policy:metrics; see package scoring).
	Verdict      string `json:"verdict"`
	VerdictBasis string `json:"verdictBasis"`
	CasePass     bool   `json:"casePass"`
	// Outcomes are the scores by metric.
	Outcomes       map[string]Score `json:"outcomes,omitempty"`
	Scores         []Score          `json:"scores,omitempty"`
	EvidenceStatus *EvidenceStatus  `json:"evidenceStatus,omitempty"`
	Critical       bool             `json:"critical,omitempty"`
	DurationMs     int64            `json:"durationMs,omitempty"`
	Error          *Error           `json:"error,omitempty"`
}

// EvidenceStatus is the derived evidence reading of a case (spec §2.7).
type EvidenceStatus struct {
	Trace    string `json:"trace"`    // complete, partial, missing, deferred
	Snapshot string `json:"snapshot"` // complete, missing
}

// Manifest is the reproducibility seal of a batch (spec §2.8). Every
// digest is "sha256:<64 hex>"; older batches carry a bare 16-hex stamp.
type Manifest struct {
	IdentityVersion int `json:"identityVersion"`
	// Cases maps case id -> digest of the resolved case bundle. It is
	// part of the batch's selection, stored apart from the record and
	// shown by the detail read only (a page of it: the page's cases).
	Cases        map[string]string `json:"cases,omitempty"`
	Dataset      string            `json:"dataset"` // digest of the dataset version as resolved
	Harness      string            `json:"harness"` // digest of the resolved harness spec
	HarnessModel string            `json:"harnessModel,omitempty"`
	GradingPlan  string            `json:"gradingPlan"`
	// GradingCases maps case id -> digest of that case's graders, when the
	// plan is per case.
	GradingCases map[string]string `json:"gradingCases,omitempty"`
	Judges       []SealedJudge     `json:"judges,omitempty"`
	// Policy is the composed verdict policy in full, and PolicyDigest its seal.
	Policy       *VerdictPolicy `json:"policy,omitempty"`
	PolicyDigest string         `json:"policyDigest,omitempty"`
	Runtime      string         `json:"runtime,omitempty"`
	SealedAt     time.Time      `json:"sealedAt"`
}

// VerdictPolicy decides a case's verdict from its scores (spec §2.8).
type VerdictPolicy struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	// Metrics, when set, are the only metrics whose pass verdicts decide
	// the case; empty means every score with a pass verdict.
	Metrics []string `json:"metrics,omitempty"`
	// CriticalCases are cases whose breaking blocks a gate regardless of
	// significance.
	CriticalCases []CaseMatcher `json:"criticalCases,omitempty"`
}

// CaseMatcher matches a case by exact id or by id prefix.
type CaseMatcher struct {
	CaseID string `json:"caseId,omitempty"`
	Prefix string `json:"prefix,omitempty"`
}

// AttestationSelfReported is the provenance attestation of a case result
// whose compute this service did not see: a self-hosted runner ran it, or
// its submitter reported the trace (ingested); AttestationManaged that of
// compute this service provisioned (spec §2.2 names these two only).
const (
	AttestationSelfReported = "self_reported"
	AttestationManaged      = "managed"
)

// SourceIngested is the provenance source of a case result built from a
// trace this service did not run (the ingest routes, push or pull). Such
// evidence reads partial (spec §2.7).
const SourceIngested = "ingested"

// legacyAttestationIngested is the attestation ingested results carried
// before they were stamped self_reported with source ingested; stored
// results may still read it.
const legacyAttestationIngested = "ingested"

// MarkIngested stamps p as the provenance of a trace this service did not
// run: its submitter vouches for it (self_reported), and it came through
// the ingest routes (source ingested).
func (p *Provenance) MarkIngested() {
	p.Attestation = AttestationSelfReported
	p.Source = SourceIngested
}

// Ingested reports whether p is the provenance of an ingested trace,
// including one stored before the source field existed.
func (p *Provenance) Ingested() bool {
	return p != nil && (p.Source == SourceIngested || p.Attestation == legacyAttestationIngested)
}
