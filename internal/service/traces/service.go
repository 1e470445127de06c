// Package traces is the service of the OTLP door, the owned trace
// ledger's settings and the trace sources (sources.go) (spec §4.2, issue 16): it takes decoded OTLP exports,
// groups their spans by svc.run_id, normalises them (package trace) and
// keeps them until their trajectory is sealed; it reads and writes a
// workspace's ingestion quota, retention TTL, thresholds and the
// per-harness span attribute mappings; and it is the trace sweep, which
// seals idle external trajectories and deletes expired ones.
//
// The API and the MCP tools call it; the run activities call
// RunSpanEvents and LandCrossings where a run's trajectory is sealed.
package traces

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"svc/auth"
	"svc/internal/domain/registry"
	"svc/internal/domain/trace"
	"svc/internal/platform/derrors"
	"svc/internal/service/registries"
	"svc/store"
)

// Store is what the trace service uses of the store: the door's pending
// spans and settings, trajectories, the runs they seal onto, trace
// sources and the secrets their credentials name, workspaces and teams
// (audiences) and the event log, written in transactions.
type Store interface {
	store.TraceIngest
	store.TraceSources
	store.Trajectories
	store.Runs
	store.Secrets
	store.Workspaces
	store.Identity
	store.Events
	Transact(ctx context.Context, fn func(tx store.Tx) error) error
}

// Options are the dependencies and settings of a Service.
type Options struct {
	Store Store
	// Registries resolves a run's harness for its span attribute mapping;
	// nil maps with the conventions and overlays only.
	Registries *registries.Service
	// MaxEventsPerHour is SVC_INGEST_MAX_EVENTS_PER_HOUR: the quota of a
	// workspace without an override; 0 is unlimited.
	MaxEventsPerHour int64
	// RetentionDays is SVC_TRAJECTORY_RETENTION_DAYS; 0 keeps trajectories.
	RetentionDays int
	// IdleWindow is SVC_INGEST_IDLE_WINDOW: an external trajectory is
	// sealed once no span arrived for that long. 0 means 5 minutes.
	IdleWindow time.Duration
	Now        func() time.Time
	Logger     *slog.Logger
}

// Service is the trace ingestion service.
type Service struct{ o Options }

// New returns a Service.
func New(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.IdleWindow <= 0 {
		o.IdleWindow = 5 * time.Minute
	}
	o.MaxEventsPerHour = max(o.MaxEventsPerHour, 0)
	o.RetentionDays = max(o.RetentionDays, 0)
	return &Service{o: o}
}

func (s *Service) now() time.Time { return s.o.Now().UTC() }

// settings returns the workspace's stored settings, zero when none.
func settings(ctx context.Context, tx store.TraceIngest, workspace string) (store.TraceSettings, error) {
	st, err := tx.GetTraceSettings(ctx, workspace)
	if errors.Is(err, derrors.ErrNotFound) {
		return store.TraceSettings{Workspace: workspace}, nil
	}
	return st, err
}

// quota is the workspace's effective hourly quota; 0 is unlimited.
func (s *Service) quota(st store.TraceSettings) int64 {
	if st.MaxEventsPerHour != nil {
		return max(*st.MaxEventsPerHour, 0)
	}
	return s.o.MaxEventsPerHour
}

// retention is the workspace's effective retention in days; 0 keeps.
func (s *Service) retention(st store.TraceSettings) int {
	if st.RetentionDays != nil {
		return max(*st.RetentionDays, 0)
	}
	return s.o.RetentionDays
}

// Ingestion is GET /workspace/trace-ingestion: the effective quota and
// retention, where each comes from, and this hour's usage.
type Ingestion struct {
	// MaxEventsPerHour is the effective quota; 0 is unlimited.
	MaxEventsPerHour int64 `json:"maxEventsPerHour"`
	// MaxEventsPerHourOverride is the workspace's own, null when it uses
	// the deployment default (DefaultMaxEventsPerHour).
	MaxEventsPerHourOverride *int64 `json:"maxEventsPerHourOverride"`
	DefaultMaxEventsPerHour  int64  `json:"defaultMaxEventsPerHour"`
	// UsageLastHour counts the events accepted in the current hour window
	// [WindowStart, WindowEnd), which the quota bounds.
	UsageLastHour int64     `json:"usageLastHour"`
	WindowStart   time.Time `json:"windowStart"`
	WindowEnd     time.Time `json:"windowEnd"`
	// RetentionDays is the effective retention TTL; 0 keeps trajectories.
	RetentionDays         int        `json:"retentionDays"`
	RetentionDaysOverride *int       `json:"retentionDaysOverride"`
	DefaultRetentionDays  int        `json:"defaultRetentionDays"`
	UpdatedAt             *time.Time `json:"updatedAt,omitempty"`
	UpdatedBy             string     `json:"updatedBy,omitempty"`
}

