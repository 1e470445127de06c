package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"svc/derrors"
	"svc/store"
)

// roleAdmin is the role CountAdmins counts.
const roleAdmin = "admin"

// The documents of the identity tables hold only what no column holds, so a
// value is never stored twice and cannot disagree with itself.
type (
	apiKeyDoc struct {
		Label     string   `json:"label,omitempty"`
		Prefix    string   `json:"prefix"`
		Roles     []string `json:"roles"`
		Scopes    []string `json:"scopes,omitempty"`
		CreatedBy string   `json:"createdBy,omitempty"`
	}
	memberDoc struct {
		Email string `json:"email,omitempty"`
	}
	memberRemovalDoc struct {
		RemovedBy string `json:"removedBy,omitempty"`
	}
	inviteDoc struct {
		Role      string `json:"role"`
		CreatedBy string `json:"createdBy,omitempty"`
	}
	teamDoc struct {
		Name      string `json:"name"`
		Private   bool   `json:"private"`
		CreatedBy string `json:"createdBy,omitempty"`
	}
)

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

// API keys.

const apiKeyColumns = `id, workspace, subject, hash, kind, created_at, doc`

func scanAPIKey(r rowScanner) (store.APIKey, error) { return scanAPIKeyWith(r) }

// scanAPIKeyWith reads apiKeyColumns followed by the extra columns of a
// join into extra.
func scanAPIKeyWith(r rowScanner, extra ...any) (store.APIKey, error) {
	var k store.APIKey
	var created dbTime
	var doc []byte
	if err := r.Scan(append([]any{&k.ID, &k.Workspace, &k.Subject, &k.Hash, &k.Kind, &created, &doc}, extra...)...); err != nil {
		return store.APIKey{}, err
	}
	var d apiKeyDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return store.APIKey{}, fmt.Errorf("decode api key: %w", err)
	}
	k.Label, k.Prefix, k.Roles, k.Scopes, k.CreatedBy = d.Label, d.Prefix, d.Roles, d.Scopes, d.CreatedBy
	k.CreatedAt = created.Time
	return k, nil
}

// CreateAPIKey inserts k; see store.Identity.
func (o ops) CreateAPIKey(ctx context.Context, k store.APIKey) (_ store.APIKey, err error) {
	defer derrors.Wrap(&err, "%s.CreateAPIKey(ctx, %q)", o.kind, k.ID)
	if err := required("api key id", k.ID, "workspace", k.Workspace, "subject", k.Subject, "kind", k.Kind); err != nil {
		return store.APIKey{}, err
	}
	if err := checkHash(k.Hash); err != nil {
		return store.APIKey{}, err
	}
	if err := checkText(k.ID, k.Workspace, k.Subject, k.Kind); err != nil {
		return store.APIKey{}, err
	}
	if len(k.Scopes) == 0 {
		k.Scopes = nil // omitted from the document, so nil on the way back
	}
	k.Hash = append([]byte(nil), k.Hash...)
	k.CreatedAt = normTime(k.CreatedAt)
	doc, err := marshalDoc(apiKeyDoc{Label: k.Label, Prefix: k.Prefix, Roles: k.Roles, Scopes: k.Scopes, CreatedBy: k.CreatedBy})
	if err != nil {
		return store.APIKey{}, err
	}
	// No conflict target: a duplicate id and a duplicate hash are both
	// conflicts.
	ok, err := o.insertOnce(ctx,
		`INSERT INTO api_keys (`+apiKeyColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
		k.ID, k.Workspace, k.Subject, k.Hash, k.Kind, o.d.TimeArg(k.CreatedAt), doc)
	if err != nil {
		return store.APIKey{}, err
	}
	if !ok {
		return store.APIKey{}, derrors.Conflictf("api key %q or its hash already exists", k.ID)
	}
	return k, nil
}

