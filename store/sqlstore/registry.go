package sqlstore

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"svc/internal/platform/derrors"
	"svc/store"
)

// kindDataset is the one kind whose versions carry cases.
const kindDataset = "dataset"

// digestRE is the form of a version digest (store.EntityVersion.Digest).
var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// versionColumns are the columns of a version read by scanVersion, spec
// excluded: list reads never carry it.
const versionColumns = `kind, owner, id, version, digest, seq, case_count, tags, origin, created_by, created_at, deleted_at`

// caseRow is a validated case with its encoded tags, ready to insert.
type caseRow struct {
	store.DatasetCase
	tagsJSON string
	tagSet   []string // sorted, without duplicates: the dataset_case_tags rows
}

// checkJSON refuses a document that is missing, not UTF-8, not JSON, or
// holds what jsonb cannot.
func checkJSON(what string, b []byte) error {
	switch {
	case len(b) == 0:
		return derrors.Invalidf("%s is required", what)
	case !utf8.Valid(b):
		return derrors.Invalidf("%s is not valid UTF-8", what)
	case !json.Valid(b):
		return derrors.Invalidf("%s is not JSON", what)
	}
	if err := checkDoc(b); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// encodeTags is the JSON array a tags column holds; no tags is [].
func encodeTags(tags []string) (string, error) { return encodeStrings(tags) }

// decodeTags reads a tags column; no tags is nil, as on the way in.
func decodeTags(b []byte) ([]string, error) { return decodeStrings("tags", b) }

// encodeStrings encodes a list column as a JSON array; none is "[]".
func encodeStrings(list []string) (string, error) {
	if err := checkText(list...); err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(list)
	return string(b), err
}

// decodeStrings reads the JSON array of list column col; none is nil.
func decodeStrings(col string, b []byte) ([]string, error) {
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("decode %s: %w", col, err)
	}
	if len(list) == 0 {
		return nil, nil
	}
	return list, nil
}

// prepareOrigin validates an origin and returns it compacted.
func prepareOrigin(origin json.RawMessage) (json.RawMessage, error) {
	if err := checkJSON("origin", origin); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, origin); err != nil {
		return nil, derrors.Invalidf("origin is not JSON: %v", err)
	}
	if buf.String() == "null" {
		// It would read back as no origin and be overwritten by the next stamp.
		return nil, derrors.Invalidf("origin is null")
	}
	return buf.Bytes(), nil
}

// prepareVersion validates v and its cases and returns them normalised as
// they will be stored: Seq unset, CreatedAt UTC microseconds, no tombstone,
// CaseCount and Ord from the cases.
func prepareVersion(v store.EntityVersion, team string, cases []store.DatasetCase) (store.EntityVersion, string, []caseRow, error) {
	if err := required("kind", v.Kind, "owner", v.Owner, "id", v.ID, "version", v.Version, "digest", v.Digest); err != nil {
		return store.EntityVersion{}, "", nil, err
	}
	if err := checkText(v.Kind, v.Owner, v.ID, v.Version, team, v.CreatedBy); err != nil {
		return store.EntityVersion{}, "", nil, err
	}
	if !digestRE.MatchString(v.Digest) {
		return store.EntityVersion{}, "", nil, derrors.Invalidf("digest %q is not sha256:<64 lowercase hex>", v.Digest)
	}
	if err := checkJSON("spec", v.Spec); err != nil {
		return store.EntityVersion{}, "", nil, err
	}
	if len(v.Origin) > 0 {
		o, err := prepareOrigin(v.Origin)
		if err != nil {
			return store.EntityVersion{}, "", nil, err
		}
		v.Origin = o
	}
	tags, err := encodeTags(v.Tags)
	if err != nil {
		return store.EntityVersion{}, "", nil, err
	}
	if len(v.Tags) == 0 {
		v.Tags = nil
	}
	if v.Kind != kindDataset && len(cases) > 0 {
		return store.EntityVersion{}, "", nil, derrors.Invalidf("a %s has no cases; only a %s does", v.Kind, kindDataset)
	}
	rows := make([]caseRow, len(cases))
	seen := make(map[string]bool, len(cases))
	for i, c := range cases {
		if err := required("case id", c.CaseID, "case digest", c.Digest); err != nil {
			return store.EntityVersion{}, "", nil, fmt.Errorf("case %d: %w", i, err)
		}
		if seen[c.CaseID] {
			return store.EntityVersion{}, "", nil, derrors.Invalidf("case id %q appears twice", c.CaseID)
		}
		seen[c.CaseID] = true
		if err := checkText(c.CaseID, c.Digest); err != nil {
			return store.EntityVersion{}, "", nil, err
		}
		if err := checkJSON(fmt.Sprintf("case %q", c.CaseID), c.Doc); err != nil {
			return store.EntityVersion{}, "", nil, err
		}
		tj, err := encodeTags(c.Tags)
		if err != nil {
			return store.EntityVersion{}, "", nil, fmt.Errorf("case %q: %w", c.CaseID, err)
		}
		c.Ord = i
		if len(c.Tags) == 0 {
			c.Tags = nil
		}
		rows[i] = caseRow{DatasetCase: c, tagsJSON: tj, tagSet: slices.Compact(slices.Sorted(slices.Values(c.Tags)))}
	}
	v.CaseCount = 0
	if v.Kind == kindDataset {
		v.CaseCount = len(cases)
	}
	v.Seq = 0
	v.DeletedAt = nil
	v.CreatedAt = normTime(v.CreatedAt)
	return v, tags, rows, nil
}

