package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"svc/internal/domain/eval"
	"svc/internal/integrations/pull"
	"svc/store/records"
)

// POST /scorecards/ingest/pull (spec §4.5, issue 16 point 6): what the
// route answers, refuses and records at submit. The fetch, seal and
// grading of each child run is activities/pull_test.go's, against a
// loopback server answering the platform's documented API.

func TestIngestPullRecordsWhatEachRunPulls(t *testing.T) {
	orch := newFakeOrchestrator()
	e := newEnv(t, withOrchestrator(orch))
	a := e.tenant(t, "pull-ok")
	e.registerBatchInputs(t, a)
	want(t, e.do(t, http.MethodPut, "/workspace/trace-sources/lf", sourceBody, bearer(a.key)), http.StatusNoContent, "PUT source")
	for _, tc := range []struct {
		name, body, caseID, runID string
		want                      pull.Plan
	}{
		{"named source", `{"dataset":{"id":"ds","version":"latest"},"harness":{"id":"h","version":"latest"},"source":{"name":"lf","project":"p1"},
			"runs":[{"caseId":"a","runId":"lf-trace-1"},{"caseId":"nope","runId":"x"}]}`, "a", "lf-trace-1",
			pull.Plan{Name: "lf", RunID: "lf-trace-1", Source: pull.Config{Kind: "langfuse", Endpoint: "https://93.184.215.14", AuthSecret: "missing-key", Project: "p1"}}},
		{"inline source", `{"source":{"kind":"otel","endpoint":"https://93.184.215.14/"},"runs":[{"runId":"5b8efff798038103d269b633813fc60c"}]}`,
			"5b8efff798038103d269b633813fc60c", "5b8efff798038103d269b633813fc60c",
			pull.Plan{RunID: "5b8efff798038103d269b633813fc60c", Source: pull.Config{Kind: "otel", Endpoint: "https://93.184.215.14"}}},
		{"the ledger", `{"source":{"name":"svc"},"runs":[{"caseId":"c","runId":"nightly-1"}]}`, "c", "nightly-1",
			pull.Plan{Name: "svc", RunID: "nightly-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do(t, http.MethodPost, "/scorecards/ingest/pull", tc.body, bearer(a.key))
			want(t, res, http.StatusAccepted, "POST /scorecards/ingest/pull")
			sc := decode[eval.Scorecard](t, res)
			if sc.Status != eval.ScorecardQueued || sc.Progress.Total != 1 {
				t.Errorf("record = status %s, total %d; want queued, 1", sc.Status, sc.Progress.Total)
			}
			runID := eval.ChildRunID(a.ws, sc.ID, tc.caseID, 0)
			row, err := e.store.GetRun(t.Context(), a.ws, runID)
			if err != nil {
				t.Fatalf("the child run is not created: %v", err)
			}
			run, err := records.FromRow(row)
			if err != nil {
				t.Fatal(err)
			}
			if run.Origin == nil || run.Origin.Source != pull.OriginSource || run.Status != eval.StatusQueued {
				t.Errorf("child run: origin %+v, status %s; want a queued pull", run.Origin, run.Status)
			}
			p, err := e.store.GetTracePull(t.Context(), a.ws, runID)
			if err != nil {
				t.Fatalf("what the run pulls is not recorded: %v", err)
			}
			var got pull.Plan
			if err := json.Unmarshal(p.Doc, &got); err != nil {
				t.Fatal(err)
			}
			got.Viewer = ""
			if got.Name != tc.want.Name || got.RunID != tc.want.RunID || got.Source.Kind != tc.want.Source.Kind ||
				got.Source.Endpoint != tc.want.Source.Endpoint || got.Source.AuthSecret != tc.want.Source.AuthSecret || got.Source.Project != tc.want.Source.Project {
				t.Errorf("plan = %+v, want %+v", got, tc.want)
			}
			if _, err := e.store.GetTrajectory(t.Context(), a.ws, runID); err == nil {
				t.Errorf("a trace is sealed at submit; the activity fetches it")
			}
		})
	}
}

func TestIngestPullRefusals(t *testing.T) {
	orch := newFakeOrchestrator()
	e := newEnv(t, withOrchestrator(orch))
	a, b := e.tenant(t, "pull-bad"), e.tenant(t, "pull-other")
	e.registerBatchInputs(t, a)
	want(t, e.do(t, http.MethodPut, "/workspace/trace-sources/theirs", sourceBody, bearer(b.key)), http.StatusNoContent, "B's source")
	const runs = `"runs":[{"runId":"t1"}]`
	for _, tc := range []struct {
		name, body string
		status     int
		msg        string
	}{
		{"no source", `{` + runs + `}`, 400, "source is required"},
		{"name and kind", `{"source":{"name":"x","kind":"otel","endpoint":"https://93.184.215.14"},` + runs + `}`, 400, "not both"},
		{"bad kind", `{"source":{"kind":"datadog","endpoint":"https://93.184.215.14"},` + runs + `}`, 400, "source.kind"},
		{"loopback", `{"source":{"kind":"langfuse","endpoint":"http://127.0.0.1:3000"},` + runs + `}`, 400, "SVC_WEBHOOK_ALLOW"},
		{"ledger project", `{"source":{"name":"svc","project":"p"},` + runs + `}`, 400, "no project"},
		{"no runs", `{"source":{"name":"svc"},"runs":[]}`, 400, "runs is required"},
		{"no runId", `{"source":{"name":"svc"},"runs":[{"caseId":"a"}]}`, 400, "runs[0].runId"},
		{"caseId with a dataset", `{"dataset":{"id":"ds","version":"latest"},"source":{"name":"svc"},` + runs + `}`, 400, "runs[0].caseId is required"},
		{"one case twice", `{"source":{"name":"svc"},"runs":[{"runId":"t1"},{"runId":"t1"}]}`, 400, "one trace per case"},
		{"every caseId unknown", `{"dataset":{"id":"ds","version":"latest"},"source":{"name":"svc"},"runs":[{"caseId":"zz","runId":"t"}]}`, 400, "no run's caseId"},
		{"unknown member", `{"source":{"name":"svc"},` + runs + `,"traces":[]}`, 400, "traces"},
		{"unknown source", `{"source":{"name":"nosuch"},` + runs + `}`, 404, "nosuch"},
		{"another workspace's source", `{"source":{"name":"theirs"},` + runs + `}`, 404, "theirs"},
		{"unknown dataset", `{"dataset":{"id":"nods","version":"latest"},"source":{"name":"svc"},"runs":[{"caseId":"a","runId":"t"}]}`, 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do(t, http.MethodPost, "/scorecards/ingest/pull", tc.body, bearer(a.key))
			want(t, res, tc.status, tc.name)
			if !strings.Contains(string(res.Body), tc.msg) {
				t.Errorf("body %s does not say %q", res.Body, tc.msg)
			}
		})
	}
	if started := orch.startedBatches(); len(started) != 0 {
		t.Errorf("refused pulls started workflows: %+v", started)
	}
}
