package scorecards

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/domain/scoring"
	"svc/internal/domain/trace"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
)

// Limits of one ingest.
const (
	// MaxIngestTraces bounds the traces of one POST /scorecards/ingest.
	MaxIngestTraces = 1000
	// maxCaseIDLen bounds a pushed caseId.
	maxCaseIDLen = 256
	// ingestConcurrency is the batch's window: grading a sealed trace is
	// quick, no harness runs.
	ingestConcurrency = 16
	// maxSkipNotes bounds the steps naming skipped caseIds, as the grader
	// notes are bounded.
	maxSkipNotes = 50
)

// IngestTrace is one pushed trace: the case it answers and its events.
type IngestTrace struct {
	CaseID string            `json:"caseId"`
	Trace  []json.RawMessage `json:"trace"`
}

// IngestRequest is the body of POST /scorecards/ingest (spec §4.5):
// traces of agents that ran elsewhere, graded and judged as a scorecard.
type IngestRequest struct {
	Dataset *registry.Ref `json:"dataset,omitempty"`
	Harness *registry.Ref `json:"harness,omitempty"`
	Traces  []IngestTrace `json:"traces"`
	Judges  []JudgeSel    `json:"judges,omitempty"`

	// events are Traces' events, decoded and checked by Validate.
	events [][]eval.TraceEvent
}

// DecodeIngest decodes and validates a body of POST /scorecards/ingest
// strictly (unknown members refused), as the route's binder does. Every
// refusal is derrors.ErrInvalid with a message naming what to fix.
func DecodeIngest(body []byte) (IngestRequest, error) {
	return decodeStrict[IngestRequest](body, "an ingest request")
}

// decodeStrict decodes one JSON object of type T from body, unknown
// members refused, and validates it; what names T in the message.
func decodeStrict[T any, PT interface {
	*T
	Validate() error
}](body []byte, what string) (T, error) {
	var req T
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, derrors.Invalidf("the body is not %s: %v", what, err)
	}
	if dec.More() {
		return req, derrors.Invalidf("unexpected data after the JSON value; send exactly one JSON object")
	}
	if err := PT(&req).Validate(); err != nil {
		var zero T
		return zero, err
	}
	return req, nil
}

// checkIngested checks the optional dataset and harness and the judges of
// an ingest, pushed or pulled.
func checkIngested(dataset, harness *registry.Ref, judges []JudgeSel) error {
	if dataset != nil {
		if err := checkRef("dataset", *dataset); err != nil {
			return err
		}
	}
	if harness != nil {
		if err := checkRef("harness", *harness); err != nil {
			return err
		}
	}
	return checkCommon(nil, nil, "", judges)
}

