package runs

import (
	"context"
	"time"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/internal/service/quota"
	"svc/store"
)

// UsageWindows are the windows GET /workspace/usage reads, by name; "all"
// (0) is every run the workspace ever submitted.
var UsageWindows = map[string]time.Duration{"24h": quota.BudgetWindow, "7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour, "all": 0}

// WorkspaceUsage is what a workspace spent in a window, beside its budget
// (GET /workspace/usage).
type WorkspaceUsage struct {
	Window string     `json:"window"`
	Since  *time.Time `json:"since,omitempty"` // absent for "all"
	store.Usage
	// Used is Runs + BatchRuns: what the budget counts.
	Used int `json:"used"`
	// Budget is SVC_TENANT_RUNS, the runs a workspace may submit in a
	// rolling 24 hours (always that window, whatever Window is), and
	// Remaining what is left of it now; both absent when there is no
	// budget.
	Budget    int  `json:"budget,omitempty"`
	Remaining *int `json:"remaining,omitempty"`
}

// Usage reads what the caller's workspace spent in the named window
// ("24h" when empty): its runs, its batches' case-trials, and the cost its
// finished runs reported; and what is left of its budget.
func (s *Service) Usage(ctx context.Context, p auth.Principal, window string) (WorkspaceUsage, error) {
	if window == "" {
		window = "24h"
	}
	d, ok := UsageWindows[window]
	if !ok {
		return WorkspaceUsage{}, derrors.Invalidf("window=%q: want 24h, 7d, 30d or all", window)
	}
	now := s.o.Now().UTC()
	out := WorkspaceUsage{Window: window}
	var since time.Time
	if d > 0 {
		since = now.Add(-d)
		out.Since = &since
	}
	u, err := s.o.Store.WorkspaceUsage(ctx, p.Workspace, since)
	if err != nil {
		return WorkspaceUsage{}, err
	}
	out.Usage, out.Used = u, u.Runs+u.BatchRuns
	if s.o.TenantRuns > 0 {
		out.Budget = s.o.TenantRuns
		day := u
		if window != "24h" {
			if day.Runs, err = s.o.Store.CountRuns(ctx, p.Workspace, now.Add(-quota.BudgetWindow)); err != nil {
				return WorkspaceUsage{}, err
			}
			if day.BatchRuns, err = s.o.Store.CountBatchRuns(ctx, p.Workspace, now.Add(-quota.BudgetWindow)); err != nil {
				return WorkspaceUsage{}, err
			}
		}
		left := max(0, s.o.TenantRuns-day.Runs-day.BatchRuns)
		out.Remaining = &left
	}
	return out, nil
}
