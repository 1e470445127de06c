package flows

// ErrorType is the type of a Temporal application error that crosses the
// workflow boundary: an activity (or the worker) gives it to an error, and
// the workflows read it (ApplicationError.Type, a retry policy's
// NonRetryableErrorTypes) or record it. Both sides use these constants so
// they cannot drift apart. The values are recorded in every history with
// such a failure: they never change (workflows/testdata replays them).
type ErrorType string

// The application error types of the workflow contract.
const (
	// JudgesPhase: judging a case (not running it) failed, so the batch's
	// error names the judges phase.
	JudgesPhase ErrorType = "JudgesPhase"
	// PersistPhase: a case ran but its result could not be written to the
	// store (phase persist, spec §2.3); retried like any other error.
	PersistPhase ErrorType = "PersistPhase"
	// WorkerGone: the attempt ended because its worker stopped or died (a
	// chunk that stopped with its worker, or an attempt a restarted worker
	// reclaimed): none of its cases failed, and the batch runs the chunk
	// again rather than count it against the chunk's retries.
	WorkerGone ErrorType = "WorkerGone"
	// WebhookRefused: a webhook delivery refused for good (a destination
	// the address guard refuses); not retried.
	WebhookRefused ErrorType = "WebhookRefused"
	// CaseMissing: a batch's case (or an ingest's child run) is not there
	// to run; not retried.
	CaseMissing ErrorType = "CaseMissing"
	// DatasetGone: the batch's dataset version cannot be read any more;
	// not retried.
	DatasetGone ErrorType = "DatasetGone"
	// TraceCorrupt: an ingested run's sealed trace does not decode; not
	// retried.
	TraceCorrupt ErrorType = "TraceCorrupt"
	// PullCorrupt: a pulled run's stored pull does not decode; not retried.
	PullCorrupt ErrorType = "PullCorrupt"
	// ScoringAborted: the error ScoreWorkflow ends with when its pass was
	// cancelled or failed (it added no revision).
	ScoringAborted ErrorType = "ScoringAborted"
)
