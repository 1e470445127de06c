package activities

import (
	"context"
	"encoding/json"
	"fmt"

	"svc/internal/domain/eval"
	"svc/store"
)

// announce sends the outward effects of a terminal batch: the step, the
// event and the creator's notification, each with a deterministic key.
func (a *Activities) announce(ctx context.Context, sc eval.Scorecard) error {
	ref := ScorecardRef{Workspace: sc.Tenant, ScorecardID: sc.ID}
	msg := fmt.Sprintf("%d of %d case runs finished", len(sc.RunIDs), sc.Progress.Total)
	if sc.Error != nil {
		msg = sc.Error.Message
	}
	if err := a.step(ctx, ref, "finish", "finalize", string(sc.Status), msg, ""); err != nil {
		return err
	}
	return a.Store.Transact(ctx, func(tx store.Tx) error {
		data, _ := json.Marshal(map[string]any{"scorecardId": sc.ID, "status": sc.Status, "kind": sc.Kind})
		if _, err := tx.AppendEvent(ctx, store.Event{ID: "scorecard.finished:" + sc.ID, Workspace: sc.Tenant,
			Type: "scorecard." + string(sc.Status), Subject: "scorecard:" + sc.ID, Actor: sc.CreatedBy, Data: data}); err != nil {
			return err
		}
		if n, ok := eval.ScorecardNotice(sc); ok {
			return addNotice(ctx, tx, sc.Tenant, n)
		}
		return nil
	})
}
