package registries

import (
	"context"
	"encoding/json"
	"errors"

	"svc/auth"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
)

// List returns the entities of kind the caller sees: its workspace's
// (less those of private teams it is not in) and the `_shared` ones,
// ordered by owner then id.
func (s *Service) List(ctx context.Context, p auth.Principal, kind registry.Kind) ([]Entry, error) {
	var out []Entry
	err := s.transact(ctx, func(tx store.Tx) error {
		out = []Entry{}
		es, err := tx.ListEntities(ctx, string(kind), []string{p.Workspace, registry.SharedOwner})
		if err != nil {
			return err
		}
		a := newAccess(ctx, tx, p)
		for _, e := range es {
			if ok, err := a.canRead(e); err != nil {
				return err
			} else if ok {
				out = append(out, entry(e))
			}
		}
		return nil
	})
	return out, err
}

// Entity returns one entity's metadata, owner-first with `_shared`
// fallback (GET /harnesses/:id).
func (s *Service) Entity(ctx context.Context, p auth.Principal, kind registry.Kind, id string) (Entry, error) {
	var out Entry
	err := s.transact(ctx, func(tx store.Tx) error {
		r, err := resolve(newAccess(ctx, tx, p), kind, id, registry.LatestVersion)
		if errors.Is(err, derrors.ErrNotFound) {
			return derrors.NotFoundf("no %s %q in this workspace or among shared ones; GET %s lists them", kind, id, listPath(kind))
		}
		if err != nil {
			return err
		}
		out = entry(r.entity)
		return nil
	})
	return out, err
}

// CasePage selects a page of a dataset's cases in GetVersion.
type CasePage struct {
	// Omit leaves every case out (?cases=false): the dataset's header only.
	Omit bool
	// Paged is set when From or Limit was given; only then are From and
	// Limit applied.
	Paged bool
	From  int // position (ord) of the first case, from 0
	Limit int // at most this many cases; 0 means DefaultCasePage
}

// Case paging limits of GET /datasets/:id/versions/:version.
const (
	DefaultCasePage = 500
	MaxCasePage     = 5000
)

// VersionDoc is a resolved version's spec with what the response headers
// carry about it.
type VersionDoc struct {
	Owner   string
	Version string // the resolved version (`latest` resolved)
	Digest  string // of the whole version, whatever page Spec holds
	// Spec is the canonical spec, for a dataset with the selected cases.
	Spec json.RawMessage
	// CaseCount is the dataset's number of cases; NextFrom the position to
	// ask for next, -1 when the page reached the end (or no paging).
	CaseCount int
	NextFrom  int
}

// GetVersion returns id@version of kind (version may be `latest`),
// owner-first with `_shared` fallback. For a dataset, page selects the
// cases returned; other kinds ignore it.
func (s *Service) GetVersion(ctx context.Context, p auth.Principal, kind registry.Kind, id, version string, page CasePage) (VersionDoc, error) {
	var out VersionDoc
	err := s.transact(ctx, func(tx store.Tx) error {
		a := newAccess(ctx, tx, p)
		r, err := resolve(a, kind, id, version)
		if err != nil {
			return err
		}
		v := r.version
		out = VersionDoc{Owner: v.Owner, Version: v.Version, Digest: v.Digest, Spec: v.Spec, CaseCount: v.CaseCount, NextFrom: -1}
		if kind != registry.Dataset || page.Omit {
			return nil
		}
		f := store.CaseFilter{}
		if page.Paged {
			limit := page.Limit
			if limit <= 0 {
				limit = DefaultCasePage
			}
			// One more than asked tells whether another page follows.
			f = store.CaseFilter{FromOrd: page.From, Limit: limit + 1}
		}
		cases, err := tx.ListDatasetCases(ctx, v.Owner, v.ID, v.Version, f)
		if err != nil {
			return err
		}
		if page.Paged && len(cases) == f.Limit {
			cases = cases[:f.Limit-1]
			out.NextFrom = cases[len(cases)-1].Ord + 1
		}
		out.Spec, err = records.JoinDataset(v.Spec, cases)
		return err
	})
	return out, err
}

// TagsResult is the answer of a version-tags PUT.
type TagsResult struct {
	Kind    string   `json:"kind"`
	ID      string   `json:"id"`
	Version string   `json:"version"`
	Tags    []string `json:"tags"`
}