// RegisterVersion stores a version and its cases; see store.Registry.
func (o ops) RegisterVersion(ctx context.Context, v store.EntityVersion, team string, cases []store.DatasetCase) (_ store.EntityVersion, _ bool, err error) {
	defer derrors.Wrap(&err, "%s.RegisterVersion(ctx, %q, %q, %q@%q, %d cases)", o.kind, v.Kind, v.Owner, v.ID, v.Version, len(cases))
	v, tags, rows, err := prepareVersion(v, team, cases)
	if err != nil {
		return store.EntityVersion{}, false, err
	}
	var stored store.EntityVersion
	var created bool
	err = o.atomic(ctx, func(o ops) error {
		var err error
		stored, created, err = o.registerVersion(ctx, v, team, tags, rows)
		return err
	})
	if err != nil {
		return store.EntityVersion{}, false, err
	}
	return stored, created, nil
}

// registerVersion is RegisterVersion inside a transaction.
func (o ops) registerVersion(ctx context.Context, v store.EntityVersion, team, tags string, rows []caseRow) (store.EntityVersion, bool, error) {
	// Look before inserting, and insert with DO NOTHING: a failed statement
	// would abort a PostgreSQL transaction that a caller may want to go on
	// with after ErrConflict.
	cur, err := o.getVersion(ctx, false, false, v.Kind, v.Owner, v.ID, v.Version)
	switch {
	case err == nil:
		if cur.Digest != v.Digest {
			return store.EntityVersion{}, false, derrors.Conflictf("%s %s@%s of %q is registered with other content (digest %s, not %s)",
				v.Kind, v.ID, v.Version, v.Owner, cur.Digest, v.Digest)
		}
		if cur.DeletedAt != nil {
			if _, err := o.w.ExecContext(ctx, `UPDATE registry_versions SET deleted_at = NULL `+versionKey,
				v.Kind, v.Owner, v.ID, v.Version); err != nil {
				return store.EntityVersion{}, false, o.mapErr(err)
			}
		}
		stored, err := o.getVersion(ctx, true, true, v.Kind, v.Owner, v.ID, v.Version)
		return stored, false, err
	case !errors.Is(err, derrors.ErrNotFound):
		return store.EntityVersion{}, false, err
	}
	if _, err := o.w.ExecContext(ctx,
		`INSERT INTO registry_entities (kind, owner, id, team_id, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (kind, owner, id) DO NOTHING`,
		v.Kind, v.Owner, v.ID, team, v.CreatedBy, o.d.TimeArg(v.CreatedAt)); err != nil {
		return store.EntityVersion{}, false, o.mapErr(err)
	}
	var origin any
	if len(v.Origin) > 0 {
		origin = string(v.Origin)
	}
	err = o.w.QueryRowContext(ctx,
		`INSERT INTO registry_versions (kind, owner, id, version, digest, seq, spec, case_count, tags, origin, created_by, created_at)
		VALUES ($1, $2, $3, $4, $5, `+o.d.RegistrySeqSQL()+`, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (kind, owner, id, version) DO NOTHING
		RETURNING seq`,
		v.Kind, v.Owner, v.ID, v.Version, v.Digest, string(v.Spec), v.CaseCount, tags, origin, v.CreatedBy, o.d.TimeArg(v.CreatedAt)).Scan(&v.Seq)
	if errors.Is(err, sql.ErrNoRows) {
		// Not seen above yet there now: on PostgreSQL a SERIALIZABLE
		// transaction reports this as a serialization failure instead, so
		// this is only a defence.
		return store.EntityVersion{}, false, derrors.Conflictf("%s %s@%s of %q was registered concurrently", v.Kind, v.ID, v.Version, v.Owner)
	}
	if err != nil {
		return store.EntityVersion{}, false, o.mapErr(err)
	}
	if err := o.insertCases(ctx, v, rows); err != nil {
		return store.EntityVersion{}, false, err
	}
	return v, true, nil
}

