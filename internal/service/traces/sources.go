package traces

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/trace"
	"svc/internal/integrations/pull"
	"svc/internal/platform/derrors"
	"svc/internal/platform/netguard"
	"svc/internal/platform/secrets"
	"svc/store"
)

// Sources keeps a workspace's trace sources (spec §4.2):
// named connections to its observability platforms, and opens them. A
// source's credential is the value of a workspace secret that the source
// names (authSecret); it is opened only to build a pull.Client, after the
// secret's allowedHosts are checked to admit the source's endpoint, and
// every call dials through the address guard (SVC_WEBHOOK_ALLOW). No
// credential is ever stored in a source, returned, logged or quoted in an
// error.
//
// The API's trace-source routes, the pull ingest's submit (a source named
// in the request) and the pull activity (the fetch) all open sources here.
//
// Sources reads and writes trace sources and opens them.
type Sources struct {
	Store  Store
	Sealer *secrets.Sealer  // nil: no SVC_SECRET_KEY; a source with authSecret cannot be opened
	Guard  *netguard.Guard  // nil: no address check (tests only)
	Now    func() time.Time // time.Now when nil
}

func (s *Sources) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// Source is a trace source as the API shows it: its configuration (the
// secret's name, never its value) and who changed it when.
type Source struct {
	Name string `json:"name"`
	pull.Config
	CreatedBy string    `json:"createdBy,omitempty"`
	UpdatedBy string    `json:"updatedBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// namePattern is a source name: a path segment, as secret names are.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidName checks a source name; svc is reserved for the owned ledger.
func ValidName(name string) error {
	if len(name) > 128 || !namePattern.MatchString(name) {
		return derrors.Invalidf("trace source name: 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if name == pull.NameSVC {
		return derrors.Invalidf("trace source name %q is reserved for the owned trace ledger; choose another name", pull.NameSVC)
	}
	return nil
}

// Put declares (or replaces) the source name of p's workspace. The
// endpoint must pass the address guard; the secret need not exist yet.
func (s *Sources) Put(ctx context.Context, p auth.Principal, name string, cfg pull.Config) (Source, error) {
	if err := ValidName(name); err != nil {
		return Source{}, err
	}
	if err := s.check(ctx, cfg, ""); err != nil {
		return Source{}, err
	}
	doc, err := json.Marshal(cfg)
	if err != nil {
		return Source{}, fmt.Errorf("tracesources.Put: %w", err)
	}
	row, err := s.Store.PutTraceSource(ctx, store.TraceSource{Workspace: p.Workspace, Name: name, Doc: doc,
		CreatedBy: p.Subject, UpdatedBy: p.Subject, UpdatedAt: s.now()})
	if err != nil {
		return Source{}, err
	}
	return fromRow(row)
}

// check validates cfg (fields under prefix) and its endpoint's address.
func (s *Sources) check(ctx context.Context, cfg pull.Config, prefix string) error {
	if err := cfg.Validate(prefix); err != nil {
		return err
	}
	if cfg.AuthSecret != "" {
		if err := secrets.ValidName(cfg.AuthSecret); err != nil {
			return derrors.Invalidf("%sauthSecret: name the workspace secret holding the credential (PUT /secrets/:name), not the credential itself", prefix)
		}
	}
	if s.Guard != nil {
		if err := s.Guard.CheckURL(ctx, cfg.Endpoint); err != nil {
			return err
		}
	}
	return nil
}

// Check validates a source given inline in a request (fields under
// prefix) as Put would.
func (s *Sources) Check(ctx context.Context, cfg pull.Config, prefix string) error {
	return s.check(ctx, cfg, prefix)
}

func fromRow(row store.TraceSource) (Source, error) {
	var cfg pull.Config
	if err := json.Unmarshal(row.Doc, &cfg); err != nil {
		return Source{}, fmt.Errorf("trace source %q: %w", row.Name, err)
	}
	return Source{Name: row.Name, Config: cfg, CreatedBy: row.CreatedBy, UpdatedBy: row.UpdatedBy,
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt}, nil
}

// Get returns the source name of p's workspace; another workspace's is
// ErrNotFound, as an unknown one.
func (s *Sources) Get(ctx context.Context, p auth.Principal, name string) (Source, error) {
	if err := ValidName(name); err != nil {
		return Source{}, derrors.NotFoundf("trace source %q", clipName(name))
	}
	row, err := s.Store.GetTraceSource(ctx, p.Workspace, name)
	if err != nil {
		return Source{}, err
	}
	return fromRow(row)
}

// List returns the sources of p's workspace by name.
func (s *Sources) List(ctx context.Context, p auth.Principal) ([]Source, error) {
	rows, err := s.Store.ListTraceSources(ctx, p.Workspace)
	if err != nil {
		return nil, err
	}
	out := make([]Source, 0, len(rows))
	for _, r := range rows {
		src, err := fromRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, src)
	}
	return out, nil
}

// Delete removes the source name; an unknown name is ErrNotFound.
func (s *Sources) Delete(ctx context.Context, p auth.Principal, name string) error {
	if err := ValidName(name); err != nil {
		return derrors.NotFoundf("trace source %q", clipName(name))
	}
	return s.Store.DeleteTraceSource(ctx, p.Workspace, name)
}

// Client opens cfg for workspace: the credential from the secret store
// (when cfg names one), bound to the endpoint's host, and an HTTP client
// that dials through the guard. A secret that is missing, not bound to
// the host or cannot be opened is an ErrInvalid saying what to fix.
func (s *Sources) Client(ctx context.Context, workspace string, cfg pull.Config) (*pull.Client, error) {
	if err := s.check(ctx, cfg, "source."); err != nil {
		return nil, err
	}
	var cred string
	if cfg.AuthSecret != "" {
		sec, err := s.Store.GetSecret(ctx, workspace, cfg.AuthSecret)
		if errors.Is(err, derrors.ErrNotFound) {
			return nil, derrors.Invalidf("authSecret %q is not in the workspace secret store; PUT /secrets/%s with the %s credential first", cfg.AuthSecret, cfg.AuthSecret, cfg.Kind)
		}
		if err != nil {
			return nil, err
		}
		if err := netguard.CheckBound(sec.AllowedHosts, cfg.Endpoint); err != nil {
			var ub *netguard.UnboundError
			if errors.As(err, &ub) {
				ub.Field, ub.Secret = "authSecret", cfg.AuthSecret
			}
			return nil, err
		}
		if s.Sealer == nil {
			return nil, derrors.Invalidf("authSecret %q cannot be opened: SVC_SECRET_KEY is not set on this server", cfg.AuthSecret)
		}
		v, err := s.Sealer.Open(workspace, cfg.AuthSecret, sec.Ciphertext)
		if err != nil {
			return nil, derrors.Invalidf("authSecret %q cannot be opened with the current SVC_SECRET_KEY; store it again", cfg.AuthSecret)
		}
		cred = string(v)
	}
	var client *http.Client // pull.New's default: no guard (tests only)
	if s.Guard != nil {
		client = s.Guard.Client(pull.DefaultTimeout)
	}
	return pull.New(cfg, client, cred)
}

// Traces lists the recent traces of source name, with their metrics.
func (s *Sources) Traces(ctx context.Context, p auth.Principal, name string, limit int) ([]pull.Summary, error) {
	src, err := s.Get(ctx, p, name)
	if err != nil {
		return nil, err
	}
	c, err := s.Client(ctx, p.Workspace, src.Config)
	if err != nil {
		return nil, err
	}
	out, err := c.List(ctx, limit)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []pull.Summary{}
	}
	return out, nil
}

// SpanView is one span of an inspected trace: what the platform gave,
// flattened to attributes, before any mapping.
type SpanView struct {
	SpanID        string         `json:"spanId"`
	Name          string         `json:"name"`
	StartTime     *time.Time     `json:"startTime,omitempty"`
	EndTime       *time.Time     `json:"endTime,omitempty"`
	Error         bool           `json:"error,omitempty"`
	StatusMessage string         `json:"statusMessage,omitempty"`
	Attributes    map[string]any `json:"attributes"`
}

// Inspection is what a pull of one trace would seal, for tuning a
// mapping: the raw spans, the events the mapping makes of them and the
// evidence and usage graders and judges would see.
type Inspection struct {
	Source   string                `json:"source"`
	Kind     string                `json:"kind"`
	TraceID  string                `json:"traceId"`
	Mapping  trace.SpanAttrMapping `json:"mapping"`
	Spans    []SpanView            `json:"spans"`
	Events   []eval.TraceEvent     `json:"events"`
	Evidence eval.Evidence         `json:"evidence"`
	Usage    eval.Usage            `json:"usage"`
}

// Inspect reads one trace of source name and normalises it with the
// source's mapping overlaid by m (m's entries win), without sealing
// anything.
func (s *Sources) Inspect(ctx context.Context, p auth.Principal, name, traceID string, m trace.SpanAttrMapping) (Inspection, error) {
	if err := m.Validate(); err != nil {
		return Inspection{}, derrors.Invalidf("mapping.%v", err)
	}
	src, err := s.Get(ctx, p, name)
	if err != nil {
		return Inspection{}, err
	}
	c, err := s.Client(ctx, p.Workspace, src.Config)
	if err != nil {
		return Inspection{}, err
	}
	tr, err := c.Fetch(ctx, traceID)
	if err != nil {
		return Inspection{}, err
	}
	eff := src.Mapping.Overlay(m)
	events := tr.Events(eff)
	ev, u := eval.Extract(events, "")
	out := Inspection{Source: name, Kind: src.Kind, TraceID: tr.ID, Mapping: eff, Events: events, Evidence: ev, Usage: u, Spans: []SpanView{}}
	for _, sp := range tr.Spans {
		v := SpanView{SpanID: sp.SpanID, Name: sp.Name, Error: sp.Error, StatusMessage: sp.StatusMessage, Attributes: sp.Attributes}
		if !sp.Start.IsZero() {
			t := sp.Start
			v.StartTime = &t
		}
		if !sp.End.IsZero() {
			t := sp.End
			v.EndTime = &t
		}
		out.Spans = append(out.Spans, v)
	}
	return out, nil
}

func clipName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
