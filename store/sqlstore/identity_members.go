package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"

	"svc/internal/platform/derrors"
	"svc/store"
)

// roleAdmin is the role CountAdmins counts.
const roleAdmin = "admin"

// The documents of the members and member_removals rows: only what no
// column holds (see apiKeyDoc).
type (
	memberDoc struct {
		Email string `json:"email,omitempty"`
	}
	memberRemovalDoc struct {
		RemovedBy string `json:"removedBy,omitempty"`
	}
)

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
	if err = o.found(err, "member %q of workspace %q", subject, workspace); err != nil {
		return store.Member{}, err
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
	if err = o.found(err, "removal of %q from workspace %q", subject, workspace); err != nil {
		return store.MemberRemoval{}, err
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