// SetTags replaces the tags of a live version the caller's workspace owns
// (spec §2.4): normalised, an empty list removes them all. A `_shared`,
// foreign, unknown or deleted version is 404; another team's entity 403.
// Tags are metadata: no version, no conflict.
func (s *Service) SetTags(ctx context.Context, p auth.Principal, kind registry.Kind, id, version string, tags []string) (TagsResult, error) {
	if err := registry.ValidateID(id); err != nil {
		return TagsResult{}, err
	}
	if err := registry.ValidateVersion(version); err != nil {
		return TagsResult{}, err
	}
	norm, err := registry.NormalizeTags(tags)
	if err != nil {
		return TagsResult{}, err
	}
	err = s.transact(ctx, func(tx store.Tx) error {
		if _, err := ownEntity(newAccess(ctx, tx, p), kind, id); err != nil {
			return err
		}
		err := tx.SetVersionTags(ctx, string(kind), p.Workspace, id, version, norm)
		if errors.Is(err, derrors.ErrNotFound) {
			return derrors.NotFoundf("no live version %s@%s of %s in this workspace", id, version, kind)
		}
		return err
	})
	if err != nil {
		return TagsResult{}, err
	}
	return TagsResult{Kind: string(kind), ID: id, Version: version, Tags: norm}, nil
}

// DeleteDatasetVersion soft-deletes (tombstones) an exact dataset version
// of the caller's workspace (spec §9.4). Only its creator or an admin may;
// registering identical content again revives it.
func (s *Service) DeleteDatasetVersion(ctx context.Context, p auth.Principal, id, version string) error {
	if err := registry.ValidateID(id); err != nil {
		return err
	}
	if err := registry.ValidateVersion(version); err != nil {
		// `latest` or a tag names no version that can be deleted: the
		// spec answers 404 (no such exact version), saying what to send.
		return derrors.NotFoundf("dataset %s has no version %q to delete: deleting needs an exact version (for example 1.0.0), not latest or a tag", id, version)
	}
	return s.transact(ctx, func(tx store.Tx) error {
		if _, err := ownEntity(newAccess(ctx, tx, p), registry.Dataset, id); err != nil {
			return err
		}
		v, err := tx.GetVersion(ctx, string(registry.Dataset), p.Workspace, id, version)
		if errors.Is(err, derrors.ErrNotFound) {
			return derrors.NotFoundf("dataset %s has no live version %q in this workspace to delete (deleting needs an exact version, not a tag or latest)", id, version)
		}
		if err != nil {
			return err
		}
		if err := auth.CheckCreatorOrAdmin(p, v.CreatedBy); err != nil {
			return derrors.Forbiddenf("only the creator of dataset %s@%s or an admin may delete it", id, version)
		}
		return tx.TombstoneVersion(ctx, string(registry.Dataset), p.Workspace, id, version, s.now())
	})
}

// DiffDatasets compares two versions of dataset id (either may be `latest`).
func (s *Service) DiffDatasets(ctx context.Context, p auth.Principal, id, base, candidate string) (registry.DatasetDiff, error) {
	var out registry.DatasetDiff
	err := s.transact(ctx, func(tx store.Tx) error {
		a := newAccess(ctx, tx, p)
		specs := make([]registry.Spec, 2)
		for i, want := range []string{base, candidate} {
			r, err := resolve(a, registry.Dataset, id, want)
			if err != nil {
				return err
			}
			if specs[i], err = loadSpec(a, r); err != nil {
				return err
			}
		}
		var err error
		out, err = registry.DiffDatasets(specs[0].Dataset(), specs[1].Dataset())
		return err
	})
	return out, err
}

// SpecRef identifies one side of a harness diff.
type SpecRef struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	Owner   string `json:"owner"`
	Digest  string `json:"digest"`
}

// HarnessDiff is GET /harnesses/:id/diff: configuration changes by field
// path between the resolved (template instances expanded) specs.
type HarnessDiff struct {
	Base      SpecRef                `json:"base"`
	Candidate SpecRef                `json:"candidate"`
	Changes   []registry.FieldChange `json:"changes"`
}

// DiffHarnesses compares two versions of harness id (either may be
// `latest`); an instance is compared as the harness it resolves to.
func (s *Service) DiffHarnesses(ctx context.Context, p auth.Principal, id, base, candidate string) (HarnessDiff, error) {
	var out HarnessDiff
	err := s.transact(ctx, func(tx store.Tx) error {
		a := newAccess(ctx, tx, p)
		docs := make([][]byte, 2)
		refs := make([]SpecRef, 2)
		for i, want := range []string{base, candidate} {
			r, err := resolve(a, registry.Harness, id, want)
			if err != nil {
				return err
			}
			spec, err := loadSpec(a, r)
			if err != nil {
				return err
			}
			if inst, ok := spec.Harness().Instance(); ok {
				if spec, err = resolveInstance(a, spec.Harness(), inst); err != nil {
					return err
				}
			}
			docs[i] = spec.Canonical()
			refs[i] = SpecRef{ID: id, Version: r.version.Version, Owner: r.version.Owner, Digest: r.version.Digest}
		}
		changes, err := registry.DiffSpecs(docs[0], docs[1])
		if err != nil {
			return err
		}
		out = HarnessDiff{Base: refs[0], Candidate: refs[1], Changes: changes}
		return nil
	})
	return out, err
}

