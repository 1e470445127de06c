package registries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"svc/auth"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
)

// ConflictError is the 409 of a registration: id@version is registered in
// the workspace with other content. It names both digests so a client can
// tell which copy it holds.
type ConflictError struct {
	Kind    registry.Kind
	ID      string
	Version string
	// StoredDigest is the digest already registered; empty when the
	// registered version is deleted (a tombstone still holds its content).
	StoredDigest string
	Digest       string // of the refused body
}

// Error says what conflicts and how to proceed.
func (e *ConflictError) Error() string {
	stored := e.StoredDigest
	if stored == "" {
		stored = "that of a deleted version"
	}
	return fmt.Sprintf("%s %s@%s is already registered with other content (digest %s; this body's is %s); versions are immutable: register a new version",
		e.Kind, e.ID, e.Version, stored, e.Digest)
}

// Unwrap makes errors.Is(err, derrors.ErrConflict) hold.
func (e *ConflictError) Unwrap() error { return derrors.ErrConflict }

// ErrorDetails names both digests for the error body (derrors.Details), so
// a client can tell which copy it holds.
func (e *ConflictError) ErrorDetails() map[string]any {
	return map[string]any{"id": e.ID, "version": e.Version, "storedDigest": e.StoredDigest, "digest": e.Digest}
}

// Register stores the spec raw of kind as a new version in the caller's
// workspace (spec §4.3). It returns Created false when the same content was
// already registered (idempotent; a deleted version is revived), and a
// *ConflictError when id@version holds other content. origin, when not nil,
// is a CapabilityOrigin stamped on the version unless one is stamped
// already (the first answer wins, never a conflict). A harness instance
// must resolve against its template. Only a creation appends
// `<kind>.registered` to the event log.
func (s *Service) Register(ctx context.Context, p auth.Principal, kind registry.Kind, raw, origin []byte) (VersionInfo, error) {
	spec, err := registry.Parse(kind, raw, true)
	if err != nil {
		return VersionInfo{}, err
	}
	originJSON, err := agentOrigin(p, origin)
	if err != nil {
		return VersionInfo{}, err
	}
	v, cases, err := records.VersionRecord(p.Workspace, spec)
	if err != nil {
		return VersionInfo{}, err
	}
	v.CreatedBy, v.CreatedAt = p.Subject, s.now()

	var out VersionInfo
	err = s.transact(ctx, func(tx store.Tx) error {
		a := newAccess(ctx, tx, p)
		if err := checkInstance(a, spec); err != nil {
			return err
		}
		if err := checkSecretsUse(a, p, spec); err != nil {
			return err
		}
		if rt := spec.Runtime(); rt != nil {
			if err := s.checkRuntimeBindings(ctx, tx, p, rt); err != nil {
				return err
			}
		}
		// A new version of an existing entity is a write to it: another
		// team's entity is 403, a private team's invisible one 404. The
		// team is read even when every version is tombstoned, so deleting
		// a dataset's versions does not open it to other teams.
		if team, err := tx.EntityTeam(ctx, string(kind), p.Workspace, spec.ID()); err == nil {
			e := store.Entity{Kind: string(kind), Owner: p.Workspace, ID: spec.ID(), TeamID: team}
			if ok, err := a.canRead(e); err != nil {
				return err
			} else if !ok {
				return derrors.NotFoundf("no %s %q in this workspace; GET %s lists them", kind, spec.ID(), listPath(kind))
			}
			if err := a.canWrite(e); err != nil {
				return err
			}
		} else if !errors.Is(err, derrors.ErrNotFound) {
			return err
		}
		stored, created, err := tx.RegisterVersion(ctx, v, "", cases)
		if errors.Is(err, derrors.ErrConflict) {
			ce := &ConflictError{Kind: kind, ID: spec.ID(), Version: spec.Version(), Digest: spec.Digest()}
			if cur, gerr := tx.GetVersion(ctx, string(kind), p.Workspace, spec.ID(), spec.Version()); gerr == nil {
				ce.StoredDigest = cur.Digest
			}
			return ce
		}
		if err != nil {
			return err
		}
		if originJSON != nil {
			if stored.Origin, err = tx.StampVersionOrigin(ctx, string(kind), p.Workspace, spec.ID(), spec.Version(), originJSON); err != nil {
				return err
			}
		}
		if created {
			if err := s.event(ctx, tx, p, string(kind)+".registered", subject(kind, spec.ID(), spec.Version()),
				map[string]any{"kind": kind, "id": spec.ID(), "version": spec.Version(), "digest": spec.Digest()}); err != nil {
				return err
			}
		}
		out = versionInfo(stored, created)
		return nil
	})
	return out, err
}

// checkInstance refuses a harness instance whose template cannot be found
// (owner-first, `_shared` fallback) or whose pins do not resolve against it.
// Other specs pass.
func checkInstance(a *access, spec registry.Spec) error {
	h := spec.Harness()
	if h == nil {
		return nil
	}
	inst, ok := h.Instance()
	if !ok {
		return nil
	}
	_, err := resolveInstance(a, h, inst)
	return err
}

