// Package registries is the service layer of the versioned registries (spec
// §4.3, §9): it joins the pure domain of package registry to the store, the
// team axis of package auth, the event log and the secret store. The HTTP
// handlers of package api bind a request, call one method here and encode
// the answer.
//
// Every method takes the caller's Principal: the workspace it acts in, and
// who it is for the team checks (spec §5.8). Errors wrap the derrors
// sentinels and carry messages written for the client; a store error never
// reaches a client as text, because its wording names internals.
package registries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"svc/auth"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/internal/platform/netguard"
	"svc/internal/platform/secrets"
	"svc/store"
	"svc/store/records"
)

// Store is what the registry service uses of the store: the versioned
// registries, secrets, teams (a spec's team and the caller's membership)
// and the event log (moves and tag changes), written in transactions.
type Store interface {
	store.Registry
	store.Secrets
	store.Identity
	store.Events
	Transact(ctx context.Context, fn func(tx store.Tx) error) error
}

// Service performs registry operations on behalf of a caller.
type Service struct {
	store      Store
	sealer     *secrets.Sealer
	now        func() time.Time
	probeGuard *netguard.Guard // nil: the drivers' closed default
	probers    Probers
	// k8sOperatorNamespaces: SVC_K8S_OPERATOR_NAMESPACES.
	k8sOperatorNamespaces []string
}

// Option adjusts a Service.
type Option func(*Service)

// WithProbeGuard makes runtime probes dial through g (built from
// SVC_PROBE_ALLOW by netguard.NewProbeGuard). Without it probes refuse every
// private, loopback and link-local address.
func WithProbeGuard(g *netguard.Guard) Option {
	return func(s *Service) { s.probeGuard = g }
}

