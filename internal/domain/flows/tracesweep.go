package flows

// TraceSweepWorkflow is the registered name of the trace sweep: a cron
// workflow (TraceSweepCron) whose every run executes the SweepTraces
// activity once: it seals idle external trajectories of the OTLP door
// and deletes trajectories past their retention (docs/traces.md).
const TraceSweepWorkflow = "TraceSweepWorkflow"

// TraceSweepID is the trace sweep's workflow id on the default task
// queue (svc): every worker starts it, and the first start wins.
const TraceSweepID = "svc-trace-sweep"

// TraceSweepIDFor is the trace sweep's workflow id on taskQueue: one
// sweep per task queue, so that deployments sharing a Temporal namespace
// under task queues of their own (each with its own store) each sweep
// their own; the default queue keeps TraceSweepID.
func TraceSweepIDFor(taskQueue string) string {
	if taskQueue == "" || taskQueue == "svc" {
		return TraceSweepID
	}
	return TraceSweepID + ":" + taskQueue
}

// TraceSweepCron is how often the trace sweep runs (Temporal cron syntax).
const TraceSweepCron = "* * * * *"

// TraceSweepOutput is what one trace sweep did.
type TraceSweepOutput struct {
	Sealed  int `json:"sealed"`
	Dropped int `json:"dropped"`
	Expired int `json:"expired"`
}
