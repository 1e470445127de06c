// Package eval holds the domain types of an evaluation: the run record
// (spec §2.2), the per-case result with its trace, snapshot, scores and
// evidence (§2.7), and the rules that are neither HTTP nor storage: run
// states, visibility (audience) and trace-event validation. It is pure: no
// I/O, no clocks.
package eval

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"svc/internal/domain/registry"
)

// Status is the state of a run (spec §3): queued -> running -> succeeded
// or failed.
type Status string

// The run states.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
)

// Terminal reports whether no further transition leaves s.
func (s Status) Terminal() bool { return s == StatusSucceeded || s == StatusFailed }

// Kinds of run. Eval runs (single runs, scorecard children, playground
// cases, analyses) are workspace-visible; agent conversations and sandbox
// sessions are personal (see Visible).
const (
	KindEval         = "eval"
	KindSandbox      = "sandbox"
	KindConversation = "agent-conversation"
	KindAnalysis     = "analysis"
)

// Triggers of a run.
const (
	TriggerAPI          = "api"
	TriggerScorecard    = "scorecard"
	TriggerJudgePreview = "judge-preview"
)

// Run is the RunRecord of spec §2.2 with the stored fields beside it.
type Run struct {
	ID      string       `json:"id"`
	Tenant  string       `json:"tenant"`
	Harness registry.Ref `json:"harness"`
	CaseID  string       `json:"caseId"`
	Status  Status       `json:"status"`
	Result  *CaseResult  `json:"result,omitempty"`
	Error   *Error       `json:"error,omitempty"`

	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// StartedAt and FinishedAt bound the dispatch (running -> terminal).
	StartedAt  *time.Time `json:"startedAt,omitempty"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`

	// Kind is eval, sandbox, agent-conversation or analysis.
	Kind string `json:"kind"`
	// Trigger says what started the run: api, scorecard or judge-preview.
	Trigger   string  `json:"trigger,omitempty"`
	CreatedBy string  `json:"createdBy,omitempty"`
	Origin    *Origin `json:"origin,omitempty"`
	// AudienceTeam is the private team whose dataset or harness the run was
	// made from (a batch's children inherit their batch's): only that
	// team's members, admins and machine credentials read it; to anyone
	// else it is absent (404). Empty: the run is not a private team's.
	AudienceTeam string `json:"audienceTeam,omitempty"`
	Lifetime     string `json:"lifetime,omitempty"` // "session" for sandboxes
	Class        string `json:"class,omitempty"`    // "interactive" for playground cases
	Group        string `json:"group,omitempty"`    // links a playground case to its session

	// ParentScorecardID is set on a scorecard's child runs, with the trial
	// it is and whether it is the canonical run of its (case, trial).
	ParentScorecardID string `json:"parentScorecardId,omitempty"`
	// Trial is written for every child of a scorecard, trial 0 included
	// (see MarshalJSON), and left out of a top-level run.
	Trial     int   `json:"trial,omitempty"`
	Canonical *bool `json:"canonical,omitempty"`

	// Runtime is the registered runtime the case was placed on
	// (case.placement.target); empty means the deployment's local runtime.
	Runtime string `json:"runtime,omitempty"`
	// WebhookURL receives the final record, signed, on a terminal state.
	WebhookURL string `json:"webhookUrl,omitempty"`
	// Case is the case as submitted; the workflow dispatches it.
	Case *registry.EvalCase `json:"case,omitempty"`

	// Session is a sandbox session's row fields (session.go); Placement
	// says where its compute is.
	Session   *Session      `json:"session,omitempty"`
	Placement *RunPlacement `json:"placement,omitempty"`

	Usage      *Usage      `json:"usage,omitempty"`
	Provenance *Provenance `json:"provenance,omitempty"`
	// Attempts counts dispatch attempts (a retried activity adds one).
	Attempts int `json:"attempts,omitempty"`
}

// plainRun is Run without its MarshalJSON.
type plainRun Run

// MarshalJSON writes a scorecard child's trial even when it is 0, so that
// every child names its (case, trial) slot; a top-level run has no trial.
func (r Run) MarshalJSON() ([]byte, error) {
	if r.ParentScorecardID == "" {
		return json.Marshal(plainRun(r))
	}
	return json.Marshal(struct {
		plainRun
		Trial int `json:"trial"`
	}{plainRun(r), r.Trial})
}

// Origin says who and what a run was started by: Actor is the member a
// personal run belongs to; Source names the surface (api, mcp, ci, schedule);
// Agent (beyond the spec's fields) the agent that acted with the member's
// credential.
type Origin struct {
	Actor  string `json:"actor,omitempty"`
	Source string `json:"source,omitempty"`
	Agent  *Agent `json:"agent,omitempty"`
}