// IngestionUpdate is the body of PUT /workspace/trace-ingestion. A field
// left out or null drops the workspace's override (the deployment default
// applies again).
type IngestionUpdate struct {
	MaxEventsPerHour *int64 `json:"maxEventsPerHour"`
	RetentionDays    *int   `json:"retentionDays"`
}

// Limits of the settings.
const (
	maxQuota         = 1 << 40
	maxRetentionDays = 36500
)

// Validate checks the bounds, naming the field.
func (u IngestionUpdate) Validate() error {
	if u.MaxEventsPerHour != nil && (*u.MaxEventsPerHour < 0 || *u.MaxEventsPerHour > maxQuota) {
		return derrors.Invalidf("maxEventsPerHour: %d is not between 0 (unlimited) and %d", *u.MaxEventsPerHour, int64(maxQuota))
	}
	if u.RetentionDays != nil && (*u.RetentionDays < 0 || *u.RetentionDays > maxRetentionDays) {
		return derrors.Invalidf("retentionDays: %d is not between 0 (kept) and %d", *u.RetentionDays, maxRetentionDays)
	}
	return nil
}

// window is the hour the quota counts at t.
func window(t time.Time) time.Time { return t.UTC().Truncate(time.Hour) }

// GetIngestion reads the workspace's ingestion settings and usage.
func (s *Service) GetIngestion(ctx context.Context, p auth.Principal) (Ingestion, error) {
	st, err := settings(ctx, s.o.Store, p.Workspace)
	if err != nil {
		return Ingestion{}, err
	}
	w := window(s.now())
	used, err := s.o.Store.GetTraceUsage(ctx, p.Workspace, w)
	if err != nil {
		return Ingestion{}, err
	}
	out := Ingestion{
		MaxEventsPerHour: s.quota(st), MaxEventsPerHourOverride: st.MaxEventsPerHour, DefaultMaxEventsPerHour: s.o.MaxEventsPerHour,
		UsageLastHour: used, WindowStart: w, WindowEnd: w.Add(time.Hour),
		RetentionDays: s.retention(st), RetentionDaysOverride: st.RetentionDays, DefaultRetentionDays: s.o.RetentionDays,
		UpdatedBy: st.UpdatedBy,
	}
	if !st.UpdatedAt.IsZero() {
		at := st.UpdatedAt
		out.UpdatedAt = &at
	}
	return out, nil
}

// PutIngestion replaces the workspace's quota and retention overrides.
func (s *Service) PutIngestion(ctx context.Context, p auth.Principal, u IngestionUpdate) (Ingestion, error) {
	if err := u.Validate(); err != nil {
		return Ingestion{}, err
	}
	err := s.o.Store.Transact(ctx, func(tx store.Tx) error {
		st, err := settings(ctx, tx, p.Workspace)
		if err != nil {
			return err
		}
		st.MaxEventsPerHour, st.RetentionDays = u.MaxEventsPerHour, u.RetentionDays
		st.UpdatedBy, st.UpdatedAt = p.Subject, s.now()
		_, err = tx.PutTraceSettings(ctx, st)
		return err
	})
	if err != nil {
		return Ingestion{}, err
	}
	return s.GetIngestion(ctx, p)
}

// thresholds decodes the stored thresholds; none is the zero value.
func thresholds(st store.TraceSettings) (trace.Thresholds, error) {
	var t trace.Thresholds
	if len(st.Thresholds) == 0 {
		return t, nil
	}
	if err := json.Unmarshal(st.Thresholds, &t); err != nil {
		return trace.Thresholds{}, err
	}
	return t, nil
}

// GetThresholds reads the workspace's trace thresholds ({} when none).
func (s *Service) GetThresholds(ctx context.Context, p auth.Principal) (trace.Thresholds, error) {
	st, err := settings(ctx, s.o.Store, p.Workspace)
	if err != nil {
		return trace.Thresholds{}, err
	}
	return thresholds(st)
}

// PutThresholds replaces the workspace's trace thresholds.
func (s *Service) PutThresholds(ctx context.Context, p auth.Principal, t trace.Thresholds) (trace.Thresholds, error) {
	if err := t.Validate(); err != nil {
		return trace.Thresholds{}, derrors.Invalidf("%v", err)
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return trace.Thresholds{}, err
	}
	err = s.o.Store.Transact(ctx, func(tx store.Tx) error {
		st, err := settings(ctx, tx, p.Workspace)
		if err != nil {
			return err
		}
		st.Thresholds, st.UpdatedBy, st.UpdatedAt = raw, p.Subject, s.now()
		_, err = tx.PutTraceSettings(ctx, st)
		return err
	})
	if err != nil {
		return trace.Thresholds{}, err
	}
	return t, nil
}