// Validate checks what needs no store and decodes every event: an invalid
// one is refused naming its index and field (traces[3].trace[7].kind).
func (r *IngestRequest) Validate() error {
	if err := checkIngested(r.Dataset, r.Harness, r.Judges); err != nil {
		return err
	}
	switch {
	case len(r.Traces) == 0:
		return derrors.Invalidf("traces is required: send [{caseId, trace: [TraceEvent, ...]}, ...]")
	case len(r.Traces) > MaxIngestTraces:
		return derrors.Invalidf("at most %d traces per ingest, not %d; split them into several ingests", MaxIngestTraces, len(r.Traces))
	}
	seen := make(map[string]int, len(r.Traces))
	r.events = make([][]eval.TraceEvent, len(r.Traces))
	for i, t := range r.Traces {
		switch {
		case t.CaseID == "" && r.Dataset != nil:
			return derrors.Invalidf("traces[%d].caseId is required: the id of the dataset case the trace answers", i)
		case len(t.CaseID) > maxCaseIDLen || !utf8.ValidString(t.CaseID) || strings.ContainsFunc(t.CaseID, isControl):
			return derrors.Invalidf("traces[%d].caseId must be printable UTF-8 of at most %d bytes", i, maxCaseIDLen)
		}
		if t.CaseID != "" {
			if j, dup := seen[t.CaseID]; dup {
				return derrors.Invalidf("traces[%d].caseId %q is also traces[%d]'s; send one trace per case", i, t.CaseID, j)
			}
			seen[t.CaseID] = i
		}
		switch {
		case t.Trace == nil:
			return derrors.Invalidf("traces[%d].trace is required: an array of TraceEvents", i)
		case len(t.Trace) == 0:
			return derrors.Invalidf("traces[%d].trace is empty: send at least one TraceEvent", i)
		case len(t.Trace) > eval.MaxTraceEvents:
			return derrors.Invalidf("traces[%d].trace holds %d events; a trace holds at most %d", i, len(t.Trace), eval.MaxTraceEvents)
		}
		events := make([]eval.TraceEvent, len(t.Trace))
		for j, raw := range t.Trace {
			e, field, err := decodeEvent(raw)
			if err != nil {
				at := fmt.Sprintf("traces[%d].trace[%d]", i, j)
				if field != "" {
					at += "." + field
				}
				return derrors.Invalidf("%s: %v", at, err)
			}
			events[j] = e
		}
		r.events[i] = events
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// eventFields are the JSON members of a TraceEvent.
var eventFields = sync.OnceValue(func() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeFor[eval.TraceEvent]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
})

// decodeEvent decodes one TraceEvent strictly and checks it; on error,
// field names the member to fix ("" for the event as a whole).
func decodeEvent(raw json.RawMessage) (eval.TraceEvent, string, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return eval.TraceEvent{}, "", errors.New("must be a TraceEvent object")
	}
	known := eventFields()
	for name := range members {
		if !known[name] {
			return eval.TraceEvent{}, name, errors.New("unknown member; a TraceEvent has kind, ts, name, role, content, input, output, model, inputTokens, outputTokens, costUsd, durationMs, message, code, ref, mediaType, attributes, startTime, endTime")
		}
	}
	var e eval.TraceEvent
	if err := json.Unmarshal(raw, &e); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return eval.TraceEvent{}, te.Field, fmt.Errorf("must be a JSON %s, not %s", jsonKind(te.Type), te.Value)
		}
		return eval.TraceEvent{}, "", fmt.Errorf("does not decode: %v", err)
	}
	if field, msg := eventProblem(e); msg != "" {
		return eval.TraceEvent{}, field, errors.New(msg)
	}
	if err := e.Validate(); err != nil {
		return eval.TraceEvent{}, "", err
	}
	return e, "", nil
}

// jsonKind names the JSON type a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Map, reflect.Struct:
		return "object (a string for a timestamp)"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Bool:
		return "boolean"
	}
	return "value of another type"
}

