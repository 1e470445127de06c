package judges

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/platform/derrors"
	"svc/internal/service/models"
	"svc/internal/service/runs"
)

// fakeRuns answers Get with run, as a store that a worker writes; it
// refuses what a test does not expect.
type fakeRuns struct {
	run  eval.Run
	gets int
}

func (f *fakeRuns) Get(_ context.Context, _ auth.Principal, id string) (eval.Run, error) {
	f.gets++
	if id != f.run.ID {
		return eval.Run{}, derrors.NotFoundf("run %s", id)
	}
	return f.run, nil
}

func (f *fakeRuns) Submit(context.Context, auth.Principal, runs.SubmitRequest, string) (eval.Run, error) {
	return eval.Run{}, errors.New("unexpected Submit")
}

func (f *fakeRuns) SubmitJudgeTry(context.Context, auth.Principal, runs.JudgeTryRequest, string) (eval.Run, error) {
	return eval.Run{}, errors.New("unexpected SubmitJudgeTry")
}

// fakeModels grants every token for model "grader".
type fakeModels struct{}

func (fakeModels) Resolve(context.Context, string, string) (models.Access, string, error) {
	return models.Access{}, "", errors.New("unexpected Resolve")
}

func (fakeModels) OpenProxyToken(_ context.Context, token string) (models.ProxyGrant, error) {
	if token != "tok" {
		return models.ProxyGrant{}, &derrors.Public{Kind: derrors.ErrUnauthenticated, Msg: "unknown token"}
	}
	return models.ProxyGrant{Workspace: "ws", Model: "grader", RunID: "run-1", JudgeID: "j"}, nil
}

func (fakeModels) RecordProxyCall(context.Context, models.ProxyGrant, models.ProxyCall) error {
	return errors.New("unexpected RecordProxyCall")
}

func TestLiveWait(t *testing.T) {
	for _, c := range []struct {
		sec  int
		want time.Duration
		err  string
	}{
		{0, DefaultLiveWait, ""},
		{1, time.Second, ""},
		{600, MaxLiveWait, ""},
		{601, 0, "over the 600-second limit"},
		{-1, 0, "must not be negative"},
	} {
		got, err := liveWait(c.sec)
		switch {
		case c.err != "" && (!errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), c.err)):
			t.Errorf("liveWait(%d) = %v, want an invalid error saying %q", c.sec, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("liveWait(%d) = %v, %v; want %v", c.sec, got, err, c.want)
		}
	}
}

// A preview's evidence is one of three sources, each taking its own
// fields: every mix is refused as invalid before anything is resolved or
// dispatched, saying which fields belong to which source.
func TestEvidenceRefusals(t *testing.T) {
	s := New(Options{Runs: &fakeRuns{run: eval.Run{ID: "run-1"}}})
	p := auth.Principal{Workspace: "ws", Subject: "u"}
	for _, c := range []struct {
		name string
		e    EvidenceRequest
		says string
	}{
		{"no source", EvidenceRequest{}, "evidence.source is required"},
		{"unknown source", EvidenceRequest{Source: strings.Repeat("D", 40)}, `"DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD…"`},
		{"A without run", EvidenceRequest{Source: "A"}, "evidence.runId is required"},
		{"A with a trace", EvidenceRequest{Source: "A", RunID: "run-1", Prompt: "p"}, "takes runId only"},
		{"B with a run", EvidenceRequest{Source: "B", RunID: "run-1"}, "not runId"},
		{"B without trace", EvidenceRequest{Source: "B", Prompt: "p"}, "evidence.trace is required"},
		{"B with C's wait", EvidenceRequest{Source: "B", Trace: []eval.TraceEvent{}, WaitSec: 3}, "belong to source C"},
		{"C without harness", EvidenceRequest{Source: "C"}, "evidence.harness"},
		{"C with a trace", EvidenceRequest{Source: "C", Trace: []eval.TraceEvent{}}, "source C takes harness"},
	} {
		_, err := s.evidence(t.Context(), p, c.e, "api")
		if !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want an invalid error saying %q", c.name, err, c.says)
		}
	}
	ev, err := s.evidence(t.Context(), p, EvidenceRequest{Source: "A", RunID: "run-1", Slots: map[string]string{"k": "v"}}, "api")
	if err != nil || ev.Run == nil || ev.Run.ID != "run-1" || ev.Slots["k"] != "v" {
		t.Errorf("source A: %+v, %v; want run-1's evidence with the slots", ev, err)
	}
}

// A live dispatch still running at the deadline is answered as not ended,
// not as an error: the run goes on.
func TestWaitRunAnswersNotEndedAtTheDeadline(t *testing.T) {
	f := &fakeRuns{run: eval.Run{ID: "run-1", Status: eval.StatusRunning}}
	s := New(Options{Runs: f})
	run, done, err := s.waitRun(t.Context(), auth.Principal{Workspace: "ws"}, eval.Run{ID: "run-1", Status: eval.StatusQueued}, 3*livePoll)
	if err != nil || done || run.ID != "run-1" {
		t.Errorf("waitRun = %+v, %v, %v; want run-1 not ended and no error", run, done, err)
	}
	f.run.Status = eval.StatusSucceeded
	run, done, err = s.waitRun(t.Context(), auth.Principal{Workspace: "ws"}, eval.Run{ID: "run-1", Status: eval.StatusQueued}, time.Minute)
	if err != nil || !done || run.Status != eval.StatusSucceeded {
		t.Errorf("waitRun = %+v, %v, %v; want run-1 succeeded", run, done, err)
	}
}

// The proxy takes a bearer run-scoped token and a chat completion without
// streaming; it refuses the rest before it resolves the model.
func TestProxyRefusals(t *testing.T) {
	s := New(Options{Models: fakeModels{}})
	for _, c := range []struct {
		name, auth, body string
		kind             error
		says             string
	}{
		{"no bearer", "tok", `{"messages":[]}`, derrors.ErrUnauthenticated, "as a bearer token"},
		{"unknown token", "Bearer nope", `{"messages":[]}`, derrors.ErrUnauthenticated, "unknown token"},
		{"not an object", "Bearer tok", `[]`, derrors.ErrInvalid, "JSON object"},
		{"no messages", "Bearer tok", `{}`, derrors.ErrInvalid, "messages is required"},
		{"streaming", "Bearer  tok ", `{"messages":[],"stream":true}`, derrors.ErrInvalid, "streaming is off"},
	} {
		_, err := s.Proxy(t.Context(), c.auth, strings.NewReader(c.body))
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.name, err, c.kind, c.says)
		}
	}
}
