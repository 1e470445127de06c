package flows

import "time"

// The approval's contract (spec §4.9, §3): ApprovalWorkflow owns a parked
// agent call once it is recorded. It waits for the decide signal or the
// expiry timer, whichever comes first; an expiry settles the approval as
// expired (never as a person's denial) unless a decision was already
// recorded; an approved call is run once through ActivityExecuteApproval,
// which the API answers from the stored result when the waiting caller
// ran it already.
const ApprovalWorkflow = "ApprovalWorkflow"

// SignalApprovalDecide carries an ApprovalDecision.
const SignalApprovalDecide = "decide"

// The approval activities (activities/approval.go): ExpireApproval
// (ApprovalRef) ApprovalSettled settles a pending approval as expired and
// answers its status after; ExecuteApproval(ApprovalRef) ApprovalExecuted
// runs an approved call once.
const (
	ActivityExpireApproval  = "ExpireApproval"
	ActivityExecuteApproval = "ExecuteApproval"
)

// ApprovalActivityNames are the approval's activities.
var ApprovalActivityNames = []string{ActivityExpireApproval, ActivityExecuteApproval}

// ApprovalStatus is an approval's state as the workflow sees it.
type ApprovalStatus string

// The approval states the workflow acts on (store.Approval* spell them).
const (
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalDenied   ApprovalStatus = "denied"
	ApprovalExpired  ApprovalStatus = "expired"
	ApprovalPending  ApprovalStatus = "pending"
)

// ApprovalWorkflowID is the workflow id of an approval: one per approval.
func ApprovalWorkflowID(workspace, id string) string { return "approval:" + workspace + ":" + id }

// ApprovalInput starts ApprovalWorkflow.
type ApprovalInput struct {
	Workspace string    `json:"workspace"`
	ID        string    `json:"id"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// ApprovalDecision is the decide signal: the status a person set.
type ApprovalDecision struct {
	Status    ApprovalStatus `json:"status"`
	DecidedBy string         `json:"decidedBy,omitempty"`
}

// ApprovalRef names an approval to an activity.
type ApprovalRef struct {
	Workspace string `json:"workspace"`
	ID        string `json:"id"`
}

// ApprovalSettled is the status of an approval after ExpireApproval.
type ApprovalSettled struct {
	Status ApprovalStatus `json:"status"`
}

// ApprovalExecuted is what ExecuteApproval did: the route's status, and
// whether this run (Resumed) or the waiting caller (Delivered) ran it.
type ApprovalExecuted struct {
	Status    int  `json:"status"`
	Resumed   bool `json:"resumed,omitempty"`
	Delivered bool `json:"delivered,omitempty"`
}

// ApprovalOutcome is the workflow's result.
type ApprovalOutcome struct {
	Status   ApprovalStatus    `json:"status"`
	Executed *ApprovalExecuted `json:"executed,omitempty"`
}
