// Package pull reads traces from a workspace's observability platform
// (spec §4.5, POST /scorecards/ingest/pull; §4.2, trace sources): Langfuse,
// LangSmith, Phoenix, MLflow and any OTLP-JSON trace query API (Jaeger's
// /api/v3/traces/{id}, Tempo's), each through the platform's documented
// public HTTP API. Every platform's spans are converted to traces.Span
// (its native fields become OpenTelemetry GenAI or OpenInference
// attributes, its metadata metadata.<key>), so one normaliser
// (traces.Normalize, with a span attribute mapping) makes TraceEvents of
// them all.
//
// A Client holds the credential (the value of a workspace secret) and an
// HTTP client that dials through the address guard; neither the credential
// nor a URL carrying one appears in an error.
package pull

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	"svc/internal/domain/eval"
	"svc/internal/domain/trace"
	"svc/internal/platform/derrors"
	"svc/internal/platform/netguard"
)

// The kinds of source a pull reads.
const (
	KindLangfuse  = "langfuse"
	KindLangSmith = "langsmith"
	KindPhoenix   = "phoenix"
	KindMLflow    = "mlflow"
	KindOTel      = "otel"
	// NameSVC is the reserved source name of the owned trace ledger.
	NameSVC = "svc"
)

// Kinds are the remote kinds, in the order the docs list them.
var Kinds = []string{KindLangfuse, KindLangSmith, KindPhoenix, KindMLflow, KindOTel}

// Limits of one pull.
const (
	// MaxResponseBytes bounds one response of a platform.
	MaxResponseBytes = 32 << 20
	// DefaultTimeout bounds one request to a platform.
	DefaultTimeout = 30 * time.Second
	// maxPages bounds the pages of one trace's spans.
	maxPages = 20
	// MaxList bounds the traces of one listing.
	MaxList = 100
)

// Setting is the operator setting whose allow list the pull guard reads:
// the webhook guard's (SVC_WEBHOOK_ALLOW), as model calls do, so one list
// admits the service's private outbound targets.
const Setting = "SVC_WEBHOOK_ALLOW"

// NewGuard builds the address guard pulls dial through from allow (the
// value of SVC_WEBHOOK_ALLOW).
func NewGuard(allow string) (*netguard.Guard, error) {
	return netguard.New(allow, netguard.Names{Setting: Setting, Field: "source.endpoint", Target: "trace source",
		UserinfoHint: "put the credential in the workspace secret named by authSecret"})
}

// Config is where and how to read a platform: its kind, the API's base
// URL, the project (Langfuse needs none; LangSmith's project id, Phoenix's
// project name, MLflow's experiment id, the OTel service name to list) and
// how runs[].runId finds a trace (Correlate).
type Config struct {
	Kind     string `json:"kind"`
	Endpoint string `json:"endpoint"`
	// AuthSecret names the workspace secret holding the credential.
	AuthSecret string `json:"authSecret,omitempty"`
	Project    string `json:"project,omitempty"`
	// Correlate says what a runId is: "" or "traceId" (the platform's
	// trace id), or "metadata:<key>" (the trace whose metadata or tag
	// <key> equals the runId; LangSmith and MLflow).
	Correlate string `json:"correlate,omitempty"`
	// Mapping is the span attribute mapping applied to the source's spans.
	Mapping trace.SpanAttrMapping `json:"spanAttrMapping,omitzero"`
}

// CorrelateTraceID is the default correlation: a runId is a trace id.
const CorrelateTraceID = "traceId"

// correlatePrefix introduces a metadata correlation.
const correlatePrefix = "metadata:"