// New returns a Service over st. sealer may be nil (no SVC_SECRET_KEY): the
// secret routes then refuse to store values and probes cannot open secrets.
// now is the clock; time.Now when nil.
func New(st Store, sealer *secrets.Sealer, now func() time.Time, opts ...Option) *Service {
	if now == nil {
		now = time.Now
	}
	s := &Service{store: st, sealer: sealer, now: now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// VersionInfo is registry.VersionInfo, the answer of a registration
// (defined in the domain so the API client reads it without this service).
type VersionInfo = registry.VersionInfo

func versionInfo(v store.EntityVersion, created bool) VersionInfo {
	tags := v.Tags
	if tags == nil {
		tags = []string{}
	}
	return VersionInfo{Kind: v.Kind, Owner: v.Owner, ID: v.ID, Version: v.Version, Digest: v.Digest,
		CaseCount: v.CaseCount, Tags: tags, Origin: canonicalOrigin(v.Origin), CreatedBy: v.CreatedBy, CreatedAt: v.CreatedAt, Created: created}
}

// Entry is an entity as the list and GET /harnesses/:id show it: the
// registry metadata of spec §2.4, kept outside the immutable specs.
type Entry struct {
	Kind      string    `json:"kind"`
	Owner     string    `json:"owner"`
	ID        string    `json:"id"`
	TeamID    string    `json:"teamId,omitempty"`
	CreatedBy string    `json:"createdBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// Versions are the live versions in registration order.
	Versions []string `json:"versions"`
	// Latest is the version `latest` resolves to.
	Latest         string                     `json:"latest"`
	VersionTags    map[string][]string        `json:"versionTags"`
	VersionDates   map[string]time.Time       `json:"versionDates"`
	VersionOrigins map[string]json.RawMessage `json:"versionOrigins"`
}

func entry(e store.Entity) Entry {
	out := Entry{Kind: e.Kind, Owner: e.Owner, ID: e.ID, TeamID: e.TeamID, CreatedBy: e.CreatedBy, CreatedAt: e.CreatedAt,
		Versions: []string{}, VersionTags: map[string][]string{}, VersionDates: map[string]time.Time{},
		VersionOrigins: map[string]json.RawMessage{}}
	for _, v := range e.Versions {
		out.Versions = append(out.Versions, v.Version)
		tags := v.Tags
		if tags == nil {
			tags = []string{}
		}
		out.VersionTags[v.Version] = tags
		out.VersionDates[v.Version] = v.CreatedAt
		if len(v.Origin) > 0 {
			out.VersionOrigins[v.Version] = canonicalOrigin(v.Origin)
		}
	}
	if l, ok := registry.ResolveLatest(e.Versions); ok {
		out.Latest = l.Version
	}
	return out
}

// canonicalOrigin gives a stored origin the same bytes on both stores
// (PostgreSQL's jsonb re-spaces documents).
func canonicalOrigin(o json.RawMessage) json.RawMessage {
	if len(o) == 0 {
		return nil
	}
	if c, err := registry.CanonicalJSON(o); err == nil {
		return c
	}
	return o
}

// access answers the team questions about one caller, loading the
// caller's teams and the workspace's private teams only when an asset
// actually belongs to a team.
type access struct {
	ctx     context.Context
	tx      store.Tx
	p       auth.Principal
	loaded  bool
	mine    []string
	private map[string]bool
}

func newAccess(ctx context.Context, tx store.Tx, p auth.Principal) *access {
	return &access{ctx: ctx, tx: tx, p: p}
}

func (a *access) load() error {
	if a.loaded {
		return nil
	}
	mine, err := a.tx.TeamsOf(a.ctx, a.p.Workspace, a.p.Subject)
	if err != nil {
		return err
	}
	teams, err := a.tx.ListTeams(a.ctx, a.p.Workspace)
	if err != nil {
		return err
	}
	a.private = map[string]bool{}
	for _, t := range teams {
		a.private[t.ID] = t.Private
	}
	a.mine, a.loaded = mine, true
	return nil
}

// canRead reports whether the caller sees e: `_shared` and workspace-owned
// entities always, a team's unless the team is private to others.
func (a *access) canRead(e store.Entity) (bool, error) {
	if e.Owner == registry.SharedOwner || e.TeamID == "" {
		return true, nil
	}
	if err := a.load(); err != nil {
		return false, err
	}
	return auth.CanReadTeamAsset(a.p, e.TeamID, a.private[e.TeamID], a.mine) == nil, nil
}

// canWrite is nil when the caller may change e (403 otherwise).
func (a *access) canWrite(e store.Entity) error {
	if e.TeamID == "" {
		return nil
	}
	if err := a.load(); err != nil {
		return err
	}
	return auth.CanWriteTeamAsset(a.p, e.TeamID, a.mine)
}

// ownEntity returns the caller's workspace's entity id of kind for a
// write: 404 when absent or invisible (a private team's), 403 when visible
// but not writable.
func ownEntity(a *access, kind registry.Kind, id string) (store.Entity, error) {
	e, err := a.tx.GetEntity(a.ctx, string(kind), a.p.Workspace, id)
	if errors.Is(err, derrors.ErrNotFound) {
		return store.Entity{}, derrors.NotFoundf("no %s %q in this workspace; GET %s lists them", kind, id, listPath(kind))
	}
	if err != nil {
		return store.Entity{}, err
	}
	if ok, err := a.canRead(e); err != nil {
		return store.Entity{}, err
	} else if !ok {
		return store.Entity{}, derrors.NotFoundf("no %s %q in this workspace; GET %s lists them", kind, id, listPath(kind))
	}
	if err := a.canWrite(e); err != nil {
		return store.Entity{}, err
	}
	return e, nil
}

// listPath is the collection route of kind, for messages.
func listPath(kind registry.Kind) string {
	switch kind {
	case registry.HarnessTemplate:
		return "/harness-templates"
	case registry.Harness:
		return "/harnesses"
	}
	return "/" + string(kind) + "s"
}

// transact runs fn in one transaction and returns fn's own error as it is:
// the store wraps errors with its method names, which are for logs, while
// the errors fn returns are written for the client.
func (s *Service) transact(ctx context.Context, fn func(tx store.Tx) error) error {
	var inner error
	err := s.store.Transact(ctx, func(tx store.Tx) error {
		inner = fn(tx)
		return inner
	})
	if inner != nil {
		return inner
	}
	return err
}

// resolved is a version found by an owner-first lookup, with its entity.
type resolved struct {
	entity  store.Entity
	version store.EntityVersion // with its spec (for a dataset, the header)
}

// resolve finds id@want (an exact version or `latest`) of kind: in the
// caller's workspace first, then among `_shared` entities (spec §9.3).
// An entity of a private team the caller is not in counts as absent.
func resolve(a *access, kind registry.Kind, id, want string) (resolved, error) {
	if err := registry.ValidateID(id); err != nil {
		return resolved{}, err
	}
	if err := registry.ValidateVersionSelector(want); err != nil {
		return resolved{}, err
	}
	for _, owner := range []string{a.p.Workspace, registry.SharedOwner} {
		e, err := a.tx.GetEntity(a.ctx, string(kind), owner, id)
		if errors.Is(err, derrors.ErrNotFound) {
			continue
		}
		if err != nil {
			return resolved{}, err
		}
		if ok, err := a.canRead(e); err != nil {
			return resolved{}, err
		} else if !ok {
			continue
		}
		v, ok := registry.Resolve(e.Versions, want)
		if !ok {
			continue
		}
		full, err := a.tx.GetVersion(a.ctx, string(kind), owner, id, v.Version)
		if errors.Is(err, derrors.ErrNotFound) {
			continue // deleted between the two reads
		}
		if err != nil {
			return resolved{}, err
		}
		return resolved{entity: e, version: full}, nil
	}
	return resolved{}, derrors.NotFoundf("no %s %s@%s in this workspace or among shared ones; GET %s lists them", kind, id, want, listPath(kind))
}

// loadSpec parses a resolved version back into its typed spec; for a
// dataset it joins every case first.
func loadSpec(a *access, r resolved) (registry.Spec, error) {
	kind, err := registry.ParseKind(r.version.Kind)
	if err != nil {
		return registry.Spec{}, err
	}
	raw := []byte(r.version.Spec)
	if kind == registry.Dataset {
		cases, err := a.tx.ListDatasetCases(a.ctx, r.version.Owner, r.version.ID, r.version.Version, store.CaseFilter{})
		if err != nil {
			return registry.Spec{}, err
		}
		if raw, err = records.JoinDataset(r.version.Spec, cases); err != nil {
			return registry.Spec{}, err
		}
	}
	s, err := registry.Parse(kind, raw, false)
	if err != nil {
		// A stored spec that no longer parses is our fault, not the caller's.
		return registry.Spec{}, fmt.Errorf("service: stored %s %s@%s of %q does not parse: %v", kind, r.version.ID, r.version.Version, r.version.Owner, err)
	}
	return s, nil
}

// event appends a registry event (spec §6) for the caller's workspace.
func (s *Service) event(ctx context.Context, tx store.Tx, p auth.Principal, typ, subject string, data map[string]any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	_, err = tx.AppendEvent(ctx, store.Event{Workspace: p.Workspace, Type: typ, Subject: subject, Actor: p.Subject,
		CausedBy: p.Agent.CausedBy(), Data: b, CreatedAt: s.now()})
	return err
}

// subject names a version in events: "dataset:qa@1.0.0".
func subject(kind registry.Kind, id, version string) string {
	if version == "" {
		return string(kind) + ":" + id
	}
	return string(kind) + ":" + id + "@" + version
}
