package nomad

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/nomad/api"

	"svc/drivers/probe"
	"svc/internal/platform/derrors"
)

// What the driver reads from Nomad's view of a job: its allocation, the
// task's exit, and why the scheduler could not place it.

// pick returns the job's allocation: there is one, as the job is never
// rescheduled; should there be more, the newest.
func pick(allocs []*api.AllocationListStub) *api.AllocationListStub {
	var best *api.AllocationListStub
	for _, a := range allocs {
		if a != nil && a.TaskGroup == groupName && (best == nil || a.CreateIndex > best.CreateIndex) {
			best = a
		}
	}
	return best
}

// terminal reports whether the allocation has ended on its client.
func terminal(a *api.AllocationListStub) bool {
	switch a.ClientStatus {
	case api.AllocClientStatusComplete, api.AllocClientStatusFailed, api.AllocClientStatusLost:
		return true
	}
	ts := a.TaskStates[taskName]
	return ts != nil && ts.State == taskDead
}

// exitCode reads the task's exit from its last Terminated event: -1 when
// a signal or the OOM killer ended it, or when it ended without one.
func exitCode(ts *api.TaskState) int {
	if ts == nil {
		return -1
	}
	for i := len(ts.Events) - 1; i >= 0; i-- {
		ev := ts.Events[i]
		if ev == nil || ev.Type != api.TaskTerminated {
			continue
		}
		if ev.Signal != 0 || ev.Details["oom_killed"] == "true" {
			return -1
		}
		return ev.ExitCode
	}
	if ts.Failed {
		return -1
	}
	return 0
}

// startFailure says why a task that never started failed, from its
// events (the driver's error pulling an image, a failed validation...).
func startFailure(ts *api.TaskState) string {
	if ts == nil {
		return "the allocation ended without running it"
	}
	for i := len(ts.Events) - 1; i >= 0; i-- {
		ev := ts.Events[i]
		if ev == nil {
			continue
		}
		for _, s := range []string{ev.DriverError, ev.SetupError, ev.ValidationError, ev.DownloadError, ev.KillError} {
			if s != "" {
				return ev.Type + ": " + s + whatToFix(ev.Type)
			}
		}
		if ev.FailsTask && ev.DisplayMessage != "" {
			return ev.Type + ": " + ev.DisplayMessage + whatToFix(ev.Type)
		}
	}
	return "the allocation failed before the task started"
}

// whatToFix adds the usual remedy for a kind of start failure.
func whatToFix(eventType string) string {
	switch eventType {
	case api.TaskDriverFailure:
		return " (check the image and the runtime's task driver)"
	case api.TaskFailedValidation:
		return " (check the harness's command and the runtime's task driver)"
	}
	return ""
}

// placement returns an error when the job's evaluations say it cannot be
// placed: a dispatch error saying what to fix.
func (d *Driver) placement(ctx context.Context, id string) error {
	evals, _, err := d.c.Jobs().Evaluations(id, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return nil // the allocation watch reports a cluster that stopped answering
	}
	for _, ev := range evals {
		if ev == nil {
			continue
		}
		if m := ev.FailedTGAllocs[groupName]; m != nil {
			return derrors.Invalidf("nomad job %s cannot be placed: %s", id, probe.Clean(placementReason(m, d.rt.Datacenters), d.cfg.Token))
		}
		if ev.Status == api.EvalStatusFailed {
			return fmt.Errorf("nomad job %s: the scheduler failed to evaluate it (%s)", id, probe.Clean(ev.StatusDescription, d.cfg.Token))
		}
	}
	return nil
}

// placementReason turns the scheduler's metrics into what to fix.
func placementReason(m *api.AllocationMetric, dcs []string) string {
	var why []string
	if m.NodesEvaluated == 0 {
		where := "the job's datacenters"
		if len(dcs) > 0 {
			where = "datacenters " + strings.Join(dcs, ", ")
		}
		if m.NodePool != "" {
			where += " (node pool " + m.NodePool + ")"
		}
		why = append(why, "no ready client node in "+where+"; start one or fix the runtime's datacenters")
	}
	for _, k := range sortedKeys(m.ConstraintFiltered) {
		why = append(why, fmt.Sprintf("%d node(s) excluded by constraint %s", m.ConstraintFiltered[k], k))
	}
	for _, k := range sortedKeys(m.ClassFiltered) {
		why = append(why, fmt.Sprintf("%d node(s) of class %s excluded", m.ClassFiltered[k], k))
	}
	if len(m.ConstraintFiltered) > 0 || len(m.ClassFiltered) > 0 {
		why = append(why, "fix the runtime's constraints or the task driver, or add nodes that satisfy them")
	}
	for _, k := range sortedKeys(m.DimensionExhausted) {
		why = append(why, fmt.Sprintf("%d node(s) lacked %s", m.DimensionExhausted[k], k))
	}
	if len(m.DimensionExhausted) > 0 || m.NodesExhausted > 0 {
		why = append(why, "lower the harness's resources (cpu, memoryMb, gpu) or the runtime's maxConcurrent, or add capacity")
	}
	for _, q := range m.QuotaExhausted {
		why = append(why, "quota exhausted: "+q)
	}
	if len(why) == 0 {
		why = append(why, fmt.Sprintf("%d node(s) evaluated, %d filtered, %d exhausted", m.NodesEvaluated, m.NodesFiltered, m.NodesExhausted))
	}
	return strings.Join(why, "; ")
}

func sortedKeys(m map[string]int) []string {
	return slices.Sorted(maps.Keys(m))
}
