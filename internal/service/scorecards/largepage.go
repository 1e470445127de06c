package scorecards

import (
	"context"
	"encoding/json"
	"net"

	"svc/internal/domain/eval"
	"svc/internal/domain/scoring"
	"svc/store"
	"svc/store/records"
)

// largePage is the paged detail read of a batch too large for the detail
// cache (more case-trials than maxDetailChildren): one page of its table,
// read from the store by (case, trial) keyset
// (store.ListCanonicalChildPage), so that a page costs its own rows, not
// the batch's. The rest is countedSummary's: progress from the store's
// counts, the steps, the policy resolution, and the summary the batch's
// finish recorded (none while it runs); the manifest shows the page's
// cases' digests. ScorecardPage.Total counts the case-trials that have a
// run so far.
func (s *Service) largePage(ctx context.Context, rec eval.Scorecard, row store.Scorecard, q DetailPage) (eval.Scorecard, *ScorecardPage, error) {
	limit := q.Limit
	if limit == 0 {
		limit = DefaultDetailPage
	}
	page := &ScorecardPage{Limit: limit, After: q.CasesAfter}
	cursor := store.CaseTrialPage{AfterTrial: -1, Limit: min(limit+1, MaxDetailPage)}
	if q.CasesAfter != "" {
		cursor.AfterCase, cursor.AfterTrial, _ = ParseCasesAfter(q.CasesAfter) // checked by GetPage
	}
	policy, _ := scoring.ResolvePolicy(rec.VerdictPolicy, rec.Manifest)
	rows := []eval.CaseRow{}
	caseRuns := map[string]string{}
	for len(rows) <= limit {
		runs, err := s.o.Store.ListCanonicalChildPage(ctx, rec.Tenant, rec.ID, cursor)
		if err != nil {
			return eval.Scorecard{}, nil, err
		}
		for _, r := range runs {
			if len(rows) > limit {
				break
			}
			if !records.Counted(r) {
				continue // restricted to another member: not the batch's to show
			}
			run, err := records.FromRow(r)
			if err != nil {
				return eval.Scorecard{}, nil, err
			}
			rows = append(rows, scoring.CaseRow(policy, run))
		}
		if len(runs) < cursor.Limit {
			break
		}
		last := runs[len(runs)-1]
		cursor.AfterCase, cursor.AfterTrial = last.CaseID, last.Trial
	}
	if len(rows) > limit {
		rows = rows[:limit]
		last := rows[limit-1]
		page.Next = CaseRunKey(last.CaseID, last.Trial)
	}
	for _, r := range rows {
		caseRuns[CaseRunKey(r.CaseID, r.Trial)] = r.RunID
	}
	sc, err := s.countedSummary(ctx, rec)
	if err != nil {
		return eval.Scorecard{}, nil, err
	}
	sc.Orchestration, sc.Manifest = rec.Orchestration, rec.Manifest // as stored; lightView trimmed them
	sc.Scorecard, sc.CaseRuns = rows, caseRuns
	page.Total = sc.Progress.Running + sc.Progress.Done
	sel, err := records.LoadSelectionOf(ctx, s.o.Store, rec, row, pageCaseIDs(sc))
	if err != nil {
		return eval.Scorecard{}, nil, err
	}
	attachPage(&sc, sel)
	return sc, page, nil
}

// largePageJSON is largePage's answer as GET /scorecards/:id writes it.
func largePageJSON(sc eval.Scorecard, page *ScorecardPage) (net.Buffers, error) {
	doc, err := json.Marshal(PagedScorecard{Scorecard: sc, ScorecardPage: page})
	if err != nil {
		return nil, err
	}
	return net.Buffers{doc, newline}, nil
}