// eventProblem is eval.TraceEvent.Validate's check with the field it
// concerns, so that the refusal names it.
func eventProblem(e eval.TraceEvent) (field, msg string) {
	blank := func(s string) bool { return strings.TrimSpace(s) == "" }
	switch e.Kind {
	case "":
		return "kind", "is required: one of " + strings.Join(eval.EventKinds, ", ")
	case eval.EventToolCall, eval.EventSpan, eval.EventArtifact:
		if blank(e.Name) {
			return "name", fmt.Sprintf("is required on a %s event", e.Kind)
		}
	case eval.EventError:
		if blank(e.Message) {
			return "message", "is required on an error event"
		}
	case eval.EventMessage:
		if blank(e.Role) {
			return "role", "is required on a message event (user, assistant, system or tool)"
		}
	case eval.EventLLMCall:
	default:
		return "kind", fmt.Sprintf("unknown event kind %q; use one of %s", clip(e.Kind, 40), strings.Join(eval.EventKinds, ", "))
	}
	for _, f := range []struct {
		name string
		neg  bool
	}{{"inputTokens", e.InputTokens < 0}, {"outputTokens", e.OutputTokens < 0}, {"costUsd", e.CostUSD < 0}, {"durationMs", e.DurationMs < 0}} {
		if f.neg {
			return f.name, "must not be negative"
		}
	}
	return "", ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// Ingest records a scorecard of pushed traces (POST /scorecards/ingest)
// and starts its workflow, the same ScorecardWorkflow as a managed batch.
// In the submit's transaction, with the budget and queue admission, every
// trace is sealed in the ledger (source import) under its child run's id
// and the child run is created queued, its origin source import: the case
// activity then grades that sealed copy instead of running a harness, and
// the batch is judged and finished as any other. With a dataset, each
// trace answers the case its caseId names (unknown caseIds are skipped
// and listed in steps); without one, each trace is its own case of the
// `_traces` dataset. Without a harness, the harness is `_traces`.
func (s *Service) Ingest(ctx context.Context, p auth.Principal, req IngestRequest, source string) (eval.Scorecard, error) {
	if req.events == nil {
		if err := req.Validate(); err != nil {
			return eval.Scorecard{}, err
		}
	}
	pl := plan{kind: eval.KindScorecard, concurrency: ingestConcurrency, trials: 1, policy: scoring.DefaultPolicy()}
	byCase := map[string][]eval.TraceEvent{}
	if req.Dataset != nil {
		sent := make([]string, len(req.Traces))
		for i, t := range req.Traces {
			sent[i] = t.CaseID
		}
		known, err := s.ingestDataset(ctx, p, &pl, *req.Dataset, sent, "trace")
		if err != nil {
			return eval.Scorecard{}, err
		}
		for i, t := range req.Traces {
			if known[t.CaseID] {
				byCase[t.CaseID] = req.events[i]
			}
		}
	} else {
		ids := make([]string, len(req.Traces))
		for i, t := range req.Traces {
			id := t.CaseID
			if id == "" {
				id = fmt.Sprintf("trace-%d", i)
			}
			if _, dup := byCase[id]; dup {
				return eval.Scorecard{}, derrors.Invalidf("traces[%d] has no caseId and its default %q is another trace's caseId; give it a caseId", i, id)
			}
			byCase[id] = req.events[i]
			ids[i] = id
		}
		pl.traceCases(ids)
	}
	if err := s.ingestHarness(ctx, p, &pl, req.Harness); err != nil {
		return eval.Scorecard{}, err
	}
	if err := s.resolveJudges(ctx, p, &pl, req.Judges); err != nil {
		return eval.Scorecard{}, err
	}
	pl.inTx = func(ctx context.Context, tx store.Tx, sc eval.Scorecard) error {
		return sealIngested(ctx, tx, sc, pl.cases, byCase)
	}
	return s.record(ctx, p, pl, source)
}

// sealIngested seals each case's trace in the ledger (source import)
// under the id of its child run and creates the child run queued, origin
// source import, in the submit's transaction tx.
func sealIngested(ctx context.Context, tx store.Tx, sc eval.Scorecard, cases []registry.EvalCase, byCase map[string][]eval.TraceEvent) error {
	canonical := true
	runs := make([]store.Run, 0, len(cases))
	trajectories := make([]store.Trajectory, 0, len(cases))
	for _, c := range cases {
		run := eval.Run{
			ID: eval.ChildRunID(sc.Tenant, sc.ID, c.ID, 0), Tenant: sc.Tenant, Harness: sc.Harness, CaseID: c.ID,
			Status: eval.StatusQueued, CreatedAt: sc.CreatedAt, UpdatedAt: sc.CreatedAt, Kind: eval.KindEval,
			Trigger: eval.TriggerScorecard, CreatedBy: sc.CreatedBy, Origin: &eval.Origin{Source: trace.SourceImport},
			ParentScorecardID: sc.ID, Canonical: &canonical, Case: &c, AudienceTeam: sc.AudienceTeam,
		}
		events, digest, err := trace.SealEvents(byCase[c.ID])
		if err != nil {
			return err
		}
		trajectories = append(trajectories, store.Trajectory{
			Workspace: sc.Tenant, RunID: run.ID, Source: trace.SourceImport, EventCount: len(byCase[c.ID]),
			Digest: digest, SealedAt: sc.CreatedAt, Audience: run.Audience(), Events: events,
		})
		row, err := records.Row(run)
		if err != nil {
			return err
		}
		runs = append(runs, row)
	}
	if _, _, err := tx.SealTrajectories(ctx, trajectories); err != nil {
		return err
	}
	_, _, err := tx.CreateRuns(ctx, runs)
	return err
}

// skipNotes are the steps naming the caseIds an ingest skipped: at most
// maxSkipNotes, then one counting the rest.
func skipNotes(skipped []string) []store.ScorecardStep {
	var notes []store.ScorecardStep
	for i, id := range skipped {
		if i == maxSkipNotes {
			notes = append(notes, store.ScorecardStep{Key: "submit:skipped:more", Phase: "submit", Status: "skipped",
				Message: fmt.Sprintf("and %d more traces whose caseId is not in the dataset were skipped", len(skipped)-maxSkipNotes)})
			break
		}
		notes = append(notes, store.ScorecardStep{Key: fmt.Sprintf("submit:skipped:%d", i), Phase: "submit", Status: "skipped", CaseID: clip(id, maxCaseIDLen),
			Message: fmt.Sprintf("trace for case %q skipped: the case is not in the dataset", clip(id, 80))})
	}
	return notes
}

// ingestDataset resolves the ingest's dataset as p sees it into pl and
// picks the cases sent (pickCases); it returns the ids that are cases of
// the dataset.
func (s *Service) ingestDataset(ctx context.Context, p auth.Principal, pl *plan, ref registry.Ref, sent []string, what string) (map[string]bool, error) {
	var err error
	if pl.dataset, err = s.o.Registries.Resolve(ctx, p, registry.Dataset, ref.ID, ref.Version); err != nil {
		return nil, err
	}
	pl.datasetRef = pl.dataset.Ref()
	return pl.pickCases(sent, what)
}

// traceCases makes ids the cases of an ingest without a dataset: the
// `_traces` dataset at a version that digests them.
func (pl *plan) traceCases(ids []string) {
	h := sha256.New()
	for _, id := range ids {
		pl.cases = append(pl.cases, registry.EvalCase{ID: id})
		fmt.Fprintf(h, "%s\x00", id)
	}
	pl.datasetRef = registry.Ref{ID: eval.IDTraces, Version: hex.EncodeToString(h.Sum(nil)[:6])}
}

// ingestHarness resolves the ingest's harness as p sees it into pl, or,
// without one, names the `_traces` harness at the dataset's version.
func (s *Service) ingestHarness(ctx context.Context, p auth.Principal, pl *plan, ref *registry.Ref) error {
	if ref == nil {
		pl.harnessRef = &registry.Ref{ID: eval.IDTraces, Version: pl.datasetRef.Version}
		return nil
	}
	var err error
	pl.harness, err = s.o.Registries.Resolve(ctx, p, registry.Harness, ref.ID, ref.Version)
	return err
}

// pickCases sets pl.cases to the cases of pl's dataset that the ingest
// sent (by case id, in the dataset's order), with the subset they make
// and the notes on skipped ids and grading; what names the items sent
// ("trace", "run"). It returns the ids that are cases of the dataset; a
// request naming none is refused.
func (pl *plan) pickCases(sent []string, what string) (map[string]bool, error) {
	all := pl.dataset.Spec.Dataset().Cases
	inDataset := make(map[string]bool, len(all))
	for _, c := range all {
		inDataset[c.ID] = true
	}
	known := map[string]bool{}
	var skipped []string
	for _, id := range sent {
		if !inDataset[id] {
			skipped = append(skipped, id)
			continue
		}
		known[id] = true
	}
	for _, c := range all {
		if known[c.ID] {
			pl.cases = append(pl.cases, c)
		}
	}
	if len(pl.cases) == 0 {
		return nil, derrors.Invalidf("no %s's caseId is a case of dataset %s (%d sent, all unknown, e.g. %q); GET the dataset version to list its case ids", what, pl.datasetRef, len(skipped), clip(skipped[0], 80))
	}
	if len(pl.cases) < len(all) {
		ids := make([]string, len(pl.cases))
		for i, c := range pl.cases {
			ids[i] = c.ID
		}
		pl.subset = &eval.Subset{Total: len(all), Selected: len(pl.cases), IDs: ids}
	}
	pl.notes = append(graderNotes(pl.cases), skipNotes(skipped)...)
	return known, nil
}