// Validate checks c as a request names it; errors name the field (under
// prefix, "source.") and say what to fix.
func (c Config) Validate(prefix string) error {
	if !slices.Contains(Kinds, c.Kind) {
		return derrors.Invalidf("%skind %q: use one of %s", prefix, clip(c.Kind, 40), strings.Join(Kinds, ", "))
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(c.Endpoint) > 2048 {
		return derrors.Invalidf("%sendpoint: want the platform's absolute http(s) base URL, such as %s", prefix, exampleEndpoint[c.Kind])
	}
	if u.User != nil {
		return derrors.Invalidf("%sendpoint must not contain user:password@; put the credential in a workspace secret and name it in authSecret", prefix)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return derrors.Invalidf("%sendpoint: no query or fragment; give the base URL, such as %s", prefix, exampleEndpoint[c.Kind])
	}
	if len(c.Project) > 256 || strings.ContainsFunc(c.Project, unicode.IsControl) {
		return derrors.Invalidf("%sproject: at most 256 printable characters", prefix)
	}
	switch {
	case c.Correlate == "" || c.Correlate == CorrelateTraceID:
	case strings.HasPrefix(c.Correlate, correlatePrefix) && len(c.Correlate) > len(correlatePrefix) && len(c.Correlate) <= 256 &&
		!strings.ContainsFunc(c.Correlate, unicode.IsControl):
		if c.Kind != KindLangSmith && c.Kind != KindMLflow {
			return derrors.Invalidf("%scorrelate %q: a %s source finds traces by id only; leave correlate out (runId is the trace id)", prefix, clip(c.Correlate, 60), c.Kind)
		}
	default:
		return derrors.Invalidf("%scorrelate %q: use %q (runId is the platform's trace id) or \"metadata:<key>\" (the trace whose metadata <key> is the runId)", prefix, clip(c.Correlate, 60), CorrelateTraceID)
	}
	if c.Kind == KindPhoenix && strings.TrimSpace(c.Project) == "" {
		return derrors.Invalidf("%sproject is required for a phoenix source: the Phoenix project name (\"default\" unless you set one)", prefix)
	}
	if err := c.Mapping.Validate(); err != nil {
		return derrors.Invalidf("%sspanAttrMapping.%v", prefix, err)
	}
	return nil
}

var exampleEndpoint = map[string]string{
	KindLangfuse:  "https://cloud.langfuse.com",
	KindLangSmith: "https://api.smith.langchain.com",
	KindPhoenix:   "http://phoenix.internal:6006",
	KindMLflow:    "http://mlflow.internal:5000",
	KindOTel:      "http://jaeger.internal:16686",
	"":            "https://cloud.langfuse.com",
}

// Trace is one trace read from a platform: its spans, flattened, in the
// order the platform gave them, and its final answer when the platform
// records one (a Langfuse trace's output, a LangSmith root run's outputs).
type Trace struct {
	ID          string
	Spans       []trace.Span
	FinalAnswer string
}

// Events is the trace as TraceEvents: each span normalised with m, in
// start order, then the final answer as the last assistant message, which
// answer graders read.
func (t Trace) Events(m trace.SpanAttrMapping) []eval.TraceEvent {
	events := make([]eval.TraceEvent, 0, len(t.Spans)+1)
	for _, s := range t.Spans {
		events = append(events, trace.Normalize(s, m))
	}
	trace.SortEvents(events)
	if strings.TrimSpace(t.FinalAnswer) != "" {
		events = append(events, eval.TraceEvent{Kind: eval.EventMessage, Role: "assistant", Content: clip(t.FinalAnswer, 64<<10)})
	}
	if len(events) > eval.MaxTraceEvents {
		events = events[:eval.MaxTraceEvents]
	}
	return events
}

// Summary is one trace of a listing, with its metrics.
type Summary struct {
	TraceID      string     `json:"traceId"`
	Name         string     `json:"name,omitempty"`
	Start        *time.Time `json:"startTime,omitempty"`
	DurationMs   float64    `json:"durationMs,omitempty"`
	Status       string     `json:"status,omitempty"`
	Spans        int        `json:"spans,omitempty"`
	InputTokens  int64      `json:"inputTokens,omitempty"`
	OutputTokens int64      `json:"outputTokens,omitempty"`
	CostUSD      float64    `json:"costUsd,omitempty"`
}

// Client reads one platform.
type Client struct {
	cfg  Config
	hc   *http.Client
	cred string
	base *url.URL
}

// New returns a Client of cfg (validated) that sends credential (the
// opened secret; "" for none) with every request, through hc.
func New(cfg Config, hc *http.Client, credential string) (*Client, error) {
	if err := cfg.Validate("source."); err != nil {
		return nil, err
	}
	u, _ := url.Parse(strings.TrimRight(cfg.Endpoint, "/"))
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	return &Client{cfg: cfg, hc: hc, cred: credential, base: u}, nil
}

// String describes the client without its credential.
func (c *Client) String() string {
	return fmt.Sprintf("%s source at %s", c.cfg.Kind, c.base.Redacted())
}

// GoString is String, so %#v cannot print the credential either.
func (c *Client) GoString() string { return c.String() }

// Fetch reads the trace runID names (see Config.Correlate).
func (c *Client) Fetch(ctx context.Context, runID string) (Trace, error) {
	if strings.TrimSpace(runID) == "" || len(runID) > 256 || strings.ContainsFunc(runID, unicode.IsControl) {
		return Trace{}, derrors.Invalidf("runId: a trace id of 1 to 256 printable characters")
	}
	switch c.cfg.Kind {
	case KindLangfuse:
		return c.fetchLangfuse(ctx, runID)
	case KindLangSmith:
		return c.fetchLangSmith(ctx, runID)
	case KindPhoenix:
		return c.fetchPhoenix(ctx, runID)
	case KindMLflow:
		return c.fetchMLflow(ctx, runID)
	case KindOTel:
		return c.fetchOTel(ctx, runID)
	}
	return Trace{}, derrors.Invalidf("source kind %q", c.cfg.Kind)
}

// List returns the platform's recent traces, newest first, at most limit.
func (c *Client) List(ctx context.Context, limit int) ([]Summary, error) {
	if limit <= 0 || limit > MaxList {
		limit = 20
	}
	switch c.cfg.Kind {
	case KindLangfuse:
		return c.listLangfuse(ctx, limit)
	case KindLangSmith:
		return c.listLangSmith(ctx, limit)
	case KindPhoenix:
		return c.listPhoenix(ctx, limit)
	case KindMLflow:
		return c.listMLflow(ctx, limit)
	case KindOTel:
		return c.listOTel(ctx, limit)
	}
	return nil, derrors.Invalidf("source kind %q", c.cfg.Kind)
}

// Error is a platform's refusal or failure. Its message names the
// platform, the operation and what to fix, never the credential.
// Retryable says whether trying again later may succeed (network errors,
// 429, 5xx); the others (a refused credential, an unknown trace, a body
// that does not decode) will not.
type Error struct {
	Kind      string
	Status    int // the HTTP status, 0 when none came
	Retryable bool
	Msg       string
	// NotFound: the platform has no such trace.
	NotFound bool
}

func (e *Error) Error() string { return e.Msg }

// Unwrap makes a permanent refusal a derrors.ErrInvalid (the caller's
// settings are wrong), an unknown trace derrors.ErrNotFound, and a
// retryable one a public derrors.ErrUnavailable (a 503 that says why).
func (e *Error) Unwrap() error {
	switch {
	case e.NotFound:
		return derrors.ErrNotFound
	case e.Retryable:
		// Public: the message says which platform failed how, and holds
		// no credential, so a 503 may show it.
		return &derrors.Public{Kind: derrors.ErrUnavailable, Msg: e.Msg}
	}
	return derrors.ErrInvalid
}

// Retryable reports whether err is a platform failure worth retrying.
func Retryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable
}