// Mapping is GET /harnesses/:id/span-attr-mapping: the harness spec's
// mapping (meta.spanAttrMapping of its latest version), the workspace's
// overlay, and the effective mapping normalisation uses.
type Mapping struct {
	HarnessID string                 `json:"harnessId"`
	Version   string                 `json:"version"` // the version the spec mapping was read from
	Spec      trace.SpanAttrMapping  `json:"spec"`
	Overlay   *trace.SpanAttrMapping `json:"overlay"`
	Effective trace.SpanAttrMapping  `json:"effective"`
	UpdatedAt *time.Time             `json:"updatedAt,omitempty"`
	UpdatedBy string                 `json:"updatedBy,omitempty"`
}

// GetMapping reads a harness's mapping; a harness the caller cannot see
// (another workspace's, a private team's) is 404.
func (s *Service) GetMapping(ctx context.Context, p auth.Principal, harnessID string) (Mapping, error) {
	if err := registry.ValidateID(harnessID); err != nil {
		return Mapping{}, err
	}
	if s.o.Registries == nil {
		return Mapping{}, derrors.NotFoundf("no harness %q", harnessID)
	}
	r, err := s.o.Registries.Resolve(ctx, p, registry.Harness, harnessID, registry.LatestVersion)
	if err != nil {
		return Mapping{}, err
	}
	out := Mapping{HarnessID: harnessID, Version: r.Version}
	if h := r.Spec.Harness(); h != nil {
		// A spec registered before mappings were read may hold a malformed
		// one: it then maps nothing, and the overlay can replace it.
		out.Spec, _ = trace.MappingFromMeta(h.Meta)
	}
	out.Effective = out.Spec
	stored, err := s.o.Store.GetSpanAttrMapping(ctx, p.Workspace, harnessID)
	switch {
	case errors.Is(err, derrors.ErrNotFound):
	case err != nil:
		return Mapping{}, err
	default:
		var m trace.SpanAttrMapping
		if err := json.Unmarshal(stored.Mapping, &m); err != nil {
			return Mapping{}, err
		}
		out.Overlay, out.Effective = &m, out.Spec.Overlay(m)
		at := stored.UpdatedAt
		out.UpdatedAt, out.UpdatedBy = &at, stored.UpdatedBy
	}
	return out, nil
}

// PutMapping replaces a harness's overlay. The harness must be one the
// caller sees (404 otherwise); writing the overlay of another team's
// harness is 403, as writing the harness would be.
func (s *Service) PutMapping(ctx context.Context, p auth.Principal, harnessID string, m trace.SpanAttrMapping) (Mapping, error) {
	if err := registry.ValidateID(harnessID); err != nil {
		return Mapping{}, err
	}
	if err := m.Validate(); err != nil {
		return Mapping{}, derrors.Invalidf("%v", err)
	}
	if s.o.Registries == nil {
		return Mapping{}, derrors.NotFoundf("no harness %q", harnessID)
	}
	e, err := s.o.Registries.Entity(ctx, p, registry.Harness, harnessID)
	if err != nil {
		return Mapping{}, err
	}
	if e.TeamID != "" && e.Owner == p.Workspace {
		mine, err := s.o.Store.TeamsOf(ctx, p.Workspace, p.Subject)
		if err != nil {
			return Mapping{}, err
		}
		if err := auth.CanWriteTeamAsset(p, e.TeamID, mine); err != nil {
			return Mapping{}, err
		}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return Mapping{}, err
	}
	if _, err := s.o.Store.PutSpanAttrMapping(ctx, store.SpanAttrMapping{Workspace: p.Workspace, HarnessID: harnessID,
		Mapping: raw, UpdatedBy: p.Subject, UpdatedAt: s.now()}); err != nil {
		return Mapping{}, err
	}
	return s.GetMapping(ctx, p, harnessID)
}

// harnessMapping is the effective mapping of a harness for normalising
// the spans of one of its runs: its spec's, overlaid by the workspace's.
// A harness that cannot be resolved maps with the overlay alone.
func (s *Service) harnessMapping(ctx context.Context, p auth.Principal, h registry.Ref) trace.SpanAttrMapping {
	var m trace.SpanAttrMapping
	if h.ID == "" {
		return m
	}
	if s.o.Registries != nil {
		if r, err := s.o.Registries.Resolve(ctx, p, registry.Harness, h.ID, h.Version); err == nil {
			if hs := r.Spec.Harness(); hs != nil {
				m, _ = trace.MappingFromMeta(hs.Meta)
			}
		}
	}
	stored, err := s.o.Store.GetSpanAttrMapping(ctx, p.Workspace, h.ID)
	if err != nil {
		return m
	}
	var over trace.SpanAttrMapping
	if json.Unmarshal(stored.Mapping, &over) == nil {
		m = m.Overlay(over)
	}
	return m
}