// NewOrigin is the origin of work submitted from source by member: when an
// agent acted with the member's credential, or the work is personal, Actor
// names the member (an agent is never the actor: it is bound to its
// member), and Agent the agent.
func NewOrigin(source, member string, agent *Agent, personal bool) *Origin {
	o := &Origin{Source: source}
	if agent != nil || personal {
		o.Actor = member
	}
	if agent != nil {
		a := *agent
		o.Agent = &a
	}
	return o
}

// Error is the error envelope of a failed run or batch.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Phase is where a batch failed: dispatch, judges, offload or persist.
	Phase string `json:"phase,omitempty"`
}

// Error codes of a failed run.
const (
	CodeDispatch  = "DISPATCH_FAILED"
	CodeTimeout   = "TIMEOUT"
	CodeCancelled = "CANCELLED"
	CodeExit      = "NONZERO_EXIT"
	CodeInternal  = "INTERNAL"
)

// CodeBatchFailed is the error code of a failed batch; its error's Phase
// says where it failed.
const CodeBatchFailed = "BATCH_FAILED"

// Member is the member a run belongs to for the audience rule:
// origin.actor, else createdBy.
func (r *Run) Member() string {
	if r.Origin != nil && r.Origin.Actor != "" {
		return r.Origin.Actor
	}
	return r.CreatedBy
}

// Personal reports whether the run is readable only by its member (spec
// §2.2): agent-conversation runs and sandbox-session runs. A personal run
// with no stamped member stays workspace-visible.
func (r *Run) Personal() bool {
	personal := r.Kind == KindConversation || (r.Kind == KindSandbox && r.Lifetime == "session")
	return personal && r.Member() != ""
}

// Audience is who may read a run: the subject a personal run is
// restricted to, else the TeamAudience of its AudienceTeam, else "" when
// the whole workspace may. The store indexes it; reads filter on it.
func (r *Run) Audience() string {
	switch {
	case r.Personal():
		return r.Member()
	case r.AudienceTeam != "":
		return TeamAudience(r.AudienceTeam)
	}
	return ""
}

// teamAudiencePrefix marks an audience that is a private team, not a subject.
const teamAudiencePrefix = "team:"

// TeamAudience is the audience of work made from private team's asset.
func TeamAudience(team string) string { return teamAudiencePrefix + team }

// IsTeamAudience reports whether audience is a TeamAudience.
func IsTeamAudience(audience string) bool { return strings.HasPrefix(audience, teamAudiencePrefix) }

// TeamOf is the team of a TeamAudience, "" for any other audience.
func TeamOf(audience string) string {
	if !IsTeamAudience(audience) {
		return ""
	}
	return strings.TrimPrefix(audience, teamAudiencePrefix)
}

// AnyTeamAudience, among a reader's team audiences, reads every team's
// (admins and machine credentials), teams deleted since included. No team
// id holds '*'.
const AnyTeamAudience = teamAudiencePrefix + "*"

// Visible reports whether subject may read a run with the given audience,
// reading no team's: a personal audience is its member's alone, with no
// admin bypass (a refusal is a 404 to the caller). A subject spelled like
// a team audience reads no team's. VisibleTo also reads the teams the
// reader may.
func Visible(audience, subject string) bool {
	return audience == "" || (audience == subject && !IsTeamAudience(audience))
}

// VisibleTo reports whether subject, who may read the team audiences
// teams (TeamAudience values: the private teams it is in, or
// AnyTeamAudience for admins and machine credentials), may read an
// audience.
func VisibleTo(audience, subject string, teams []string) bool {
	if !IsTeamAudience(audience) {
		return Visible(audience, subject)
	}
	return slices.Contains(teams, audience) || slices.Contains(teams, AnyTeamAudience)
}

// CaseResult is the per-case result of spec §2.7.
type CaseResult struct {
	// Harness is the resolved harness, "id@version".
	Harness string       `json:"harness"`
	CaseID  string       `json:"caseId"`
	Trace   []TraceEvent `json:"trace"`
	// Snapshot is the environment snapshot: kind prompt (with output).
	Snapshot *Snapshot `json:"snapshot,omitempty"`
	Scores   []Score   `json:"scores"`
	Evidence *Evidence `json:"evidence,omitempty"`
	// TraceRef names the sealed trajectory: "trajectory:<run id>".
	TraceRef    string `json:"traceRef,omitempty"`
	TraceSealed bool   `json:"traceSealed"`
	// EvidenceVersion is the evidence era (see EvidenceVersion).
	EvidenceVersion int `json:"evidenceVersion"`
	// Execution is written only where compute really ran.
	Execution  *Execution  `json:"execution,omitempty"`
	Provenance *Provenance `json:"provenance,omitempty"`
	Usage      *Usage      `json:"usage,omitempty"`
	// Process is what the driver observed of the harness process.
	Process *Process `json:"process,omitempty"`
	// Pass is true when every score that has a pass verdict passed and no
	// error ended the case.
	Pass bool `json:"pass"`
}