// insertCases writes the dataset_cases and dataset_case_tags rows of a new
// version: by COPY where the dialect can, else through one prepared INSERT
// per table.
func (o ops) insertCases(ctx context.Context, v store.EntityVersion, rows []caseRow) error {
	if len(rows) == 0 {
		return nil
	}
	caseCols := []string{"owner", "dataset_id", "version", "case_id", "ord", "digest", "tags", "doc"}
	tagCols := []string{"owner", "dataset_id", "version", "case_id", "tag"}
	caseVals := make([][]any, 0, len(rows))
	var tagVals [][]any
	for _, r := range rows {
		caseVals = append(caseVals, []any{v.Owner, v.ID, v.Version, r.CaseID, r.Ord, r.Digest, r.tagsJSON, string(r.Doc)})
		for _, tag := range r.tagSet {
			tagVals = append(tagVals, []any{v.Owner, v.ID, v.Version, r.CaseID, tag})
		}
	}
	if c, ok := o.d.(Copier); ok && o.tx != nil && o.tx.conn != nil {
		if err := c.CopyRows(ctx, o.tx.conn, "dataset_cases", caseCols, caseVals); err != nil {
			return o.mapErr(err)
		}
		if len(tagVals) > 0 {
			if err := c.CopyRows(ctx, o.tx.conn, "dataset_case_tags", tagCols, tagVals); err != nil {
				return o.mapErr(err)
			}
		}
		return nil
	}
	if err := o.insertPrepared(ctx, "dataset_cases", caseCols, caseVals); err != nil {
		return err
	}
	return o.insertPrepared(ctx, "dataset_case_tags", tagCols, tagVals)
}

// insertPrepared inserts rows into table through one prepared statement.
func (o ops) insertPrepared(ctx context.Context, table string, cols []string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	ph := make([]string, len(cols))
	for i := range cols {
		ph[i] = fmt.Sprintf("$%d", i+1)
	}
	stmt, err := o.w.PrepareContext(ctx, `INSERT INTO `+table+` (`+strings.Join(cols, ", ")+`) VALUES (`+strings.Join(ph, ", ")+`)`)
	if err != nil {
		return o.mapErr(err)
	}
	defer stmt.Close()
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, r...); err != nil {
			return fmt.Errorf("insert into %s: %w", table, o.mapErr(err))
		}
	}
	return nil
}