// InstanceView is GET /harnesses/:id/:version/instance.
type InstanceView struct {
	ID       string         `json:"id"`
	Version  string         `json:"version"`
	Template registry.Ref   `json:"template"`
	Pins     map[string]any `json:"pins"`
}

// Instance returns the template reference and pins of harness id@version
// (which may be `latest`); a self-contained harness is 404, since it has
// no instance to show.
func (s *Service) Instance(ctx context.Context, p auth.Principal, id, version string) (InstanceView, error) {
	var out InstanceView
	err := s.transact(ctx, func(tx store.Tx) error {
		a := newAccess(ctx, tx, p)
		r, err := resolve(a, registry.Harness, id, version)
		if err != nil {
			return err
		}
		spec, err := loadSpec(a, r)
		if err != nil {
			return err
		}
		inst, ok := spec.Harness().Instance()
		if !ok {
			return derrors.NotFoundf("harness %s@%s is self-contained, not an instance of a template", id, r.version.Version)
		}
		pins := inst.Pins
		if pins == nil {
			pins = map[string]any{}
		}
		out = InstanceView{ID: id, Version: r.version.Version, Template: inst.Template, Pins: pins}
		return nil
	})
	return out, err
}

// Move transfers entity id of kind to team to ("" for workspace-owned),
// with all its versions, tombstones included (spec §5.8): the caller must
// be allowed to write in both teams; a `_shared` entity is 404, a move to
// the current team 409. It mints no version and appends `<kind>.moved`.
func (s *Service) Move(ctx context.Context, p auth.Principal, kind registry.Kind, id, to string) (Entry, error) {
	if err := registry.ValidateID(id); err != nil {
		return Entry{}, err
	}
	var out Entry
	err := s.transact(ctx, func(tx store.Tx) error {
		a := newAccess(ctx, tx, p)
		e, err := tx.GetEntity(ctx, string(kind), p.Workspace, id)
		if errors.Is(err, derrors.ErrNotFound) {
			// A `_shared` entity of that id is not the caller's to move:
			// the same 404 (auth.CheckTeamMove's rule).
			return derrors.NotFoundf("no %s %q in this workspace (shared entities cannot be moved); GET %s lists them", kind, id, listPath(kind))
		}
		if err != nil {
			return err
		}
		if ok, err := a.canRead(e); err != nil {
			return err
		} else if !ok {
			return derrors.NotFoundf("no %s %q in this workspace; GET %s lists them", kind, id, listPath(kind))
		}
		if to != "" {
			t, err := tx.GetTeam(ctx, p.Workspace, to)
			if errors.Is(err, derrors.ErrNotFound) {
				return derrors.NotFoundf("no team %q in this workspace; GET /teams lists them", to)
			}
			if err != nil {
				return err
			}
			if err := a.load(); err != nil {
				return err
			}
			if auth.CanReadTeamAsset(p, t.ID, t.Private, a.mine) != nil {
				return derrors.NotFoundf("no team %q in this workspace; GET /teams lists them", to)
			}
		}
		if err := a.load(); err != nil {
			return err
		}
		if err := auth.CheckTeamMove(p, e.Owner, e.TeamID, to, a.mine); err != nil {
			return err
		}
		if err := tx.MoveEntity(ctx, string(kind), p.Workspace, id, to); err != nil {
			return err
		}
		if err := s.event(ctx, tx, p, string(kind)+".moved", subject(kind, id, ""),
			map[string]any{"kind": kind, "id": id, "fromTeam": e.TeamID, "toTeam": to}); err != nil {
			return err
		}
		e.TeamID = to
		out = entry(e)
		return nil
	})
	return out, err
}

// Resolved is a version found by Resolve: where it was found and its typed
// spec (the domain's registry.Resolved, which the worker names too).
type Resolved = registry.Resolved

// Resolve finds id@version of kind (version may be `latest`) as p sees it,
// owner-first with `_shared` fallback, and parses its spec. Dispatch uses
// it to resolve `latest` when a job starts (spec §9.2).
func (s *Service) Resolve(ctx context.Context, p auth.Principal, kind registry.Kind, id, version string) (Resolved, error) {
	var out Resolved
	err := s.transact(ctx, func(tx store.Tx) error {
		a := newAccess(ctx, tx, p)
		r, err := resolve(a, kind, id, version)
		if err != nil {
			return err
		}
		spec, err := loadSpec(a, r)
		if err != nil {
			return err
		}
		if h := spec.Harness(); h != nil {
			if inst, ok := h.Instance(); ok {
				if spec, err = resolveInstance(a, h, inst); err != nil {
					return err
				}
			}
		}
		out = Resolved{Owner: r.version.Owner, Version: r.version.Version, Digest: r.version.Digest, Spec: spec}
		if t := r.entity.TeamID; t != "" && r.entity.Owner != registry.SharedOwner {
			if err := a.load(); err != nil {
				return err
			}
			if a.private[t] {
				out.PrivateTeam = t
			}
		}
		return nil
	})
	return out, err
}
