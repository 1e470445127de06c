package traces

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/trace"
	"svc/internal/platform/bufpool"
	"svc/internal/platform/derrors"
	"svc/internal/service/identity"
	"svc/store"
	"svc/store/records"
)

// groupIDPattern is what an svc.run_id (and so an external trajectory's
// id) may be: the characters of run ids, trace ids and UUIDs, and short
// enough to be a path segment of GET /trajectories/:id.
var groupIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// TracePrefix names the external trajectory of spans without svc.run_id:
// trace_<32 hex digits of the trace id>.
const TracePrefix = "trace_"

// ThrottledError is the door's refusal past the hourly quota: a 429
// RATE_LIMITED whose Retry-After is RetryAfter.
type ThrottledError struct {
	Quota, Used, Asked int64
	RetryAfter         time.Duration
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("this workspace may send %d trace events per hour; %d were accepted this hour and this export holds %d more: retry after %s",
		e.Quota, e.Used, e.Asked, e.RetryAfter.Round(time.Second))
}

// Unwrap makes a ThrottledError a derrors.ErrRateLimited.
func (e *ThrottledError) Unwrap() error { return derrors.ErrRateLimited }

// RetryDelay is when to try again: the API's Retry-After (derrors.RetryAfter).
func (e *ThrottledError) RetryDelay() time.Duration { return e.RetryAfter }

// ErrorDetails are the quota and what was asked, for the error body
// (derrors.Details).
func (e *ThrottledError) ErrorDetails() map[string]any {
	return map[string]any{"quota": e.Quota, "used": e.Used, "asked": e.Asked}
}

// ThrottledEvent is the event type landed once per window when the door
// refuses past the quota (spec §6).
const ThrottledEvent = "trace.ingestion_throttled"

// maxProblemText bounds partial_success.error_message.
const maxProblemText = 1000

// group is the spans of one trajectory in an export.
type group struct {
	id       string
	external bool
	spans    []trace.Span
	refused  string // why every span of the group is refused, or ""
}

// Export takes one decoded OTLP export of p's workspace: it groups the
// spans by svc.run_id (spans without one by trace id, as the external
// trajectory trace_<trace id>), normalises them and stores them until
// their trajectory is sealed. The answer's partial_success counts and
// names the refused spans: malformed ones, and late ones (their
// trajectory is already sealed). Past the workspace's hourly quota
// nothing is stored and the error is a *ThrottledError.
//
// An svc.run_id that is no run of the workspace is an external trajectory
// of the caller's workspace: another workspace's run id behaves exactly as
// an unknown id, so its existence never shows. Spans for another member's
// personal run are refused: they would widen its audience.
func (s *Service) Export(ctx context.Context, p auth.Principal, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	spans, bad := trace.FlattenSpansCompact(req)
	var problems []string
	rejected := int64(len(bad))
	for _, b := range bad {
		problems = append(problems, b.Message)
	}
	var order []string
	groups := map[string]*group{}
	for _, sp := range spans {
		id := sp.RunID
		if id == "" {
			id = TracePrefix + sp.TraceID
		}
		g := groups[id]
		if g == nil {
			// An id is checked once, when its group is made.
			if !groupIDPattern.MatchString(id) {
				rejected++
				problems = append(problems, fmt.Sprintf("span %q: %s %q is not 1 to 128 letters, digits, '.', '_', ':' or '-'", clip(sp.Name, 80), trace.RunIDAttribute, clip(id, 80)))
				continue
			}
			g = &group{id: id}
			groups[id] = g
			order = append(order, id)
		}
		g.spans = append(g.spans, sp)
	}

	now := s.now()
	pending := make([]store.PendingSpan, 0, len(spans))
	for _, id := range order {
		g := groups[id]
		mapping, err := s.classify(ctx, p, g)
		if err != nil {
			return nil, err
		}
		if g.refused != "" {
			rejected += int64(len(g.spans))
			problems = append(problems, g.refused)
			continue
		}
		events, release := prepareEventsPooled(g.spans, mapping)
		defer release()
		for i, ev := range events {
			sp := &g.spans[i]
			if ev.problem != nil {
				rejected++
				problems = append(problems, fmt.Sprintf("span %q: %v", clip(sp.Name, 80), ev.problem))
				continue
			}
			var start int64
			if !sp.Start.IsZero() {
				start = sp.Start.UnixNano()
			}
			pending = append(pending, store.PendingSpan{Workspace: p.Workspace, Group: g.id, External: g.external,
				Key: sp.Key, StartUnixNano: start, Event: ev.canonical, ReceivedAt: now, Canonical: true})
		}
	}

	if len(pending) > 0 {
		if err := s.store(ctx, p, now, pending); err != nil {
			return nil, err
		}
	}
	resp := &coltracepb.ExportTraceServiceResponse{}
	if rejected > 0 {
		resp.PartialSuccess = &coltracepb.ExportTracePartialSuccess{RejectedSpans: rejected, ErrorMessage: problemText(problems)}
	}
	return resp, nil
}

