package sqlstore

import (
	"context"

	"svc/internal/platform/derrors"
	"svc/store"
)

// Secret names and workspaces appear in errors; ciphertexts never do.

// PutSecret inserts or replaces a secret; see store.Secrets.
func (o ops) PutSecret(ctx context.Context, s store.Secret) (_ store.Secret, err error) {
	defer derrors.Wrap(&err, "%s.PutSecret(ctx, %q, %q)", o.kind, s.Workspace, s.Name)
	if err := required("workspace", s.Workspace, "secret name", s.Name); err != nil {
		return store.Secret{}, err
	}
	if err := checkText(s.Workspace, s.Name, s.CreatedBy); err != nil {
		return store.Secret{}, err
	}
	if len(s.Ciphertext) == 0 {
		return store.Secret{}, derrors.Invalidf("ciphertext is required")
	}
	hosts, err := encodeHosts(s.AllowedHosts)
	if err != nil {
		return store.Secret{}, err
	}
	s.Ciphertext = append([]byte(nil), s.Ciphertext...)
	s.AllowedHosts, _ = decodeHosts([]byte(hosts)) // a copy; none is nil, as on read
	s.UpdatedAt = normTime(s.UpdatedAt)
	// A replace keeps the first creator, as PutMember keeps the first
	// AddedAt; RETURNING yields it. The allowed hosts are replaced with
	// the value: whoever stores a value says where it may go.
	var updated dbTime
	if err := o.w.QueryRowContext(ctx,
		`INSERT INTO secrets (workspace, name, ciphertext, allowed_hosts, created_by, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (workspace, name) DO UPDATE SET ciphertext = excluded.ciphertext, allowed_hosts = excluded.allowed_hosts, updated_at = excluded.updated_at
		RETURNING created_by, updated_at`,
		s.Workspace, s.Name, s.Ciphertext, hosts, s.CreatedBy, o.d.TimeArg(s.UpdatedAt)).Scan(&s.CreatedBy, &updated); err != nil {
		return store.Secret{}, o.mapErr(err)
	}
	s.UpdatedAt = updated.Time
	return s, nil
}

// encodeHosts is the JSON array the allowed_hosts column holds; none is [].
func encodeHosts(hosts []string) (string, error) { return encodeStrings(hosts) }

// decodeHosts reads an allowed_hosts column; none is nil.
func decodeHosts(b []byte) ([]string, error) { return decodeStrings("allowed_hosts", b) }

// GetSecret returns one secret with its ciphertext; see store.Secrets.
func (o ops) GetSecret(ctx context.Context, workspace, name string) (_ store.Secret, err error) {
	defer derrors.Wrap(&err, "%s.GetSecret(ctx, %q, %q)", o.kind, workspace, name)
	if err := checkText(workspace, name); err != nil {
		return store.Secret{}, err
	}
	s := store.Secret{Workspace: workspace, Name: name}
	var updated dbTime
	var hosts []byte
	err = o.r.QueryRowContext(ctx, `SELECT ciphertext, allowed_hosts, created_by, updated_at FROM secrets WHERE workspace = $1 AND name = $2`,
		workspace, name).Scan(&s.Ciphertext, &hosts, &s.CreatedBy, &updated)
	if err = o.found(err, "secret %q of workspace %q", name, workspace); err != nil {
		return store.Secret{}, err
	}
	if s.AllowedHosts, err = decodeHosts(hosts); err != nil {
		return store.Secret{}, err
	}
	s.UpdatedAt = updated.Time
	return s, nil
}

// ListSecrets returns a workspace's secrets without ciphertext; see store.Secrets.
func (o ops) ListSecrets(ctx context.Context, workspace string) (_ []store.Secret, err error) {
	defer derrors.Wrap(&err, "%s.ListSecrets(ctx, %q)", o.kind, workspace)
	if err := checkText(workspace); err != nil {
		return nil, err
	}
	// The ciphertext is not even selected: a list has no use for it.
	return queryList(ctx, o, func(r rowScanner) (store.Secret, error) {
		s := store.Secret{Workspace: workspace}
		var updated dbTime
		var hosts []byte
		if err := r.Scan(&s.Name, &hosts, &s.CreatedBy, &updated); err != nil {
			return store.Secret{}, err
		}
		var err error
		if s.AllowedHosts, err = decodeHosts(hosts); err != nil {
			return store.Secret{}, err
		}
		s.UpdatedAt = updated.Time
		return s, nil
	}, `SELECT name, allowed_hosts, created_by, updated_at FROM secrets WHERE workspace = $1 ORDER BY name`, workspace)
}

// DeleteSecret deletes a secret; see store.Secrets.
func (o ops) DeleteSecret(ctx context.Context, workspace, name string) (err error) {
	defer derrors.Wrap(&err, "%s.DeleteSecret(ctx, %q, %q)", o.kind, workspace, name)
	if err := checkText(workspace, name); err != nil {
		return err
	}
	if _, err := o.w.ExecContext(ctx, `DELETE FROM secrets WHERE workspace = $1 AND name = $2`, workspace, name); err != nil {
		return o.mapErr(err)
	}
	return nil
}