// do sends one request (body JSON-encoded when not nil) to path (with
// query) and decodes the JSON answer into out through decode. what names
// the operation in errors ("reading trace abc").
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body any, what string) ([]byte, error) {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, &Error{Kind: c.cfg.Kind, Msg: fmt.Sprintf("%s source: %s: %v", c.cfg.Kind, what, netguard.UnwrapURLError(err))}
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.authorize(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		err = netguard.UnwrapURLError(err)
		var refused *netguard.RefusedError
		if errors.As(err, &refused) {
			return nil, &Error{Kind: c.cfg.Kind, Msg: fmt.Sprintf("%s source: %s: %v", c.cfg.Kind, what, err)}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &Error{Kind: c.cfg.Kind, Retryable: true, Msg: fmt.Sprintf("%s source at %s: %s: the platform did not answer: %v", c.cfg.Kind, c.base.Host, what, err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, &Error{Kind: c.cfg.Kind, Retryable: true, Status: resp.StatusCode, Msg: fmt.Sprintf("%s source: %s: reading the answer: %v", c.cfg.Kind, what, err)}
	}
	if len(data) > MaxResponseBytes {
		return nil, &Error{Kind: c.cfg.Kind, Status: resp.StatusCode, Msg: fmt.Sprintf("%s source: %s: the answer is larger than %d bytes", c.cfg.Kind, what, MaxResponseBytes)}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return data, nil
	}
	return nil, c.statusError(resp.StatusCode, what, data)
}

// statusError words a non-2xx answer. The platform's own message is
// quoted, bounded, since it says what it disliked; it cannot hold the
// credential, which the platform never echoes.
func (c *Client) statusError(status int, what string, body []byte) error {
	e := &Error{Kind: c.cfg.Kind, Status: status}
	detail := remoteMessage(body)
	if detail != "" {
		detail = ": " + detail
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		fix := "the source sends no credential; name the workspace secret holding it in authSecret"
		if c.cred != "" {
			fix = fmt.Sprintf("check the credential in workspace secret %q (%s)", c.cfg.AuthSecret, credentialHint[c.cfg.Kind])
		}
		e.Msg = fmt.Sprintf("%s source at %s refused the credential (HTTP %d) %s%s; %s", c.cfg.Kind, c.base.Host, status, what, detail, fix)
	case status == http.StatusNotFound:
		e.NotFound = true
		e.Msg = fmt.Sprintf("%s source at %s: %s: not found (HTTP 404)%s; check the id, the project and the endpoint", c.cfg.Kind, c.base.Host, what, detail)
	case status == http.StatusTooManyRequests || status >= 500:
		e.Retryable = true
		e.Msg = fmt.Sprintf("%s source at %s: %s: HTTP %d%s; the platform is busy or failing, try again later", c.cfg.Kind, c.base.Host, what, status, detail)
	default:
		e.Msg = fmt.Sprintf("%s source at %s: %s: HTTP %d%s; check the endpoint and project", c.cfg.Kind, c.base.Host, what, status, detail)
	}
	return e
}

// credentialHint says what each platform's secret holds.
var credentialHint = map[string]string{
	KindLangfuse:  "publicKey:secretKey, sent as HTTP basic auth",
	KindLangSmith: "an API key, sent as x-api-key",
	KindPhoenix:   "an API key, sent as a bearer token",
	KindMLflow:    "a token, sent as a bearer token, or user:password for basic auth",
	KindOTel:      "a bearer token",
}

// authorize sets the platform's credential header.
func (c *Client) authorize(req *http.Request) {
	if c.cred == "" {
		return
	}
	switch c.cfg.Kind {
	case KindLangfuse:
		pub, sec, _ := strings.Cut(c.cred, ":")
		req.SetBasicAuth(pub, sec)
	case KindLangSmith:
		req.Header.Set("x-api-key", c.cred)
	case KindMLflow:
		if user, pass, ok := strings.Cut(c.cred, ":"); ok && !strings.ContainsAny(c.cred, " ") {
			req.SetBasicAuth(user, pass)
			return
		}
		req.Header.Set("Authorization", "Bearer "+c.cred)
	default:
		req.Header.Set("Authorization", "Bearer "+c.cred)
	}
}

// remoteMessage is a platform's error message from its JSON body, bounded.
func remoteMessage(body []byte) string {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	for _, k := range []string{"message", "detail", "error", "error_code"} {
		if s, ok := m[k].(string); ok && s != "" {
			return clip(sanitize(s), 200)
		}
	}
	// Jaeger's API v3 (and grpc-gateway's) shape: {"error": {"message": ...}}.
	if e, ok := m["error"].(map[string]any); ok {
		if s, ok := e["message"].(string); ok && s != "" {
			return clip(sanitize(s), 200)
		}
	}
	return ""
}

// decodeError is a body the platform sent that is not what its API
// documents.
func (c *Client) decodeError(what string, err error) error {
	return &Error{Kind: c.cfg.Kind, Msg: fmt.Sprintf("%s source at %s: %s: the answer is not the documented JSON (%v); check that endpoint is the %s API's base URL", c.cfg.Kind, c.base.Host, what, err, c.cfg.Kind)}
}

func (c *Client) notFound(what string) error {
	return &Error{Kind: c.cfg.Kind, Status: http.StatusNotFound, NotFound: true,
		Msg: fmt.Sprintf("%s source at %s: %s: not found; check the id, the project and the endpoint", c.cfg.Kind, c.base.Host, what)}
}

// sanitize is s as a trajectory keeps it: valid UTF-8 without NUL.
func sanitize(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// OriginSource is the origin source of a pulled batch's child runs: their
// case activity fetches the trace their Plan names instead of running a
// harness.
const OriginSource = "pull"

// Plan is what one child run of a pulled batch reads (stored beside it at
// submit): where the trace is and which it is.
type Plan struct {
	// Name is the trace source's name, NameSVC for the owned ledger, ""
	// for a source given inline.
	Name string `json:"name,omitempty"`
	// Source is the source's configuration at submit, with the effective
	// span attribute mapping; zero for the ledger.
	Source Config `json:"source,omitzero"`
	// RunID is the platform's id of the trace (see Config.Correlate), or
	// the ledger's run id.
	RunID string `json:"runId"`
	// Viewer is the submitter: a ledger read sees what they may see.
	Viewer string `json:"viewer,omitempty"`
	// ViewerTeams are the private teams' audiences the submitter reads
	// (eval.TeamAudience): a ledger read sees their trajectories too.
	ViewerTeams []string `json:"viewerTeams,omitempty"`
}

// Ledger reports whether the plan reads the owned trace ledger.
func (p Plan) Ledger() bool { return p.Name == NameSVC }

// SealSource is the ledger source a pulled trace is sealed with: the
// platform's kind, or svc for a copy from the ledger.
func (p Plan) SealSource() string {
	if p.Ledger() {
		return NameSVC
	}
	return p.Source.Kind
}
