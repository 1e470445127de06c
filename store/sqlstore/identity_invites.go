package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"svc/internal/platform/derrors"
	"svc/store"
)

// inviteDoc is the document of an invites row: only what no column holds
// (see apiKeyDoc).
type inviteDoc struct {
	Role      string `json:"role"`
	CreatedBy string `json:"createdBy,omitempty"`
}

const inviteColumns = `id, workspace, hash, expires_at, revoked_at, accepted_count, created_at, doc`

func scanInvite(r rowScanner) (store.Invite, error) {
	var inv store.Invite
	var expires, revoked, created dbTime
	var doc []byte
	if err := r.Scan(&inv.ID, &inv.Workspace, &inv.Hash, &expires, &revoked, &inv.AcceptedCount, &created, &doc); err != nil {
		return store.Invite{}, err
	}
	var d inviteDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return store.Invite{}, fmt.Errorf("decode invite: %w", err)
	}
	inv.Role, inv.CreatedBy = d.Role, d.CreatedBy
	inv.ExpiresAt, inv.CreatedAt = expires.Time, created.Time
	if revoked.Valid {
		inv.RevokedAt = &revoked.Time
	}
	return inv, nil
}

// CreateInvite inserts an invite; see store.Identity.
func (o ops) CreateInvite(ctx context.Context, inv store.Invite) (_ store.Invite, err error) {
	defer derrors.Wrap(&err, "%s.CreateInvite(ctx, %q)", o.kind, inv.ID)
	if err := required("invite id", inv.ID, "workspace", inv.Workspace, "role", inv.Role); err != nil {
		return store.Invite{}, err
	}
	if err := checkHash(inv.Hash); err != nil {
		return store.Invite{}, err
	}
	if err := checkText(inv.ID, inv.Workspace); err != nil {
		return store.Invite{}, err
	}
	if inv.ExpiresAt.IsZero() {
		return store.Invite{}, derrors.Invalidf("an invite needs an expiry")
	}
	if inv.AcceptedCount < 0 {
		return store.Invite{}, derrors.Invalidf("acceptedCount %d is negative", inv.AcceptedCount)
	}
	inv.Hash = append([]byte(nil), inv.Hash...)
	inv.ExpiresAt = normTime(inv.ExpiresAt)
	inv.CreatedAt = normTime(inv.CreatedAt)
	var revoked any // NULL
	if inv.RevokedAt != nil {
		r := normTime(*inv.RevokedAt)
		inv.RevokedAt, revoked = &r, o.d.TimeArg(r)
	}
	doc, err := marshalDoc(inviteDoc{Role: inv.Role, CreatedBy: inv.CreatedBy})
	if err != nil {
		return store.Invite{}, err
	}
	ok, err := o.insertOnce(ctx,
		`INSERT INTO invites (`+inviteColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
		inv.ID, inv.Workspace, inv.Hash, o.d.TimeArg(inv.ExpiresAt), revoked, inv.AcceptedCount, o.d.TimeArg(inv.CreatedAt), doc)
	if err != nil {
		return store.Invite{}, err
	}
	if !ok {
		return store.Invite{}, derrors.Conflictf("invite %q or its hash already exists", inv.ID)
	}
	return inv, nil
}

// InviteByHash returns the invite with hash, in any workspace; see store.Identity.
func (o ops) InviteByHash(ctx context.Context, hash []byte) (_ store.Invite, err error) {
	defer derrors.Wrap(&err, "%s.InviteByHash(ctx, <hash>)", o.kind)
	inv, err := scanInvite(o.r.QueryRowContext(ctx, `SELECT `+inviteColumns+` FROM invites WHERE hash = $1`, hash))
	if err = o.found(err, "invite"); err != nil {
		return store.Invite{}, err
	}
	return inv, nil
}

// ListInvites returns a workspace's active invites, oldest first; see store.Identity.
func (o ops) ListInvites(ctx context.Context, workspace string, now time.Time) (_ []store.Invite, err error) {
	defer derrors.Wrap(&err, "%s.ListInvites(ctx, %q, %v)", o.kind, workspace, now)
	if err := checkText(workspace); err != nil {
		return nil, err
	}
	return queryList(ctx, o, scanInvite,
		`SELECT `+inviteColumns+` FROM invites
		WHERE workspace = $1 AND revoked_at IS NULL AND expires_at > $2
		ORDER BY created_at, id`,
		workspace, o.d.TimeArg(normTime(now)))
}

// RevokeInvite marks an invite revoked; see store.Identity.
func (o ops) RevokeInvite(ctx context.Context, workspace, id string, at time.Time) (err error) {
	defer derrors.Wrap(&err, "%s.RevokeInvite(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return err
	}
	// coalesce: revoking twice keeps the first time.
	res, err := o.w.ExecContext(ctx,
		`UPDATE invites SET revoked_at = coalesce(revoked_at, $3) WHERE workspace = $1 AND id = $2`,
		workspace, id, o.d.TimeArg(normTime(at)))
	if err != nil {
		return o.mapErr(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return derrors.NotFoundf("invite %q of workspace %q", id, workspace)
	}
	return nil
}

// CountInviteAcceptance increments an invite's acceptedCount; see store.Identity.
func (o ops) CountInviteAcceptance(ctx context.Context, id string) (err error) {
	defer derrors.Wrap(&err, "%s.CountInviteAcceptance(ctx, %q)", o.kind, id)
	if err := checkText(id); err != nil {
		return err
	}
	// In SQL, not read-then-write: concurrent acceptances all count.
	res, err := o.w.ExecContext(ctx, `UPDATE invites SET accepted_count = accepted_count + 1 WHERE id = $1`, id)
	if err != nil {
		return o.mapErr(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return derrors.NotFoundf("invite %q", id)
	}
	return nil
}
