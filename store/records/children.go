package records

import (
	"context"
	"sort"

	"svc/internal/domain/eval"
	"svc/store"
)

// ListChildren returns every canonical child run of a batch, ordered by run
// id.
func ListChildren(ctx context.Context, st store.Runs, ws, scorecardID string) ([]eval.Run, error) {
	return ListChildrenWith(ctx, st, ws, scorecardID, FromRow)
}

// ListChildrenWith is ListChildren decoding each stored run with decode
// (a DecodeCache's, for reads that repeat).
func ListChildrenWith(ctx context.Context, st store.Runs, ws, scorecardID string, decode func(store.Run) (eval.Run, error)) ([]eval.Run, error) {
	var out []eval.Run
	f := store.RunFilter{Workspace: ws, ScorecardID: scorecardID, Viewer: SystemViewer, AnyTeam: true, Limit: 1000}
	for {
		rows, err := st.ListRuns(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if !r.Canonical {
				continue
			}
			run, err := decode(r)
			if err != nil {
				return nil, err
			}
			out = append(out, run)
		}
		if len(rows) < f.Limit {
			break
		}
		last := rows[len(rows)-1]
		f.BeforeTime, f.BeforeID = last.CreatedAt, last.ID
	}
	sortRuns(out)
	return out, nil
}

func sortRuns(rs []eval.Run) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID })
}

// SystemViewer is the subject a batch's reads list its children as: a
// child run restricted to another member is not the batch's to count,
// show or judge. A private team's batch's children (team audiences) are
// the batch's: the reader of the batch was checked against its team.
const SystemViewer = "svc:system"

// Counted reports whether a stored child run counts in its batch: the
// canonical run of its (case, trial), visible to SystemViewer, which
// reads every team's.
func Counted(r store.Run) bool {
	return r.Canonical && (eval.Visible(r.Audience, SystemViewer) || eval.IsTeamAudience(r.Audience))
}

// EachChild calls fn with each counted child run of a batch whose id is
// after after, in run-id order, reading the store by keyset pages of page
// runs (store.ListChildRunPage), so that reading costs what is read, not
// the batch; between, when not nil, runs between pages (a heartbeat). It
// stops early when fn returns false or an error.
func EachChild(ctx context.Context, st store.Runs, ws, scorecardID, after string, page int, between func(), fn func(eval.Run) (bool, error)) error {
	for {
		rows, err := st.ListChildRunPage(ctx, ws, scorecardID, store.ChildRunPage{After: after, Limit: page})
		if err != nil {
			return err
		}
		for _, row := range rows {
			if !Counted(row) {
				continue
			}
			r, err := FromRow(row)
			if err != nil {
				return err
			}
			if more, err := fn(r); err != nil || !more {
				return err
			}
		}
		if len(rows) < page {
			return nil
		}
		after = rows[len(rows)-1].ID
		if between != nil {
			between()
		}
	}
}