// preparedEvent is a span's event as stored: its canonical JSON, or why
// the span is refused.
type preparedEvent struct {
	canonical json.RawMessage
	problem   error
}

// parallelSpans is the size of an export's group from which its spans are
// normalised on every processor: below it, starting goroutines costs more
// than it saves.
const parallelSpans = 256

// prepareEvents normalises spans into their events and writes each
// event's canonical JSON (traces.AppendSpanEvent: that of
// traces.AppendCanonicalStoredEvent, straight from the span), the form a
// pending span keeps so that sealing only concatenates. A large group is
// split into one chunk per processor.
func prepareEvents(spans []trace.Span, mapping trace.SpanAttrMapping) []preparedEvent {
	out, _ := prepareEventsPooled(spans, mapping)
	return out
}

// eventBuffers holds prepareEventsPooled's chunk buffers.
var eventBuffers = bufpool.Pool{Max: 16 << 20}

// prepareEventsPooled is prepareEvents writing into pooled buffers:
// release gives them back, once nothing reads the events any more.
func prepareEventsPooled(spans []trace.Span, mapping trace.SpanAttrMapping) (_ []preparedEvent, release func()) {
	out := make([]preparedEvent, len(spans))
	n := min(runtime.GOMAXPROCS(0), len(spans)/parallelSpans)
	bufs := make([]*[]byte, max(n, 1))
	work := func(c, lo, hi int) {
		// One buffer for the chunk, each event a slice of it: sized for
		// 400 bytes an event, then, after the first events, for the
		// chunk at their average size, so that it grows once.
		pooled := eventBuffers.Get(400 * (hi - lo))
		buf := *pooled
		defer func() {
			*pooled = buf
			bufs[c] = pooled
		}()
		for i := lo; i < hi; i++ {
			if done := i - lo; done == 8 {
				if need := len(buf) / done * (hi - lo) * 9 / 8; need > cap(buf) {
					buf = slices.Grow(buf, need-len(buf))
				}
			}
			mark := len(buf)
			next, err := trace.AppendSpanEvent(buf, &spans[i], mapping)
			if err != nil {
				out[i].problem = err
				continue
			}
			// Appending never rewrites the bytes already sliced, even
			// when it moves the buffer.
			buf = next
			out[i].canonical = json.RawMessage(buf[mark:len(buf):len(buf)])
		}
	}
	release = func() {
		for _, b := range bufs {
			// A buffer that grew while its events were written holds
			// only the last of them; the earlier storage is garbage.
			if b != nil {
				eventBuffers.Put(b, *b)
			}
		}
	}
	if n <= 1 {
		work(0, 0, len(spans))
		return out, release
	}
	var wg sync.WaitGroup
	for c := range n {
		lo, hi := c*len(spans)/n, (c+1)*len(spans)/n
		wg.Go(func() { work(c, lo, hi) })
	}
	wg.Wait()
	return out, release
}