// EvidenceVersion is the evidence era of results written by this code: era
// 2 seals the trajectory in the owned ledger.
const EvidenceVersion = 2

// Snapshot is an environment snapshot (spec §2.7).
type Snapshot struct {
	Kind   string `json:"kind"` // prompt or browser
	Prompt string `json:"prompt,omitempty"`
	Output string `json:"output,omitempty"`
	// Browser snapshots.
	DOM           string `json:"dom,omitempty"`
	Screenshot    string `json:"screenshot,omitempty"` // base64
	ScreenshotRef string `json:"screenshotRef,omitempty"`
}

// Score is one grader's or judge's verdict on one metric.
type Score struct {
	GraderID string  `json:"graderId"`
	Metric   string  `json:"metric"`
	Value    float64 `json:"value"`
	Pass     *bool   `json:"pass,omitempty"`
	Detail   string  `json:"detail,omitempty"`
}

// Evidence is what graders and judges read, extracted from the trace and
// the process output.
type Evidence struct {
	FinalAnswer string     `json:"finalAnswer,omitempty"`
	ToolCalls   []string   `json:"toolCalls,omitempty"` // tool names in call order
	Artifacts   []Artifact `json:"artifacts,omitempty"`
	Spans       []string   `json:"spans,omitempty"` // span names
	Errors      []string   `json:"errors,omitempty"`
}

// Artifact is a fetchable output of a run.
type Artifact struct {
	Name      string `json:"name"`
	Ref       string `json:"ref,omitempty"`
	MediaType string `json:"mediaType,omitempty"`
	Role      string `json:"role,omitempty"`
}

// Execution is the ExecutionManifest: where the case really ran.
type Execution struct {
	OS         string `json:"os"`
	OSResolved string `json:"osResolved"` // declared or defaulted
	Driver     string `json:"driver"`     // local or docker
	Image      string `json:"image,omitempty"`
	Runtime    string `json:"runtime,omitempty"`
}

// Provenance says who vouches for a result.
type Provenance struct {
	// Attestation is managed (compute this service provisioned) or
	// self_reported (a self-hosted runner ran it, or its submitter
	// reported the trace): spec §2.2 names these two only.
	Attestation string `json:"attestation"`
	// Source is ingested for a result built from a trace this service
	// did not run (posted to or pulled by the ingest routes); empty for
	// a case a driver or a runner dispatched.
	Source        string `json:"source,omitempty"`
	Driver        string `json:"driver,omitempty"`
	Worker        string `json:"worker,omitempty"` // host name of the worker that ran it
	HarnessDigest string `json:"harnessDigest,omitempty"`
	CaseDigest    string `json:"caseDigest,omitempty"`
}

// Usage is what a run consumed.
type Usage struct {
	InputTokens  int64   `json:"inputTokens,omitempty"`
	OutputTokens int64   `json:"outputTokens,omitempty"`
	CostUSD      float64 `json:"costUsd,omitempty"`
	LLMCalls     int     `json:"llmCalls,omitempty"`
	ToolCalls    int     `json:"toolCalls,omitempty"`
	DurationMs   int64   `json:"durationMs,omitempty"`
}

// Process is what the driver observed of a harness process.
type Process struct {
	ExitCode   int    `json:"exitCode"`
	DurationMs int64  `json:"durationMs"`
	StdoutTail string `json:"stdoutTail,omitempty"`
	StderrTail string `json:"stderrTail,omitempty"`
	TimedOut   bool   `json:"timedOut,omitempty"`
}

// RawJSON is a JSON value kept as sent.
type RawJSON = json.RawMessage

// Outcomes of a finished run, as batch progress counts them.
const (
	OutcomePass      = "pass"
	OutcomeFail      = "fail"
	OutcomeError     = "error"
	OutcomeCancelled = "cancelled"
)

// Outcome is the verdict of a finished run: pass, fail, error (it could
// not be dispatched) or cancelled; "" while it has not ended.
func (r *Run) Outcome() string {
	switch {
	case !r.Status.Terminal():
		return ""
	case r.Error != nil && r.Error.Code == CodeCancelled:
		return OutcomeCancelled
	case r.Result == nil, r.Error != nil && (r.Error.Code == CodeDispatch || r.Error.Code == CodeInternal):
		// No result, or no case to judge: the verdict rules call it an error too.
		return OutcomeError
	case r.Result != nil && r.Result.Pass:
		return OutcomePass
	}
	return OutcomeFail
}
