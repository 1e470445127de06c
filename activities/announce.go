package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

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
		if sc.CreatedBy == "" || (sc.Status != eval.ScorecardSucceeded && sc.Status != eval.ScorecardFailed) {
			return nil
		}
		kind, verb := eval.NotifyScorecardCompleted, "completed"
		if sc.Status == eval.ScorecardFailed {
			kind, verb = eval.NotifyScorecardFailed, "failed"
		}
		if sc.Origin != nil && sc.Origin.Source == "schedule" {
			kind = strings.Replace(kind, "scorecard_", "schedule_", 1)
		}
		body := fmt.Sprintf("%s of %s on %s %s.", sc.Kind, sc.Harness, sc.Dataset, verb)
		if pr, ok := sc.Summary["casePass"]; ok && pr.PassRate != nil {
			body += fmt.Sprintf(" Pass rate %.1f%% over %d cases.", *pr.PassRate*100, pr.Count)
		}
		_, _, err := tx.AddNotification(ctx, store.Notification{ID: kind + ":" + sc.ID, Workspace: sc.Tenant, Recipient: sc.CreatedBy,
			Kind: kind, Title: fmt.Sprintf("Scorecard %s %s", sc.ID, verb), Body: clip(body, 500), Link: eval.LinkTo(eval.ResourceScorecard, sc.ID).JSON()})
		return err
	})
}