// classify decides where g's spans go: a live run of the workspace (with
// its harness's mapping), an external trajectory, or nowhere (g.refused,
// its trajectory is sealed).
func (s *Service) classify(ctx context.Context, p auth.Principal, g *group) (trace.SpanAttrMapping, error) {
	row, err := s.o.Store.GetRun(ctx, p.Workspace, g.id)
	switch {
	case errors.Is(err, derrors.ErrNotFound):
	case err != nil:
		return trace.SpanAttrMapping{}, err
	case row.Audience != "" && row.Audience != p.Subject && !s.readsTeam(ctx, p, row.Audience, &err):
		// Another member's personal run. Treated as an unknown id, its
		// spans would join the run's own pending group as a
		// workspace-visible external trajectory, exposing the owner's
		// spans and mixing in forged ones (issue 30, finding 5): refused,
		// so a group's audience never widens. Only the run's member (or
		// its run-scoped token, which acts as that member) writes it.
		if err != nil {
			return trace.SpanAttrMapping{}, err
		}
		g.refused = fmt.Sprintf("%d span(s) of svc.run_id %s: not a run you may send spans for (a personal run is written only with its member's credentials); send them under another svc.run_id", len(g.spans), g.id)
		return trace.SpanAttrMapping{}, nil
	default:
		if eval.Status(row.Status).Terminal() {
			g.refused = fmt.Sprintf("%d span(s) of run %s: the run has ended and its trajectory is sealed; spans must arrive before the run ends", len(g.spans), g.id)
			return trace.SpanAttrMapping{}, nil
		}
		run, err := records.FromRow(row)
		if err != nil {
			return trace.SpanAttrMapping{}, err
		}
		return s.harnessMapping(ctx, p, run.Harness), nil
	}
	g.external = true
	if _, err := s.o.Store.GetTrajectory(ctx, p.Workspace, g.id); err == nil {
		g.refused = fmt.Sprintf("%d span(s) of trajectory %s: it is sealed (no span arrived for the idle window); send later spans under another svc.run_id", len(g.spans), g.id)
	} else if !errors.Is(err, derrors.ErrNotFound) {
		return trace.SpanAttrMapping{}, err
	}
	return trace.SpanAttrMapping{}, nil
}

// readsTeam reports whether p may write spans for a run of a private
// team's audience: its members, admins and machine credentials, as they
// read it. A failed read of the teams answers no and sets *errp.
func (s *Service) readsTeam(ctx context.Context, p auth.Principal, audience string, errp *error) bool {
	if !eval.IsTeamAudience(audience) {
		return false
	}
	teams, err := identity.TeamAudiences(ctx, s.o.Store, p.Workspace, p.Subject, auth.ReachesEveryTeam(p))
	if err != nil {
		*errp = err
		return false
	}
	return eval.VisibleTo(audience, p.Subject, teams)
}

// store keeps pending under the workspace's quota, in one transaction
// with the usage it adds (store.AddPendingSpansQuota: a retried export's
// spans, stored once, do not count, and exports at once count each span
// once). Past the quota it stores nothing, lands the throttled event
// (once per window) and returns a *ThrottledError.
func (s *Service) store(ctx context.Context, p auth.Principal, now time.Time, pending []store.PendingSpan) error {
	w := window(now)
	st, err := settings(ctx, s.o.Store, p.Workspace)
	if err != nil {
		return err
	}
	q := s.quota(st)
	added, used, over, err := s.o.Store.AddPendingSpansQuota(ctx, pending, p.Workspace, w, q)
	if err != nil {
		return err
	}
	if !over {
		return nil
	}
	throttled := &ThrottledError{Quota: q, Used: used, Asked: int64(added), RetryAfter: w.Add(time.Hour).Sub(now)}
	data, _ := json.Marshal(map[string]any{"quota": throttled.Quota, "used": throttled.Used, "asked": throttled.Asked,
		"windowStart": w, "windowEnd": w.Add(time.Hour)})
	if _, err := s.o.Store.AppendEvent(ctx, store.Event{
		ID: ThrottledEvent + ":" + p.Workspace + ":" + w.Format("2006-01-02T15"), Workspace: p.Workspace, Type: ThrottledEvent,
		Subject: "workspace:" + p.Workspace, Actor: p.Subject, Data: data,
	}); err != nil {
		// The refusal stands; only its record is missing.
		s.o.Logger.WarnContext(ctx, "recording trace.ingestion_throttled", "workspace", p.Workspace, "error", err)
	}
	return throttled
}

// problemText joins problems for partial_success.error_message.
func problemText(problems []string) string {
	var b strings.Builder
	for i, p := range problems {
		if b.Len()+len(p) > maxProblemText {
			fmt.Fprintf(&b, "; and %d more", len(problems)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p)
	}
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
