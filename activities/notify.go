package activities

import (
	"context"

	"svc/internal/domain/eval"
	"svc/store"
)

// addNotice stores n in workspace ws's feed inside tx (once per n.ID); the
// store queues it, in the same transaction, for the recipient's delivery
// channels subscribed to its kind.
func addNotice(ctx context.Context, tx store.Tx, ws string, n eval.Notice) error {
	_, _, err := tx.AddNotification(ctx, NoticeRow(ws, n))
	return err
}

// NoticeRow is n as the store keeps it in workspace ws.
func NoticeRow(ws string, n eval.Notice) store.Notification {
	row := store.Notification{ID: n.ID, Workspace: ws, Recipient: n.Recipient, Kind: n.Kind, Title: n.Title, Body: n.Body}
	if n.Link != (eval.NotificationLink{}) {
		row.Link = n.Link.JSON()
	}
	return row
}
