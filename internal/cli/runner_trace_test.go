package cli

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"svc/drivers"
	"svc/internal/client"
	"svc/internal/domain/trace"
	"svc/internal/service/runners"
)

// refusedWhy is what refusingJob's driver says of its trace file.
const refusedWhy = "the driver did not read the trace file (SVC_TRACE_FILE): it is a symbolic link"

// refusingJob ends at once with a trace file its driver refused, as the
// local driver reports a harness that linked its trace file elsewhere.
type refusingJob struct{}

func (refusingJob) Run(context.Context, drivers.Job) (drivers.Result, error) {
	return drivers.Result{OS: "linux", Stdout: "planted\n", TraceRefused: refusedWhy}, nil
}

// TestRunnerPostsARefusedTrace: svc runner runs jobs with the local
// driver; a trace file that driver refused (issue 30) reaches the service
// as the TRACE_REFUSED error event, so the run's result says why its trace
// is empty.
func TestRunnerPostsARefusedTrace(t *testing.T) {
	api := &fakeRunnerAPI{results: make(chan runners.Completion, 1)}
	srv := httptest.NewServer(api)
	defer srv.Close()
	l := &runnerLoop{
		api:     &client.Client{Base: srv.URL, Token: "rnr_test", HTTP: srv.Client()},
		run:     refusingJob{},
		workers: 1, heartbeat: 50 * time.Millisecond, name: "box", host: "box.example",
		log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { l.serve(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	var c runners.Completion
	select {
	case c = <-api.results:
	case <-time.After(10 * time.Second):
		t.Fatal("no result was posted")
	}
	events := trace.ParseTrace([]byte(c.Result.Trace))
	if len(events) != 1 || events[0].Code != trace.CodeTraceRefused || events[0].Message != refusedWhy {
		t.Errorf("posted trace %q, want one %s event saying why", c.Result.Trace, trace.CodeTraceRefused)
	}
}
