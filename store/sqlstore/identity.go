package sqlstore

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	"svc/internal/platform/derrors"
)

// This file holds the row helpers the identity tables introduced and the
// other tables reuse; the identity records themselves are in
// identity_keys.go, identity_members.go, identity_invites.go and
// identity_teams.go (workspaces are in workspaces.go).

// marshalDoc encodes a record's document and refuses what jsonb cannot hold.
func marshalDoc(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	if err := checkDoc(b); err != nil {
		return "", err
	}
	return string(b), nil
}

// dbTime scans a time column of either backend: timestamptz arrives as a
// time.Time, SQLite's TEXT as a string in the fixed-width RFC 3339 form.
// NULL leaves Valid false.
type dbTime struct {
	Time  time.Time
	Valid bool
}

// Scan implements sql.Scanner.
func (t *dbTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*t = dbTime{}
		return nil
	case time.Time:
		*t = dbTime{Time: v.UTC(), Valid: true}
		return nil
	case string:
		return t.parse(v)
	case []byte:
		return t.parse(string(v))
	}
	return fmt.Errorf("scan time: unsupported type %T", src)
}

func (t *dbTime) parse(s string) error {
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("scan time: %w", err)
	}
	*t = dbTime{Time: v.UTC(), Valid: true}
	return nil
}

// checkHash refuses a hash that is not a SHA-256: a caller passing the hex
// text or the plaintext by mistake would otherwise store a key nobody can use.
func checkHash(h []byte) error {
	if len(h) != sha256.Size {
		return derrors.Invalidf("hash is %d bytes, want a %d-byte SHA-256", len(h), sha256.Size)
	}
	return nil
}

// required refuses empty values; names and values alternate.
func required(nameValues ...string) error {
	for i := 0; i+1 < len(nameValues); i += 2 {
		if nameValues[i+1] == "" {
			return derrors.Invalidf("%s is required", nameValues[i])
		}
	}
	return nil
}

// rowScanner is what *sql.Row and *sql.Rows have in common.
type rowScanner interface {
	Scan(dest ...any) error
}

// queryList runs query and appends one record per row, read by scan.
func queryList[T any](ctx context.Context, o ops, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := o.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, o.mapErr(err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// insertOnce runs an INSERT ... ON CONFLICT DO NOTHING and reports whether
// it inserted. DO NOTHING rather than a failing INSERT: on PostgreSQL an
// error aborts the whole transaction, and a caller inside Transact must be
// able to see ErrConflict and carry on, as it can on SQLite.
func (o ops) insertOnce(ctx context.Context, query string, args ...any) (bool, error) {
	res, err := o.w.ExecContext(ctx, query, args...)
	if err != nil {
		return false, o.mapErr(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	return n > 0, nil
}