// scanVersion reads a row of versionColumns, followed by spec when withSpec.
func scanVersion(r rowScanner, withSpec bool) (store.EntityVersion, error) {
	var v store.EntityVersion
	var tags, origin, spec []byte
	var created, deleted dbTime
	dest := []any{&v.Kind, &v.Owner, &v.ID, &v.Version, &v.Digest, &v.Seq, &v.CaseCount, &tags, &origin, &v.CreatedBy, &created, &deleted}
	if withSpec {
		dest = append(dest, &spec)
	}
	if err := r.Scan(dest...); err != nil {
		return store.EntityVersion{}, err
	}
	var err error
	if v.Tags, err = decodeTags(tags); err != nil {
		return store.EntityVersion{}, err
	}
	if len(origin) > 0 {
		v.Origin = json.RawMessage(origin)
	}
	if withSpec {
		v.Spec = json.RawMessage(spec)
	}
	v.CreatedAt = created.Time
	if deleted.Valid {
		v.DeletedAt = &deleted.Time
	}
	return v, nil
}

// versionKey is the WHERE clause of one version, keyed $1 to $4; liveVersion
// leaves out a tombstoned one.
const (
	versionKey  = `WHERE kind = $1 AND owner = $2 AND id = $3 AND version = $4`
	liveVersion = versionKey + ` AND deleted_at IS NULL`
)

// getVersion reads one version (only a live one when live), or ErrNotFound.
func (o ops) getVersion(ctx context.Context, live, withSpec bool, kind, owner, id, version string) (store.EntityVersion, error) {
	cols, where := versionColumns, versionKey
	if withSpec {
		cols += `, spec`
	}
	if live {
		where = liveVersion
	}
	v, err := scanVersion(o.r.QueryRowContext(ctx, `SELECT `+cols+` FROM registry_versions `+where, kind, owner, id, version), withSpec)
	if err = o.found(err, "%s %s@%s of %q", kind, id, version, owner); err != nil {
		return store.EntityVersion{}, err
	}
	return v, nil
}

// GetVersion returns a live version with its spec; see store.Registry.
func (o ops) GetVersion(ctx context.Context, kind, owner, id, version string) (_ store.EntityVersion, err error) {
	defer derrors.Wrap(&err, "%s.GetVersion(ctx, %q, %q, %q@%q)", o.kind, kind, owner, id, version)
	if err := checkText(kind, owner, id, version); err != nil {
		return store.EntityVersion{}, err
	}
	return o.getVersion(ctx, true, true, kind, owner, id, version)
}

// entityQuery selects entities with their live versions, in the order
// ListEntities promises and versions by seq; callers add the WHERE clause.
const entityQuery = `SELECT e.kind, e.owner, e.id, e.team_id, e.created_by, e.created_at,
	v.version, v.digest, v.seq, v.case_count, v.tags, v.origin, v.created_by, v.created_at
	FROM registry_entities e
	JOIN registry_versions v ON v.kind = e.kind AND v.owner = e.owner AND v.id = e.id AND v.deleted_at IS NULL
	`

