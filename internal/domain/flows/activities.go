package flows

// The registered names of the activities the workflows call: the names of
// their methods on activities.Activities, which the worker registers
// (activities.Register). The workflows execute activities by these names,
// so they link neither the activities nor the store and the drivers behind
// them. The names are recorded in every history: they never change
// (workflows/testdata replays them).
//
// They are untyped string constants on purpose: workflow.ExecuteActivity
// takes an activity as any and reads a name only from a plain string (a
// named string type would schedule an activity with no name).
const (
	// RunWorkflow's: DispatchRun(RunRef) RunStatus, FailRun(FailInput)
	// RunStatus, FinalizeRun(RunRef), DeliverWebhook(RunRef).
	ActivityDispatchRun    = "DispatchRun"
	ActivityFailRun        = "FailRun"
	ActivityFinalizeRun    = "FinalizeRun"
	ActivityDeliverWebhook = "DeliverWebhook"
	// ScorecardWorkflow's: StartScorecard(ScorecardRef),
	// CasePage(CasePageInput) []string, RunCase(CaseItem) RunStatus,
	// RunCases(CaseChunk) ChunkResult, JudgeCase(JudgeInput),
	// FinishScorecard(FinishInput).
	ActivityStartScorecard  = "StartScorecard"
	ActivityCasePage        = "CasePage"
	ActivityRunCase         = "RunCase"
	ActivityRunCases        = "RunCases"
	ActivityJudgeCase       = "JudgeCase"
	ActivityFinishScorecard = "FinishScorecard"
	// ScoreWorkflow's: ChildRunPage(ChildPageInput) ChildPage, JudgeCase,
	// FinishScore(FinishScoreInput).
	ActivityChildRunPage = "ChildRunPage"
	ActivityFinishScore  = "FinishScore"
	// TraceSweepWorkflow's: SweepTraces() TraceSweepOutput.
	ActivitySweepTraces = "SweepTraces"
)

// ActivityNames are the names of every activity the workflows call; the
// worker must register each (activities' tests check it does).
var ActivityNames = []string{
	ActivityDispatchRun, ActivityFailRun, ActivityFinalizeRun, ActivityDeliverWebhook,
	ActivityStartScorecard, ActivityCasePage, ActivityRunCase, ActivityRunCases, ActivityJudgeCase, ActivityFinishScorecard,
	ActivityChildRunPage, ActivityFinishScore,
	ActivitySweepTraces,
	ActivitySnapshotSession,
	ActivityCreateSandbox, ActivityExecSandbox, ActivityTeardownSandbox, ActivitySettleSandbox,
	ActivityRunSandboxTask, ActivitySettleSandboxTask,
	ActivityExpireApproval, ActivityExecuteApproval,
}

// The inputs and results of the activities. Their JSON is recorded in
// every history (an activity's input and result): a field's name never
// changes.

// RunRef names a run.
type RunRef struct {
	Workspace string `json:"workspace"`
	RunID     string `json:"runId"`
}

// RunStatus is what the run activities return to the workflow: small, so
// history stays small; the record itself is in the store.
type RunStatus struct {
	Status     string `json:"status"`
	WebhookURL string `json:"webhookUrl,omitempty"`
}

// FailInput fails a run whose dispatch could not finish.
type FailInput struct {
	RunRef
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ScorecardRef names a batch.
type ScorecardRef struct {
	Workspace   string `json:"workspace"`
	ScorecardID string `json:"scorecardId"`
}

// CaseItem is one (case, trial) of a batch.
type CaseItem struct {
	ScorecardRef
	CaseID string `json:"caseId"`
	Trial  int    `json:"trial"`
	// RunID is the child run, when the caller knows it.
	RunID string `json:"runId,omitempty"`
}

// CasePageInput asks for the case ids of a batch's selection from
// position From.
type CasePageInput struct {
	ScorecardRef
	From  int `json:"from"`
	Limit int `json:"limit"`
}

// CaseChunk is a stretch of a batch's items that one RunCases activity
// runs, at most Concurrency at once. Running cases in chunks rather than
// one activity per case keeps Temporal's share of a case (history events,
// task round trips, persistence writes) a small fraction of it.
type CaseChunk struct {
	ScorecardRef
	Items       []ChunkItem `json:"items"`
	Concurrency int         `json:"concurrency"`
	// Judged: each case that succeeds is judged right after it runs.
	Judged bool `json:"judged,omitempty"`
}

// ChunkItem is one (case, trial) of a chunk.
type ChunkItem struct {
	CaseID string `json:"c"`
	Trial  int    `json:"t,omitempty"`
}

// ChunkResult counts how a chunk's items ended.
type ChunkResult struct {
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
}

// JudgeInput judges one case.
type JudgeInput struct {
	CaseItem
	// Judges are the judges to run; nil means the batch's own.
	Judges []JudgeUse `json:"judges,omitempty"`
	// Replace re-runs a judge that already has verdicts on the case (a
	// detached pass); without it a judge already judged is skipped, which
	// makes a retried activity cheap and idempotent.
	Replace bool `json:"replace,omitempty"`
}

// FinishInput ends a batch.
type FinishInput struct {
	ScorecardRef
	Cancelled bool   `json:"cancelled,omitempty"`
	Phase     string `json:"phase,omitempty"` // set when an infrastructure error fails the batch
	Message   string `json:"message,omitempty"`
}

// ChildPageInput pages a batch's canonical child runs.
type ChildPageInput struct {
	ScorecardRef
	After string `json:"after,omitempty"` // cursor: the last child run id of the previous page
	Limit int    `json:"limit"`
}

// ChildPage is one page of child runs that have results.
type ChildPage struct {
	Items []CaseItem `json:"items"`
	More  bool       `json:"more"`
}

// FinishScoreInput ends a detached scoring pass.
type FinishScoreInput struct {
	ScorecardRef
	Pass      string     `json:"pass"`
	Judges    []JudgeUse `json:"judges"`
	CreatedBy string     `json:"createdBy,omitempty"`
	CausedBy  string     `json:"causedBy,omitempty"`
	Aborted   bool       `json:"aborted,omitempty"`
	Message   string     `json:"message,omitempty"`
}