// APIKeyByHash returns the key with hash; see store.Identity.
func (o ops) APIKeyByHash(ctx context.Context, hash []byte) (_ store.APIKey, err error) {
	// Never the hash itself in the error: it is as good as a password to
	// anyone holding a rainbow table of short keys.
	defer derrors.Wrap(&err, "%s.APIKeyByHash(ctx, <hash>)", o.kind)
	k, err := scanAPIKey(o.r.QueryRowContext(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE hash = $1`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return store.APIKey{}, derrors.NotFoundf("api key")
	}
	if err != nil {
		return store.APIKey{}, o.mapErr(err)
	}
	return k, nil
}

// apiKeyGrantQuery reads a key by hash with its subject's membership and,
// for a subject key:<id>, the owning key of the same workspace.
var apiKeyGrantQuery = `SELECT k.id, k.workspace, k.subject, k.hash, k.kind, k.created_at, k.doc, m.role, own.doc
	FROM api_keys k
	LEFT JOIN members m ON m.workspace = k.workspace AND m.subject = k.subject
	LEFT JOIN api_keys own ON substr(k.subject, 1, ` + strconv.Itoa(len(store.KeySubjectPrefix)) + `) = '` + store.KeySubjectPrefix + `'
		AND own.id = substr(k.subject, ` + strconv.Itoa(len(store.KeySubjectPrefix)+1) + `) AND own.workspace = k.workspace
	WHERE k.hash = $1`

// APIKeyGrantByHash returns the key with hash and its owner's standing; see
// store.Identity. One statement: authentication costs one indexed read. The
// members join uses the primary key (workspace, subject); the owner-key join
// the primary key id, and only for subjects of the form key:<id>.
func (o ops) APIKeyGrantByHash(ctx context.Context, hash []byte) (_ store.APIKeyGrant, err error) {
	defer derrors.Wrap(&err, "%s.APIKeyGrantByHash(ctx, <hash>)", o.kind)
	var g store.APIKeyGrant
	var memberRole sql.NullString
	var ownerDoc []byte
	g.Key, err = scanAPIKeyWith(o.r.QueryRowContext(ctx, apiKeyGrantQuery, hash), &memberRole, &ownerDoc)
	if errors.Is(err, sql.ErrNoRows) {
		return store.APIKeyGrant{}, derrors.NotFoundf("api key")
	}
	if err != nil {
		return store.APIKeyGrant{}, o.mapErr(err)
	}
	g.MemberRole = memberRole.String
	if ownerDoc != nil {
		var d apiKeyDoc
		if err := json.Unmarshal(ownerDoc, &d); err != nil {
			return store.APIKeyGrant{}, fmt.Errorf("decode owner key: %w", err)
		}
		g.OwnerKeyFound, g.OwnerKeyRoles = true, d.Roles
	}
	return g, nil
}

// ListAPIKeys returns a workspace's keys, oldest first; see store.Identity.
func (o ops) ListAPIKeys(ctx context.Context, workspace string) (_ []store.APIKey, err error) {
	defer derrors.Wrap(&err, "%s.ListAPIKeys(ctx, %q)", o.kind, workspace)
	if err := checkText(workspace); err != nil {
		return nil, err
	}
	return queryList(ctx, o, scanAPIKey,
		`SELECT `+apiKeyColumns+` FROM api_keys WHERE workspace = $1 ORDER BY created_at, id`, workspace)
}

// DeleteAPIKey deletes a key of the workspace; see store.Identity.
func (o ops) DeleteAPIKey(ctx context.Context, workspace, id string) (err error) {
	defer derrors.Wrap(&err, "%s.DeleteAPIKey(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return err
	}
	if _, err := o.w.ExecContext(ctx, `DELETE FROM api_keys WHERE workspace = $1 AND id = $2`, workspace, id); err != nil {
		return o.mapErr(err)
	}
	return nil
}

// Members.

const memberColumns = `workspace, subject, role, added_at, doc`

func scanMember(r rowScanner) (store.Member, error) {
	var m store.Member
	var added dbTime
	var doc []byte
	if err := r.Scan(&m.Workspace, &m.Subject, &m.Role, &added, &doc); err != nil {
		return store.Member{}, err
	}
	var d memberDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return store.Member{}, fmt.Errorf("decode member: %w", err)
	}
	m.Email = d.Email
	m.AddedAt = added.Time
	return m, nil
}

// prepareMember validates m and returns it normalised with its document.
func prepareMember(m store.Member) (store.Member, string, error) {
	if err := required("workspace", m.Workspace, "subject", m.Subject, "role", m.Role); err != nil {
		return store.Member{}, "", err
	}
	if err := checkText(m.Workspace, m.Subject, m.Role); err != nil {
		return store.Member{}, "", err
	}
	m.AddedAt = normTime(m.AddedAt)
	doc, err := marshalDoc(memberDoc{Email: m.Email})
	return m, doc, err
}

// PutMember inserts or updates a membership; see store.Identity.
func (o ops) PutMember(ctx context.Context, m store.Member) (_ store.Member, err error) {
	defer derrors.Wrap(&err, "%s.PutMember(ctx, %q, %q)", o.kind, m.Workspace, m.Subject)
	m, doc, err := prepareMember(m)
	if err != nil {
		return store.Member{}, err
	}
	got, err := scanMember(o.w.QueryRowContext(ctx,
		`INSERT INTO members (`+memberColumns+`) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (workspace, subject) DO UPDATE SET role = excluded.role, doc = excluded.doc
		RETURNING `+memberColumns,
		m.Workspace, m.Subject, m.Role, o.d.TimeArg(m.AddedAt), doc))
	if err != nil {
		return store.Member{}, o.mapErr(err)
	}
	return got, nil
}

// EnsureMember inserts m unless the subject is a member; see store.Identity.
func (o ops) EnsureMember(ctx context.Context, m store.Member) (_ store.Member, err error) {
	defer derrors.Wrap(&err, "%s.EnsureMember(ctx, %q, %q)", o.kind, m.Workspace, m.Subject)
	m, doc, err := prepareMember(m)
	if err != nil {
		return store.Member{}, err
	}
	// An update that changes nothing, rather than DO NOTHING, so that
	// RETURNING yields the stored row in the same statement.
	got, err := scanMember(o.w.QueryRowContext(ctx,
		`INSERT INTO members (`+memberColumns+`) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (workspace, subject) DO UPDATE SET role = members.role
		RETURNING `+memberColumns,
		m.Workspace, m.Subject, m.Role, o.d.TimeArg(m.AddedAt), doc))
	if err != nil {
		return store.Member{}, o.mapErr(err)
	}
	return got, nil
}

// GetMember returns one membership; see store.Identity.
func (o ops) GetMember(ctx context.Context, workspace, subject string) (_ store.Member, err error) {
	defer derrors.Wrap(&err, "%s.GetMember(ctx, %q, %q)", o.kind, workspace, subject)
	if err := checkText(workspace, subject); err != nil {
		return store.Member{}, err
	}
	m, err := scanMember(o.r.QueryRowContext(ctx,
		`SELECT `+memberColumns+` FROM members WHERE workspace = $1 AND subject = $2`, workspace, subject))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Member{}, derrors.NotFoundf("member %q of workspace %q", subject, workspace)
	}
	if err != nil {
		return store.Member{}, o.mapErr(err)
	}
	return m, nil
}

// ListMembers returns a workspace's members by subject; see store.Identity.
func (o ops) ListMembers(ctx context.Context, workspace string) (_ []store.Member, err error) {
	defer derrors.Wrap(&err, "%s.ListMembers(ctx, %q)", o.kind, workspace)
	if err := checkText(workspace); err != nil {
		return nil, err
	}
	return queryList(ctx, o, scanMember,
		`SELECT `+memberColumns+` FROM members WHERE workspace = $1 ORDER BY subject`, workspace)
}

// ListMemberships returns a subject's memberships by workspace; see store.Identity.
func (o ops) ListMemberships(ctx context.Context, subject string) (_ []store.Member, err error) {
	defer derrors.Wrap(&err, "%s.ListMemberships(ctx, %q)", o.kind, subject)
	if err := checkText(subject); err != nil {
		return nil, err
	}
	return queryList(ctx, o, scanMember,
		`SELECT `+memberColumns+` FROM members WHERE subject = $1 ORDER BY workspace`, subject)
}

// DeleteMember removes a membership and its team memberships; see store.Identity.
func (o ops) DeleteMember(ctx context.Context, workspace, subject string) (err error) {
	defer derrors.Wrap(&err, "%s.DeleteMember(ctx, %q, %q)", o.kind, workspace, subject)
	if err := checkText(workspace, subject); err != nil {
		return err
	}
	return o.atomic(ctx, func(o ops) error {
		if _, err := o.w.ExecContext(ctx, `DELETE FROM team_members WHERE workspace = $1 AND subject = $2`, workspace, subject); err != nil {
			return o.mapErr(err)
		}
		if _, err := o.w.ExecContext(ctx, `DELETE FROM members WHERE workspace = $1 AND subject = $2`, workspace, subject); err != nil {
			return o.mapErr(err)
		}
		return nil
	})
}

// CountAdmins counts a workspace's admins; see store.Identity.
func (o ops) CountAdmins(ctx context.Context, workspace string) (_ int, err error) {
	defer derrors.Wrap(&err, "%s.CountAdmins(ctx, %q)", o.kind, workspace)
	if err := checkText(workspace); err != nil {
		return 0, err
	}
	var n int
	if err := o.r.QueryRowContext(ctx,
		`SELECT count(*) FROM members WHERE workspace = $1 AND role = $2`, workspace, roleAdmin).Scan(&n); err != nil {
		return 0, o.mapErr(err)
	}
	return n, nil
}

// Member removals.

// PutMemberRemoval records a removal; see store.Identity.
func (o ops) PutMemberRemoval(ctx context.Context, r store.MemberRemoval) (err error) {
	defer derrors.Wrap(&err, "%s.PutMemberRemoval(ctx, %q, %q)", o.kind, r.Workspace, r.Subject)
	if err := required("workspace", r.Workspace, "subject", r.Subject); err != nil {
		return err
	}
	if err := checkText(r.Workspace, r.Subject); err != nil {
		return err
	}
	doc, err := marshalDoc(memberRemovalDoc{RemovedBy: r.RemovedBy})
	if err != nil {
		return err
	}
	if _, err := o.w.ExecContext(ctx,
		`INSERT INTO member_removals (workspace, subject, removed_at, doc) VALUES ($1, $2, $3, $4)
		ON CONFLICT (workspace, subject) DO UPDATE SET removed_at = excluded.removed_at, doc = excluded.doc`,
		r.Workspace, r.Subject, o.d.TimeArg(normTime(r.RemovedAt)), doc); err != nil {
		return o.mapErr(err)
	}
	return nil
}

// GetMemberRemoval returns a removal record; see store.Identity.
func (o ops) GetMemberRemoval(ctx context.Context, workspace, subject string) (_ store.MemberRemoval, err error) {
	defer derrors.Wrap(&err, "%s.GetMemberRemoval(ctx, %q, %q)", o.kind, workspace, subject)
	if err := checkText(workspace, subject); err != nil {
		return store.MemberRemoval{}, err
	}
	r := store.MemberRemoval{Workspace: workspace, Subject: subject}
	var removed dbTime
	var doc []byte
	err = o.r.QueryRowContext(ctx,
		`SELECT removed_at, doc FROM member_removals WHERE workspace = $1 AND subject = $2`, workspace, subject).Scan(&removed, &doc)
	if errors.Is(err, sql.ErrNoRows) {
		return store.MemberRemoval{}, derrors.NotFoundf("removal of %q from workspace %q", subject, workspace)
	}
	if err != nil {
		return store.MemberRemoval{}, o.mapErr(err)
	}
	var d memberRemovalDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return store.MemberRemoval{}, fmt.Errorf("decode member removal: %w", err)
	}
	r.RemovedBy, r.RemovedAt = d.RemovedBy, removed.Time
	return r, nil
}

// DeleteMemberRemoval forgets a removal; see store.Identity.
func (o ops) DeleteMemberRemoval(ctx context.Context, workspace, subject string) (err error) {
	defer derrors.Wrap(&err, "%s.DeleteMemberRemoval(ctx, %q, %q)", o.kind, workspace, subject)
	if err := checkText(workspace, subject); err != nil {
		return err
	}
	if _, err := o.w.ExecContext(ctx, `DELETE FROM member_removals WHERE workspace = $1 AND subject = $2`, workspace, subject); err != nil {
		return o.mapErr(err)
	}
	return nil
}

// Invites.

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
	if errors.Is(err, sql.ErrNoRows) {
		return store.Invite{}, derrors.NotFoundf("invite")
	}
	if err != nil {
		return store.Invite{}, o.mapErr(err)
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

// Teams.

const teamColumns = `workspace, id, doc, created_at`

func scanTeam(r rowScanner) (store.Team, error) {
	var t store.Team
	var created dbTime
	var doc []byte
	if err := r.Scan(&t.Workspace, &t.ID, &doc, &created); err != nil {
		return store.Team{}, err
	}
	var d teamDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return store.Team{}, fmt.Errorf("decode team: %w", err)
	}
	t.Name, t.Private, t.CreatedBy = d.Name, d.Private, d.CreatedBy
	t.CreatedAt = created.Time
	return t, nil
}

// CreateTeam inserts a team; see store.Identity.
func (o ops) CreateTeam(ctx context.Context, t store.Team) (_ store.Team, err error) {
	defer derrors.Wrap(&err, "%s.CreateTeam(ctx, %q, %q)", o.kind, t.Workspace, t.ID)
	if err := required("workspace", t.Workspace, "team id", t.ID); err != nil {
		return store.Team{}, err
	}
	if err := checkText(t.Workspace, t.ID); err != nil {
		return store.Team{}, err
	}
	t.CreatedAt = normTime(t.CreatedAt)
	doc, err := marshalDoc(teamDoc{Name: t.Name, Private: t.Private, CreatedBy: t.CreatedBy})
	if err != nil {
		return store.Team{}, err
	}
	ok, err := o.insertOnce(ctx,
		`INSERT INTO teams (`+teamColumns+`) VALUES ($1, $2, $3, $4) ON CONFLICT (workspace, id) DO NOTHING`,
		t.Workspace, t.ID, doc, o.d.TimeArg(t.CreatedAt))
	if err != nil {
		return store.Team{}, err
	}
	if !ok {
		return store.Team{}, derrors.Conflictf("team %q already exists in workspace %q", t.ID, t.Workspace)
	}
	return t, nil
}

// GetTeam returns one team; see store.Identity.
func (o ops) GetTeam(ctx context.Context, workspace, id string) (_ store.Team, err error) {
	defer derrors.Wrap(&err, "%s.GetTeam(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return store.Team{}, err
	}
	return o.getTeam(ctx, workspace, id)
}

func (o ops) getTeam(ctx context.Context, workspace, id string) (store.Team, error) {
	t, err := scanTeam(o.r.QueryRowContext(ctx,
		`SELECT `+teamColumns+` FROM teams WHERE workspace = $1 AND id = $2`, workspace, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Team{}, derrors.NotFoundf("team %q of workspace %q", id, workspace)
	}
	if err != nil {
		return store.Team{}, o.mapErr(err)
	}
	return t, nil
}

// ListTeams returns a workspace's teams by id; see store.Identity.
func (o ops) ListTeams(ctx context.Context, workspace string) (_ []store.Team, err error) {
	defer derrors.Wrap(&err, "%s.ListTeams(ctx, %q)", o.kind, workspace)
	if err := checkText(workspace); err != nil {
		return nil, err
	}
	return queryList(ctx, o, scanTeam,
		`SELECT `+teamColumns+` FROM teams WHERE workspace = $1 ORDER BY id`, workspace)
}

// UpdateTeam replaces a team's name and private flag; see store.Identity.
func (o ops) UpdateTeam(ctx context.Context, t store.Team) (_ store.Team, err error) {
	defer derrors.Wrap(&err, "%s.UpdateTeam(ctx, %q, %q)", o.kind, t.Workspace, t.ID)
	if err := checkText(t.Workspace, t.ID); err != nil {
		return store.Team{}, err
	}
	var out store.Team
	// Read, then write the whole document: createdBy lives in it too, and
	// the JSON update functions differ between the dialects.
	err = o.atomic(ctx, func(o ops) error {
		cur, err := o.getTeam(ctx, t.Workspace, t.ID)
		if err != nil {
			return err
		}
		cur.Name, cur.Private = t.Name, t.Private
		doc, err := marshalDoc(teamDoc{Name: cur.Name, Private: cur.Private, CreatedBy: cur.CreatedBy})
		if err != nil {
			return err
		}
		if _, err := o.w.ExecContext(ctx, `UPDATE teams SET doc = $3 WHERE workspace = $1 AND id = $2`, t.Workspace, t.ID, doc); err != nil {
			return o.mapErr(err)
		}
		out = cur
		return nil
	})
	if err != nil {
		return store.Team{}, err
	}
	return out, nil
}

// DeleteTeam deletes a team and its memberships; see store.Identity.
func (o ops) DeleteTeam(ctx context.Context, workspace, id string) (err error) {
	defer derrors.Wrap(&err, "%s.DeleteTeam(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return err
	}
	return o.atomic(ctx, func(o ops) error {
		if _, err := o.w.ExecContext(ctx, `DELETE FROM team_members WHERE workspace = $1 AND team_id = $2`, workspace, id); err != nil {
			return o.mapErr(err)
		}
		if _, err := o.w.ExecContext(ctx, `DELETE FROM teams WHERE workspace = $1 AND id = $2`, workspace, id); err != nil {
			return o.mapErr(err)
		}
		return nil
	})
}

// teamExists returns ErrNotFound unless the workspace has the team.
func (o ops) teamExists(ctx context.Context, workspace, id string) error {
	var one int
	err := o.r.QueryRowContext(ctx, `SELECT 1 FROM teams WHERE workspace = $1 AND id = $2`, workspace, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return derrors.NotFoundf("team %q of workspace %q", id, workspace)
	}
	return o.mapErr(err)
}

// AddTeamMember adds a subject to a team; see store.Identity.
func (o ops) AddTeamMember(ctx context.Context, m store.TeamMember) (_ store.TeamMember, err error) {
	defer derrors.Wrap(&err, "%s.AddTeamMember(ctx, %q, %q, %q)", o.kind, m.Workspace, m.TeamID, m.Subject)
	if err := required("workspace", m.Workspace, "team id", m.TeamID, "subject", m.Subject); err != nil {
		return store.TeamMember{}, err
	}
	if err := checkText(m.Workspace, m.TeamID, m.Subject); err != nil {
		return store.TeamMember{}, err
	}
	m.AddedAt = normTime(m.AddedAt)
	err = o.atomic(ctx, func(o ops) error {
		if err := o.teamExists(ctx, m.Workspace, m.TeamID); err != nil {
			return err
		}
		// A no-op update rather than DO NOTHING, so that RETURNING yields
		// the stored row (and its first AddedAt) when the member is there.
		var added dbTime
		if err := o.w.QueryRowContext(ctx,
			`INSERT INTO team_members (workspace, team_id, subject, added_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (workspace, team_id, subject) DO UPDATE SET added_at = team_members.added_at
			RETURNING added_at`,
			m.Workspace, m.TeamID, m.Subject, o.d.TimeArg(m.AddedAt)).Scan(&added); err != nil {
			return o.mapErr(err)
		}
		m.AddedAt = added.Time
		return nil
	})
	if err != nil {
		return store.TeamMember{}, err
	}
	return m, nil
}

// RemoveTeamMember removes a subject from a team; see store.Identity.
func (o ops) RemoveTeamMember(ctx context.Context, workspace, teamID, subject string) (err error) {
	defer derrors.Wrap(&err, "%s.RemoveTeamMember(ctx, %q, %q, %q)", o.kind, workspace, teamID, subject)
	if err := checkText(workspace, teamID, subject); err != nil {
		return err
	}
	if _, err := o.w.ExecContext(ctx,
		`DELETE FROM team_members WHERE workspace = $1 AND team_id = $2 AND subject = $3`, workspace, teamID, subject); err != nil {
		return o.mapErr(err)
	}
	return nil
}

// ListTeamMembers returns a team's members by subject; see store.Identity.
func (o ops) ListTeamMembers(ctx context.Context, workspace, teamID string) (_ []store.TeamMember, err error) {
	defer derrors.Wrap(&err, "%s.ListTeamMembers(ctx, %q, %q)", o.kind, workspace, teamID)
	if err := checkText(workspace, teamID); err != nil {
		return nil, err
	}
	// Two reads, not one transaction: on SQLite a transaction would queue
	// this read behind the one writer. A team deleted between them lists as
	// empty instead of ErrNotFound, which no caller can tell from a race lost
	// the other way.
	if err := o.teamExists(ctx, workspace, teamID); err != nil {
		return nil, err
	}
	return queryList(ctx, o, func(r rowScanner) (store.TeamMember, error) {
		m := store.TeamMember{Workspace: workspace, TeamID: teamID}
		var added dbTime
		if err := r.Scan(&m.Subject, &added); err != nil {
			return store.TeamMember{}, err
		}
		m.AddedAt = added.Time
		return m, nil
	}, `SELECT subject, added_at FROM team_members WHERE workspace = $1 AND team_id = $2 ORDER BY subject`, workspace, teamID)
}

// TeamsOf returns the ids of a subject's teams in a workspace; see store.Identity.
func (o ops) TeamsOf(ctx context.Context, workspace, subject string) (_ []string, err error) {
	defer derrors.Wrap(&err, "%s.TeamsOf(ctx, %q, %q)", o.kind, workspace, subject)
	if err := checkText(workspace, subject); err != nil {
		return nil, err
	}
	return queryList(ctx, o, func(r rowScanner) (string, error) {
		var id string
		err := r.Scan(&id)
		return id, err
	}, `SELECT team_id FROM team_members WHERE workspace = $1 AND subject = $2 ORDER BY team_id`, workspace, subject)
}