// queryEntities runs entityQuery with where and folds its rows into
// entities. An entity without a live version has no row, so it is left out.
func (o ops) queryEntities(ctx context.Context, where string, args ...any) ([]store.Entity, error) {
	rows, err := o.r.QueryContext(ctx, entityQuery+where+` ORDER BY e.owner, e.id, v.seq`, args...)
	if err != nil {
		return nil, o.mapErr(err)
	}
	defer rows.Close()
	es := []store.Entity{}
	for rows.Next() {
		var e store.Entity
		var v store.EntityVersion
		var eCreated, vCreated dbTime
		var tags, origin []byte
		if err := rows.Scan(&e.Kind, &e.Owner, &e.ID, &e.TeamID, &e.CreatedBy, &eCreated,
			&v.Version, &v.Digest, &v.Seq, &v.CaseCount, &tags, &origin, &v.CreatedBy, &vCreated); err != nil {
			return nil, err
		}
		if v.Tags, err = decodeTags(tags); err != nil {
			return nil, err
		}
		if len(origin) > 0 {
			v.Origin = json.RawMessage(origin)
		}
		v.Kind, v.Owner, v.ID, v.CreatedAt = e.Kind, e.Owner, e.ID, vCreated.Time
		if n := len(es); n == 0 || es[n-1].Owner != e.Owner || es[n-1].ID != e.ID {
			e.CreatedAt = eCreated.Time
			es = append(es, e)
		}
		last := &es[len(es)-1]
		last.Versions = append(last.Versions, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return es, nil
}

// GetEntity returns an entity with its live versions; see store.Registry.
func (o ops) GetEntity(ctx context.Context, kind, owner, id string) (_ store.Entity, err error) {
	defer derrors.Wrap(&err, "%s.GetEntity(ctx, %q, %q, %q)", o.kind, kind, owner, id)
	if err := checkText(kind, owner, id); err != nil {
		return store.Entity{}, err
	}
	es, err := o.queryEntities(ctx, `WHERE e.kind = $1 AND e.owner = $2 AND e.id = $3`, kind, owner, id)
	if err != nil {
		return store.Entity{}, err
	}
	if len(es) == 0 {
		return store.Entity{}, derrors.NotFoundf("%s %s of %q", kind, id, owner)
	}
	return es[0], nil
}

// EntityTeam returns an entity's team, tombstoned or not; see store.Registry.
func (o ops) EntityTeam(ctx context.Context, kind, owner, id string) (_ string, err error) {
	defer derrors.Wrap(&err, "%s.EntityTeam(ctx, %q, %q, %q)", o.kind, kind, owner, id)
	if err := checkText(kind, owner, id); err != nil {
		return "", err
	}
	var team string
	err = o.r.QueryRowContext(ctx, `SELECT team_id FROM registry_entities WHERE kind = $1 AND owner = $2 AND id = $3`,
		kind, owner, id).Scan(&team)
	if errors.Is(err, sql.ErrNoRows) {
		return "", derrors.NotFoundf("%s %s of %q", kind, id, owner)
	}
	if err != nil {
		return "", err
	}
	return team, nil
}

// ListEntities returns the entities of kind owned by owners; see store.Registry.
func (o ops) ListEntities(ctx context.Context, kind string, owners []string) (_ []store.Entity, err error) {
	defer derrors.Wrap(&err, "%s.ListEntities(ctx, %q, %q)", o.kind, kind, owners)
	if err := checkText(kind); err != nil {
		return nil, err
	}
	if err := checkText(owners...); err != nil {
		return nil, err
	}
	owners = slices.Compact(slices.Sorted(slices.Values(owners)))
	es := []store.Entity{}
	for chunk := range slices.Chunk(owners, listChunk) {
		args := []any{kind}
		ph := make([]string, len(chunk))
		for i, ow := range chunk {
			args = append(args, ow)
			ph[i] = fmt.Sprintf("$%d", i+2)
		}
		got, err := o.queryEntities(ctx, `WHERE e.kind = $1 AND e.owner IN (`+strings.Join(ph, ", ")+`)`, args...)
		if err != nil {
			return nil, err
		}
		// Chunks cover ascending owner ranges, so appending keeps the order.
		es = append(es, got...)
	}
	return es, nil
}

// updateVersion runs an UPDATE of one live version (set is the SET clause,
// its arguments from $5 on) and returns ErrNotFound when none matched.
func (o ops) updateVersion(ctx context.Context, set string, kind, owner, id, version string, args ...any) error {
	res, err := o.w.ExecContext(ctx, `UPDATE registry_versions SET `+set+` `+liveVersion,
		append([]any{kind, owner, id, version}, args...)...)
	if err != nil {
		return o.mapErr(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return derrors.NotFoundf("%s %s@%s of %q", kind, id, version, owner)
	}
	return nil
}

// SetVersionTags replaces a live version's tags; see store.Registry.
func (o ops) SetVersionTags(ctx context.Context, kind, owner, id, version string, tags []string) (err error) {
	defer derrors.Wrap(&err, "%s.SetVersionTags(ctx, %q, %q, %q@%q, %q)", o.kind, kind, owner, id, version, tags)
	if err := checkText(kind, owner, id, version); err != nil {
		return err
	}
	tj, err := encodeTags(tags)
	if err != nil {
		return err
	}
	return o.updateVersion(ctx, `tags = $5`, kind, owner, id, version, tj)
}

// StampVersionOrigin sets a version's origin once; see store.Registry.
func (o ops) StampVersionOrigin(ctx context.Context, kind, owner, id, version string, origin json.RawMessage) (_ json.RawMessage, err error) {
	defer derrors.Wrap(&err, "%s.StampVersionOrigin(ctx, %q, %q, %q@%q)", o.kind, kind, owner, id, version)
	if err := checkText(kind, owner, id, version); err != nil {
		return nil, err
	}
	origin, err = prepareOrigin(origin)
	if err != nil {
		return nil, err
	}
	// One statement, so concurrent stamps cannot both see no origin: the
	// second waits for the first's row lock and then keeps its value (under
	// SERIALIZABLE it fails instead, and Transact retries it).
	var stored []byte
	err = o.w.QueryRowContext(ctx,
		`UPDATE registry_versions SET origin = coalesce(origin, $5) `+liveVersion+` RETURNING origin`,
		kind, owner, id, version, string(origin)).Scan(&stored)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, derrors.NotFoundf("%s %s@%s of %q", kind, id, version, owner)
	}
	if err != nil {
		return nil, o.mapErr(err)
	}
	return json.RawMessage(stored), nil
}

// TombstoneVersion soft-deletes a live version; see store.Registry.
func (o ops) TombstoneVersion(ctx context.Context, kind, owner, id, version string, at time.Time) (err error) {
	defer derrors.Wrap(&err, "%s.TombstoneVersion(ctx, %q, %q, %q@%q)", o.kind, kind, owner, id, version)
	if err := checkText(kind, owner, id, version); err != nil {
		return err
	}
	return o.updateVersion(ctx, `deleted_at = $5`, kind, owner, id, version, o.d.TimeArg(normTime(at)))
}

// MoveEntity sets the owning team of an entity; see store.Registry.
func (o ops) MoveEntity(ctx context.Context, kind, owner, id, team string) (err error) {
	defer derrors.Wrap(&err, "%s.MoveEntity(ctx, %q, %q, %q, %q)", o.kind, kind, owner, id, team)
	if err := checkText(kind, owner, id, team); err != nil {
		return err
	}
	// Ownership is entity-level, so one row moves every version,
	// tombstones included.
	res, err := o.w.ExecContext(ctx, `UPDATE registry_entities SET team_id = $4 WHERE kind = $1 AND owner = $2 AND id = $3`,
		kind, owner, id, team)
	if err != nil {
		return o.mapErr(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return derrors.NotFoundf("%s %s of %q", kind, id, owner)
	}
	return nil
}

// caseColumns are the columns of a case read by scanCase.
const caseColumns = `case_id, ord, digest, tags, doc`

func scanCase(r rowScanner) (store.DatasetCase, error) {
	var c store.DatasetCase
	var tags, doc []byte
	if err := r.Scan(&c.CaseID, &c.Ord, &c.Digest, &tags, &doc); err != nil {
		return store.DatasetCase{}, err
	}
	var err error
	if c.Tags, err = decodeTags(tags); err != nil {
		return store.DatasetCase{}, err
	}
	c.Doc = json.RawMessage(doc)
	return c, nil
}

// ListDatasetCases returns the selected cases of a dataset version; see store.Registry.
func (o ops) ListDatasetCases(ctx context.Context, owner, id, version string, f store.CaseFilter) (_ []store.DatasetCase, err error) {
	defer derrors.Wrap(&err, "%s.ListDatasetCases(ctx, %q, %q@%q, %d ids, %q, after %d, limit %d)",
		o.kind, owner, id, version, len(f.IDs), f.Tags, f.FromOrd, f.Limit)
	if err := checkText(owner, id, version); err != nil {
		return nil, err
	}
	if err := checkText(f.IDs...); err != nil {
		return nil, err
	}
	if err := checkText(f.Tags...); err != nil {
		return nil, err
	}
	if f.Limit < 0 {
		return nil, derrors.Invalidf("limit %d is negative", f.Limit)
	}
	// Two reads, not one transaction, as in ListTeamMembers: a tombstone
	// landing between them is a race no caller can tell from losing it the
	// other way, and the cases of a version never change.
	var one int
	err = o.r.QueryRowContext(ctx, `SELECT 1 FROM registry_versions `+liveVersion, kindDataset, owner, id, version).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, derrors.NotFoundf("%s %s@%s of %q", kindDataset, id, version, owner)
	}
	if err != nil {
		return nil, o.mapErr(err)
	}
	ids := slices.Compact(slices.Sorted(slices.Values(f.IDs)))
	tags := slices.Compact(slices.Sorted(slices.Values(f.Tags)))
	q := caseQuery{owner: owner, id: id, version: version, afterOrd: f.FromOrd - 1, limit: f.Limit}
	if len(ids)+len(tags) <= listChunk {
		// The common case: one statement with both conditions.
		return q.run(ctx, o, ids, tags, true)
	}
	// Too many values for one statement: look the ids up a chunk at a time
	// by key, select each chunk of tags in Ord order up to Limit, and merge.
	// The first Limit of the union are among what these return. Walking
	// the cases in Ord order per id chunk instead would compare each case
	// with every id of the chunk once PostgreSQL switches the statement to
	// a generic plan (it hashes IN lists of constants only).
	byOrd := map[int]store.DatasetCase{}
	add := func(ids, tags []string, ordered bool) error {
		cs, err := q.run(ctx, o, ids, tags, ordered)
		for _, c := range cs {
			byOrd[c.Ord] = c
		}
		return err
	}
	for chunk := range slices.Chunk(ids, listChunk) {
		if err := add(chunk, nil, false); err != nil {
			return nil, err
		}
	}
	for chunk := range slices.Chunk(tags, listChunk) {
		if err := add(nil, chunk, true); err != nil {
			return nil, err
		}
	}
	out := slices.SortedFunc(maps.Values(byOrd), func(a, b store.DatasetCase) int { return cmp.Compare(a.Ord, b.Ord) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// caseQuery is a selection of one dataset version's cases.
type caseQuery struct {
	owner, id, version string
	afterOrd, limit    int
}

// run returns the cases whose id is in ids or that carry a tag in tags (all
// cases when both are empty). When ordered they come in Ord order, at most
// q.limit; otherwise in any order and all of them, so that the database may
// look ids up by key.
func (q caseQuery) run(ctx context.Context, o ops, ids, tags []string, ordered bool) ([]store.DatasetCase, error) {
	args := []any{q.owner, q.id, q.version, q.afterOrd}
	ph := func(vals []string) string {
		p := make([]string, len(vals))
		for i, v := range vals {
			args = append(args, v)
			p[i] = fmt.Sprintf("$%d", len(args))
		}
		return strings.Join(p, ", ")
	}
	var or []string
	if len(ids) > 0 {
		or = append(or, `case_id IN (`+ph(ids)+`)`)
	}
	if len(tags) > 0 {
		// A probe of the case's own tags through dataset_case_tags' key,
		// not "case_id IN (cases with the tag)": see migration 0003.
		or = append(or, `EXISTS (SELECT 1 FROM dataset_case_tags t
			WHERE t.owner = $1 AND t.dataset_id = $2 AND t.version = $3 AND t.case_id = c.case_id AND t.tag IN (`+ph(tags)+`) LIMIT 1 OFFSET 0)`)
	}
	query := `SELECT ` + caseColumns + ` FROM dataset_cases c WHERE owner = $1 AND dataset_id = $2 AND version = $3 AND ord > $4`
	if len(or) > 0 {
		query += ` AND (` + strings.Join(or, ` OR `) + `)`
	}
	if ordered {
		query += ` ORDER BY ord`
		if q.limit > 0 {
			args = append(args, q.limit)
			query += fmt.Sprintf(` LIMIT $%d`, len(args))
		}
	}
	return queryList(ctx, o, scanCase, query, args...)
}
