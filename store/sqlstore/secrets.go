package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"svc/derrors"
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
	s.Ciphertext = append([]byte(nil), s.Ciphertext...)
	s.UpdatedAt = normTime(s.UpdatedAt)
	// A replace keeps the first creator, as PutMember keeps the first
	// AddedAt; RETURNING yields it.
	var updated dbTime
	if err := o.w.QueryRowContext(ctx,
		`INSERT INTO secrets (workspace, name, ciphertext, created_by, updated_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (workspace, name) DO UPDATE SET ciphertext = excluded.ciphertext, updated_at = excluded.updated_at
		RETURNING created_by, updated_at`,
		s.Workspace, s.Name, s.Ciphertext, s.CreatedBy, o.d.TimeArg(s.UpdatedAt)).Scan(&s.CreatedBy, &updated); err != nil {
		return store.Secret{}, o.mapErr(err)
	}
	s.UpdatedAt = updated.Time
	return s, nil
}

// GetSecret returns one secret with its ciphertext; see store.Secrets.
func (o ops) GetSecret(ctx context.Context, workspace, name string) (_ store.Secret, err error) {
	defer derrors.Wrap(&err, "%s.GetSecret(ctx, %q, %q)", o.kind, workspace, name)
	if err := checkText(workspace, name); err != nil {
		return store.Secret{}, err
	}
	s := store.Secret{Workspace: workspace, Name: name}
	var updated dbTime
	err = o.r.QueryRowContext(ctx, `SELECT ciphertext, created_by, updated_at FROM secrets WHERE workspace = $1 AND name = $2`,
		workspace, name).Scan(&s.Ciphertext, &s.CreatedBy, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Secret{}, derrors.NotFoundf("secret %q of workspace %q", name, workspace)
	}
	if err != nil {
		return store.Secret{}, o.mapErr(err)
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
		if err := r.Scan(&s.Name, &s.CreatedBy, &updated); err != nil {
			return store.Secret{}, err
		}
		s.UpdatedAt = updated.Time
		return s, nil
	}, `SELECT name, created_by, updated_at FROM secrets WHERE workspace = $1 ORDER BY name`, workspace)
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
