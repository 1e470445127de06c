package records

import (
	"math"
	"time"

	"svc/internal/domain/eval"
	"svc/store"
)

// CountProgress is the progress of a batch of total case-trials whose
// canonical child runs count c, taken at at. A child run exists from the
// moment its case starts, so the children that have not finished are the
// running cases (but for those whose job waits for a runtime's slot,
// which are queued), and the missing ones are still queued.
func CountProgress(total int, c store.RunCounts, at time.Time) eval.Progress {
	p := Recount(eval.Progress{Total: total}, c)
	at = at.UTC()
	p.UpdatedAt = &at
	if c.FirstCreatedAt.IsZero() {
		return p
	}
	start := c.FirstCreatedAt.UTC()
	p.StartedAt = &start
	if secs := at.Sub(start).Seconds(); secs > 0 && p.Done > 0 {
		// Three decimals: a slow batch's rate (a case a minute) stays visible.
		p.CasesPerSecond = math.Round(float64(p.Done)/secs*1000) / 1000
	}
	return p
}

// Recount replaces the counts of p with those of c and keeps its total and
// timing.
func Recount(p eval.Progress, c store.RunCounts) eval.Progress {
	p.Done = c.ByStatus[string(eval.StatusSucceeded)] + c.ByStatus[string(eval.StatusFailed)]
	// A child still queued (its job waits for a runtime's slot) has not
	// started either.
	waiting := c.ByStatus[string(eval.StatusQueued)]
	p.Running = max(0, c.Total-p.Done-waiting)
	p.Queued = max(0, p.Total-c.Total) + waiting
	p.Passed = c.ByOutcome[eval.OutcomePass]
	p.Failed = c.ByOutcome[eval.OutcomeFail] + c.ByOutcome[eval.OutcomeError]
	p.Cancelled = c.ByOutcome[eval.OutcomeCancelled]
	p.DispatchErrors = c.ByOutcome[eval.OutcomeError]
	return p
}

// NewRunCounts returns empty counts, ready for CountChild.
func NewRunCounts() store.RunCounts {
	return store.RunCounts{ByStatus: map[string]int{}, ByOutcome: map[string]int{}}
}

// CountChildren counts children as store.Scorecards.ChildRunCounts does,
// for a caller that has them in hand.
func CountChildren(children []eval.Run) store.RunCounts {
	c := NewRunCounts()
	for _, r := range children {
		CountChild(&c, r)
	}
	return c
}

// CountChild adds one child run to c (made by NewRunCounts), as
// CountChildren counts it.
func CountChild(c *store.RunCounts, r eval.Run) {
	c.Total++
	c.ByStatus[string(r.Status)]++
	if o := r.Outcome(); o != "" {
		c.ByOutcome[o]++
	}
	if c.FirstCreatedAt.IsZero() || r.CreatedAt.Before(c.FirstCreatedAt) {
		c.FirstCreatedAt = r.CreatedAt
	}
}
