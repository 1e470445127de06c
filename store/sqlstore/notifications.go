package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"svc/internal/platform/derrors"
	"svc/store"
)

// defaultNotificationLimit is ListNotifications' page size when the caller sets none.
const defaultNotificationLimit = 50

// notificationColumns are the columns scanNotification reads, in its order.
const notificationColumns = `workspace, id, recipient, kind, title, body, link, created_at, read_at`

// scanNotification reads a row of notificationColumns.
func scanNotification(r rowScanner) (store.Notification, error) {
	var n store.Notification
	var link []byte
	var created, read dbTime
	if err := r.Scan(&n.Workspace, &n.ID, &n.Recipient, &n.Kind, &n.Title, &n.Body, &link, &created, &read); err != nil {
		return store.Notification{}, err
	}
	if len(link) > 0 {
		n.Link = json.RawMessage(link)
	}
	n.CreatedAt = created.Time
	if read.Valid {
		n.ReadAt = &read.Time
	}
	return n, nil
}

// AddNotification inserts n once per id; see store.Notifications.
func (o ops) AddNotification(ctx context.Context, n store.Notification) (_ store.Notification, _ bool, err error) {
	defer derrors.Wrap(&err, "%s.AddNotification(ctx, %q, %q)", o.kind, n.Workspace, n.ID)
	if err := required("workspace", n.Workspace, "notification id", n.ID, "recipient", n.Recipient, "kind", n.Kind, "title", n.Title); err != nil {
		return store.Notification{}, false, err
	}
	if err := checkText(n.Workspace, n.ID, n.Recipient, n.Kind, n.Title, n.Body); err != nil {
		return store.Notification{}, false, err
	}
	var link any
	if len(n.Link) > 0 {
		if err := checkJSON("link", n.Link); err != nil {
			return store.Notification{}, false, err
		}
		n.Link = append(json.RawMessage(nil), n.Link...)
		link = string(n.Link)
	}
	n.CreatedAt = normTime(n.CreatedAt)
	var readAt any
	if n.ReadAt != nil {
		r := normTime(*n.ReadAt)
		n.ReadAt = &r
		readAt = o.d.TimeArg(r)
	}
	// The notification and its deliveries to the recipient's channels are
	// stored together, or neither is.
	var ok bool
	err = o.atomic(ctx, func(o ops) (err error) {
		ok, err = o.insertOnce(ctx,
			`INSERT INTO notifications (`+notificationColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (workspace, id) DO NOTHING`,
			n.Workspace, n.ID, n.Recipient, n.Kind, n.Title, n.Body, link, o.d.TimeArg(n.CreatedAt), readAt)
		if err != nil || !ok {
			return err
		}
		return o.queueDeliveries(ctx, n)
	})
	if err != nil {
		return store.Notification{}, false, err
	}
	if ok {
		return n, true, nil
	}
	// The id is taken: a retried writer gets what the first attempt stored.
	stored, err := scanNotification(o.w.QueryRowContext(ctx,
		`SELECT `+notificationColumns+` FROM notifications WHERE workspace = $1 AND id = $2`, n.Workspace, n.ID))
	if errors.Is(err, sql.ErrNoRows) {
		// Deleted between the two statements: as if it had never been.
		return store.Notification{}, false, derrors.Conflictf("notification %q was deleted while being added", n.ID)
	}
	if err != nil {
		return store.Notification{}, false, o.mapErr(err)
	}
	return stored, false, nil
}

// ListNotifications returns a recipient's feed newest first; see store.Notifications.
func (o ops) ListNotifications(ctx context.Context, workspace, recipient string, unreadOnly bool, limit int) (_ []store.Notification, err error) {
	defer derrors.Wrap(&err, "%s.ListNotifications(ctx, %q, %q, unread %t, limit %d)", o.kind, workspace, recipient, unreadOnly, limit)
	if err := required("workspace", workspace, "recipient", recipient); err != nil {
		return nil, err
	}
	if err := checkText(workspace, recipient); err != nil {
		return nil, err
	}
	limit, err = checkPage(time.Time{}, "", limit, defaultNotificationLimit)
	if err != nil {
		return nil, err
	}
	q := `SELECT ` + notificationColumns + ` FROM notifications WHERE workspace = $1 AND recipient = $2`
	if unreadOnly {
		q += ` AND read_at IS NULL`
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT $3`
	return queryList(ctx, o, scanNotification, q, workspace, recipient, limit)
}

// MarkNotificationsRead marks a recipient's unread notifications read; see store.Notifications.
func (o ops) MarkNotificationsRead(ctx context.Context, workspace, recipient string, ids []string, all bool, at time.Time) (_ int, err error) {
	defer derrors.Wrap(&err, "%s.MarkNotificationsRead(ctx, %q, %q, %d ids, all %t)", o.kind, workspace, recipient, len(ids), all)
	if err := required("workspace", workspace, "recipient", recipient); err != nil {
		return 0, err
	}
	if err := checkText(workspace, recipient); err != nil {
		return 0, err
	}
	if err := checkText(ids...); err != nil {
		return 0, err
	}
	atArg := o.d.TimeArg(normTime(at))
	// The recipient and read_at conditions are what make a foreign or
	// already-read id a no-op, and a repeated mark count nothing.
	const update = `UPDATE notifications SET read_at = $3 WHERE workspace = $1 AND recipient = $2 AND read_at IS NULL`
	if all {
		return o.execCount(ctx, update, workspace, recipient, atArg)
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	if len(ids) == 0 {
		return 0, nil
	}
	total := 0
	err = o.atomicIf(ctx, len(ids) > listChunk, func(o ops) error {
		for chunk := range slices.Chunk(ids, listChunk) {
			args := sqlArgs{workspace, recipient, atArg}
			ph := make([]string, len(chunk))
			for i, id := range chunk {
				ph[i] = args.add(id)
			}
			n, err := o.execCount(ctx, update+` AND id IN (`+strings.Join(ph, ", ")+`)`, args...)
			if err != nil {
				return err
			}
			total += n
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return total, nil
}

// execCount runs a statement and returns how many rows it changed.
func (o ops) execCount(ctx context.Context, query string, args ...any) (int, error) {
	res, err := o.w.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, o.mapErr(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("rows affected: %w", err)
	}
	return int(n), nil
}

// DeleteNotification removes one notification; see store.Notifications.
func (o ops) DeleteNotification(ctx context.Context, workspace, id string) (err error) {
	defer derrors.Wrap(&err, "%s.DeleteNotification(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return err
	}
	if _, err := o.w.ExecContext(ctx, `DELETE FROM notifications WHERE workspace = $1 AND id = $2`, workspace, id); err != nil {
		return o.mapErr(err)
	}
	return nil
}