// resolveInstance returns the self-contained harness an instance stands for.
func resolveInstance(a *access, h *registry.HarnessSpec, inst registry.Instance) (registry.Spec, error) {
	r, err := resolve(a, registry.HarnessTemplate, inst.Template.ID, inst.Template.Version)
	if errors.Is(err, derrors.ErrNotFound) {
		return registry.Spec{}, &registry.ValidationError{Kind: registry.Harness, Problems: []registry.Problem{{
			Path: "template", Message: fmt.Sprintf("harness template %s is not registered in this workspace or among shared ones; register it first (POST /harness-templates)", inst.Template),
		}}}
	}
	if err != nil {
		return registry.Spec{}, err
	}
	ts, err := loadSpec(a, r)
	if err != nil {
		return registry.Spec{}, err
	}
	return registry.ResolveInstance(ts.HarnessTemplate(), h)
}

// Validation is the answer of a dry run (POST /<kind>s/validate).
type Validation struct {
	// Valid is true when the spec passes every rule; Problems say why not.
	Valid    bool               `json:"valid"`
	Kind     string             `json:"kind"`
	ID       string             `json:"id,omitempty"`
	Version  string             `json:"version,omitempty"`
	Digest   string             `json:"digest,omitempty"`
	Problems []registry.Problem `json:"problems"`
	// ExistingVersions are the id's live versions in the workspace, in
	// registration order.
	ExistingVersions []string `json:"existingVersions"`
	// Identical is true when id@version is registered with this very
	// content: registering again is an idempotent 200.
	Identical bool `json:"identical"`
	// Conflict is true when id@version is registered with other content:
	// registering would be 409. StoredDigest is that content's digest.
	Conflict     bool   `json:"conflict"`
	StoredDigest string `json:"storedDigest,omitempty"`
	// MissingSecrets are the secret names the spec references that the
	// workspace secret store lacks; non-blocking (store them before use).
	MissingSecrets []string `json:"missingSecrets"`
}

// Validate is the dry run of Register: it parses and checks raw, and
// reports the existing versions, whether registering would conflict and,
// for specs that reference secrets (runtimes, harnesses), which are not
// stored yet. It writes nothing. A spec that breaks rules is a Validation
// with Valid false, not an error.
func (s *Service) Validate(ctx context.Context, p auth.Principal, kind registry.Kind, raw []byte) (Validation, error) {
	out := Validation{Kind: string(kind), Problems: []registry.Problem{}, ExistingVersions: []string{}, MissingSecrets: []string{}}
	spec, err := registry.Parse(kind, raw, true)
	if err != nil {
		return out, problems(&out, err)
	}
	out.ID, out.Version, out.Digest = spec.ID(), spec.Version(), spec.Digest()
	err = s.transact(ctx, func(tx store.Tx) error {
		a := newAccess(ctx, tx, p)
		if err := checkInstance(a, spec); err != nil {
			return problems(&out, err)
		}
		e, err := tx.GetEntity(ctx, string(kind), p.Workspace, spec.ID())
		switch {
		case err == nil:
			if ok, err := a.canRead(e); err != nil {
				return err
			} else if ok {
				for _, v := range e.Versions {
					out.ExistingVersions = append(out.ExistingVersions, v.Version)
					if v.Version == spec.Version() {
						out.Identical = v.Digest == spec.Digest()
						out.Conflict = !out.Identical
						if out.Conflict {
							out.StoredDigest = v.Digest
						}
					}
				}
			}
		case !errors.Is(err, derrors.ErrNotFound):
			return err
		}
		for _, name := range spec.SecretNames() {
			if _, err := tx.GetSecret(ctx, p.Workspace, name); errors.Is(err, derrors.ErrNotFound) {
				out.MissingSecrets = append(out.MissingSecrets, name)
			} else if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Validation{}, err
	}
	out.Valid = len(out.Problems) == 0
	return out, nil
}

// problems records a refusal of the spec in out; any other error is
// returned.
func problems(out *Validation, err error) error {
	var ve *registry.ValidationError
	switch {
	case errors.As(err, &ve):
		out.Problems = append(out.Problems, ve.Problems...)
		if ve.Truncated > 0 {
			out.Problems = append(out.Problems, registry.Problem{Message: fmt.Sprintf("and %d more problems", ve.Truncated)})
		}
	case errors.Is(err, derrors.ErrInvalid):
		out.Problems = append(out.Problems, registry.Problem{Message: err.Error()})
	default:
		return err
	}
	return nil
}

// agentOrigin is the CapabilityOrigin a registration stamps: the one given,
// with the declared agent's id, name and conversation filling the fields it
// leaves empty (docs/agents.md). An agent's registration without one is
// stamped {via: ci} (a machine door; a tool call always gives via mcp).
// Nil when neither an origin nor an agent is given.
func agentOrigin(p auth.Principal, raw []byte) (json.RawMessage, error) {
	if raw == nil && p.Agent == nil {
		return nil, nil
	}
	o := registry.CapabilityOrigin{Via: registry.ViaCI}
	if raw != nil {
		var err error
		if o, _, err = registry.ParseOrigin(raw); err != nil {
			return nil, err
		}
	}
	if a := p.Agent; a != nil {
		if o.AgentID == "" {
			o.AgentID = a.ID
		}
		if o.AgentName == "" {
			o.AgentName = a.Name
		}
		if o.ConversationID == "" {
			o.ConversationID = a.Conversation
		}
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	b, err := registry.CanonicalJSON(o)
	return json.RawMessage(b), err
}
