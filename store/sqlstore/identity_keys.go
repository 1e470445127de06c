package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"

	"svc/internal/platform/derrors"
	"svc/store"
)

// apiKeyDoc is the document of an api_keys row. Like every identity
// table's document it holds only what no column holds, so a value is never
// stored twice and cannot disagree with itself.
type apiKeyDoc struct {
	Label     string   `json:"label,omitempty"`
	Prefix    string   `json:"prefix"`
	Roles     []string `json:"roles"`
	Scopes    []string `json:"scopes,omitempty"`
	CreatedBy string   `json:"createdBy,omitempty"`
}

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
	if err = o.found(err, "api key"); err != nil {
		return store.APIKey{}, err
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
	if err = o.found(err, "api key"); err != nil {
		return store.APIKeyGrant{}, err
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
