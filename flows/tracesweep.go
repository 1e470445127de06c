package flows

// TraceSweepWorkflow is the registered name of the trace sweep: a cron
// workflow (TraceSweepCron) whose every run executes the SweepTraces
// activity once: it seals idle external trajectories of the OTLP door
// and deletes trajectories past their retention (docs/traces.md).
const TraceSweepWorkflow = "TraceSweepWorkflow"

// TraceSweepID is the trace sweep's one workflow id: every worker starts
// it, and the first start wins.
const TraceSweepID = "svc-trace-sweep"

// TraceSweepCron is how often the trace sweep runs (Temporal cron syntax).
const TraceSweepCron = "* * * * *"

// TraceSweepOutput is what one trace sweep did.
type TraceSweepOutput struct {
	Sealed  int `json:"sealed"`
	Dropped int `json:"dropped"`
	Expired int `json:"expired"`
}
