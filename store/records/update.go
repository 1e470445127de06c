package records

import (
	"context"
	"time"

	"svc/internal/domain/eval"
	"svc/store"
)

// UpdateRun applies fn to run id of workspace ws inside tx and stores it
// with UpdatedAt now: the read, change and write of one run that a
// transaction (the caller's) makes atomic. An error of fn is returned as
// it is, and nothing is written.
func UpdateRun(ctx context.Context, tx store.Tx, ws, id string, now time.Time, fn func(run *eval.Run) error) (eval.Run, error) {
	row, err := tx.GetRun(ctx, ws, id)
	if err != nil {
		return eval.Run{}, err
	}
	run, err := FromRow(row)
	if err != nil {
		return eval.Run{}, err
	}
	if err := fn(&run); err != nil {
		return eval.Run{}, err
	}
	run.UpdatedAt = now
	nrow, err := Row(run)
	if err != nil {
		return eval.Run{}, err
	}
	nrow.UpdatedAt = now
	_, err = tx.PutRun(ctx, nrow)
	return run, err
}
