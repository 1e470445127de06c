package sqlstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"svc/internal/platform/derrors"
	"svc/store"
)

// defaultEventLimit is ListEvents' page size when the filter sets none.
const defaultEventLimit = 100

// NewEventID returns a fresh event id, "evt_" and 32 hex digits.
func NewEventID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand documents it)
	return "evt_" + hex.EncodeToString(b)
}

// AppendEvent appends e, once per ID; see store.Events.
func (o ops) AppendEvent(ctx context.Context, e store.Event) (_ store.Event, err error) {
	defer derrors.Wrap(&err, "%s.AppendEvent(ctx, %q)", o.kind, e.ID)
	if e.Workspace == "" || e.Type == "" {
		return store.Event{}, derrors.Invalidf("an event needs a workspace and a type")
	}
	if len(e.Data) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, e.Data); err != nil {
			return store.Event{}, derrors.Invalidf("event data is not JSON: %v", err)
		}
		e.Data = buf.Bytes()
	}
	if e.ID == "" {
		e.ID = NewEventID()
	}
	if err := checkText(e.ID, e.Workspace, e.Type, e.Subject, e.Actor, e.CausedBy); err != nil {
		return store.Event{}, err
	}
	e.Seq = 0 // assigned by the database; the doc's copy is ignored on read
	e.CreatedAt = normTime(e.CreatedAt)
	doc, err := json.Marshal(e)
	if err != nil {
		return store.Event{}, err
	}
	if err := checkDoc(doc); err != nil {
		return store.Event{}, err
	}
	if o.d.EventLockSQL() == "" {
		return o.insertEvent(ctx, e, doc)
	}
	// The lock is held from before seq is drawn until commit, so appends
	// commit in seq order. An autocommit append gets a transaction of its
	// own, since the lock ends with the transaction.
	var out store.Event
	err = o.atomic(ctx, func(o ops) error {
		if !o.tx.eventLocked {
			if _, err := o.w.ExecContext(ctx, o.d.EventLockSQL()); err != nil {
				return fmt.Errorf("take the event lock: %w", o.mapErr(err))
			}
			o.tx.eventLocked = true
		}
		var err error
		out, err = o.insertEvent(ctx, e, doc)
		return err
	})
	if err != nil {
		return store.Event{}, err
	}
	return out, nil
}

// insertEvent inserts e (its document doc) unless its id is logged, and
// returns what is stored.
func (o ops) insertEvent(ctx context.Context, e store.Event, doc []byte) (store.Event, error) {
	err := o.w.QueryRowContext(ctx,
		`INSERT INTO events (id, workspace, type, subject, created_at, doc)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (id) DO NOTHING
		RETURNING seq`,
		e.ID, e.Workspace, e.Type, e.Subject, o.d.TimeArg(e.CreatedAt), string(doc)).Scan(&e.Seq)
	if err == nil {
		return e, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return store.Event{}, o.mapErr(err)
	}
	// No row: the id is already logged. Return the stored event, so a
	// retrying outbox sees what the first attempt wrote.
	var stored store.Event
	var sdoc []byte
	if err := o.w.QueryRowContext(ctx, `SELECT seq, doc FROM events WHERE id = $1`, e.ID).Scan(&stored.Seq, &sdoc); err != nil {
		return store.Event{}, o.mapErr(err)
	}
	if err := decodeEvent(sdoc, &stored); err != nil {
		return store.Event{}, err
	}
	if stored.Workspace != e.Workspace {
		// Never hand one tenant's event to another.
		return store.Event{}, derrors.Conflictf("event id %q is taken", e.ID)
	}
	return stored, nil
}

// ListEvents returns a workspace's events in Seq order; see store.Events.
func (o ops) ListEvents(ctx context.Context, f store.EventFilter) (_ []store.Event, err error) {
	defer derrors.Wrap(&err, "%s.ListEvents(ctx, %q)", o.kind, f.Workspace)
	if f.Workspace == "" {
		return nil, derrors.Invalidf("listing events needs a workspace")
	}
	if err := checkText(f.Workspace, f.Type); err != nil {
		return nil, err
	}
	if f.Limit < 0 {
		return nil, derrors.Invalidf("limit %d is negative", f.Limit)
	}
	if f.Limit == 0 {
		f.Limit = defaultEventLimit
	}
	if f.BeforeSeq < 0 {
		return nil, derrors.Invalidf("before %d is negative", f.BeforeSeq)
	}
	q := `SELECT seq, doc FROM events WHERE workspace = $1`
	args := []any{f.Workspace}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	switch {
	case f.Type != "":
		q += ` AND type = ` + arg(f.Type)
	case f.TypeGlob != "":
		if err := checkText(f.TypeGlob); err != nil {
			return nil, err
		}
		q += ` AND type LIKE ` + arg(globToLike(f.TypeGlob)) + ` ESCAPE '\'`
	}
	if f.AfterSeq > 0 {
		q += ` AND seq > ` + arg(f.AfterSeq)
	}
	if f.BeforeSeq > 0 {
		q += ` AND seq < ` + arg(f.BeforeSeq)
	}
	if !f.Since.IsZero() {
		q += ` AND created_at >= ` + arg(o.d.TimeArg(normTime(f.Since)))
	}
	if f.Newest {
		q += ` ORDER BY seq DESC`
	} else {
		q += ` ORDER BY seq`
	}
	q += ` LIMIT ` + arg(f.Limit)
	rows, err := o.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, o.mapErr(err)
	}
	defer rows.Close()
	es := []store.Event{}
	for rows.Next() {
		var e store.Event
		var doc []byte
		if err := rows.Scan(&e.Seq, &doc); err != nil {
			return nil, err
		}
		if err := decodeEvent(doc, &e); err != nil {
			return nil, err
		}
		es = append(es, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return es, nil
}

// globToLike turns a type pattern ('*' any run of characters) into a LIKE
// pattern with '\\' as its escape.
func globToLike(glob string) string {
	var b strings.Builder
	for _, r := range glob {
		switch r {
		case '*':
			b.WriteByte('%')
		case '%', '_', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// decodeEvent fills e from its stored document, keeping e.Seq (the column
// is the truth; the document holds 0).
func decodeEvent(doc []byte, e *store.Event) error {
	seq := e.Seq
	if err := json.Unmarshal(doc, e); err != nil {
		return fmt.Errorf("decode event: %w", err)
	}
	e.Seq = seq
	return nil
}
