package workflows_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"svc/internal/domain/eval"
)

// Pull ingest end to end (issue 16 point 6): a trace source of kind otel
// whose endpoint is a loopback server answering Jaeger's API v3
// (GET /api/v3/traces/{id}, OTLP JSON) to the bearer token held in a
// workspace secret; POST /scorecards/ingest/pull makes a batch whose case
// activities fetch each trace, seal it (source otel) and grade and judge
// it as an ingested trace. An unknown trace fails its case, not the batch.

// jaegerTrace is an API v3 answer: a root span whose output.value is the
// agent's answer, and a tool call.
func jaegerTrace(traceID, answer string) string {
	return fmt.Sprintf(`{"result":{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"qa-agent"}}]},
"scopeSpans":[{"spans":[
{"traceId":%[1]q,"spanId":"eee19b7ec3c1b174","name":"invoke_agent","startTimeUnixNano":"1795168800000000000","endTimeUnixNano":"1795168802000000000",
 "attributes":[{"key":"output.value","value":{"stringValue":%[2]q}}]},
{"traceId":%[1]q,"spanId":"eee19b7ec3c1b175","parentSpanId":"eee19b7ec3c1b174","name":"execute_tool lookup","startTimeUnixNano":"1795168800100000000","endTimeUnixNano":"1795168800200000000",
 "attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},{"key":"gen_ai.tool.name","value":{"stringValue":"lookup"}}]}]}]}]}}`, traceID, answer)
}

func TestPullGradesAndJudgesTracesFromASource(t *testing.T) {
	const token = "jaeger-token-secret"
	traces := map[string]string{
		"5b8efff798038103d269b633813fc601": jaegerTrace("5b8efff798038103d269b633813fc601", "right"),
		"5b8efff798038103d269b633813fc602": jaegerTrace("5b8efff798038103d269b633813fc602", "wrong"),
	}
	jaeger := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		body, ok := traces[strings.TrimPrefix(r.URL.Path, "/api/v3/traces/")]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"code":5,"message":"trace not found"}}`))
			return
		}
		w.Write([]byte(body))
	}))
	defer jaeger.Close()

	s := newStack(t, "sqlite")
	s.dataset(t, "qa", "even1", "odd1", "even2")
	s.judge(t, "len", "1", lengthJudge)
	s.call(t, "PUT", "/secrets/jaeger-token", `{"value":"`+token+`","allowedHosts":["127.0.0.1"]}`, 204, nil)
	s.call(t, "PUT", "/workspace/trace-sources/jaeger", `{"kind":"otel","endpoint":"`+jaeger.URL+`","authSecret":"jaeger-token"}`, 204, nil)

	var queued eval.Scorecard
	s.call(t, "POST", "/scorecards/ingest/pull", `{"dataset":{"id":"qa","version":"1.0.0"},"judges":[{"id":"len"}],"source":{"name":"jaeger"},"runs":[
		{"caseId":"even1","runId":"5b8efff798038103d269b633813fc601"},
		{"caseId":"odd1","runId":"5b8efff798038103d269b633813fc602"},
		{"caseId":"even2","runId":"5b8efff798038103d269b633813fc6ff"}]}`, 202, &queued)
	sc := s.waitBatch(t, queued.ID)
	if sc.Status != eval.ScorecardSucceeded {
		t.Fatalf("the pull ended %s: %+v", sc.Status, sc.Error)
	}
	if len(sc.Scorecard) != 3 {
		t.Fatalf("%d case rows, want 3: %+v", len(sc.Scorecard), sc.Scorecard)
	}
	for _, row := range sc.Scorecard {
		runID := eval.ChildRunID(s.ws, sc.ID, row.CaseID, 0)
		switch row.CaseID {
		case "even1", "odd1":
			if want := row.CaseID == "even1"; row.CasePass != want {
				t.Errorf("case %s: casePass %v, want %v (%s)", row.CaseID, row.CasePass, want, row.VerdictBasis)
			}
			if _, ok := row.Outcomes["judge:len"]; !ok {
				t.Errorf("case %s was not judged: %v", row.CaseID, row.Outcomes)
			}
			tr, err := s.store.GetTrajectory(t.Context(), s.ws, runID)
			if err != nil || tr.Source != "otel" || tr.EventCount != 3 {
				t.Errorf("case %s: trajectory %+v (%v), want 3 events sealed with source otel", row.CaseID, tr, err)
			}
		case "even2":
			var run eval.Run
			s.call(t, "GET", "/runs/"+runID, "", 200, &run)
			if run.Status != eval.StatusFailed || run.Error == nil || !strings.Contains(run.Error.Message, "not found") {
				t.Errorf("the unknown trace's run: %s %+v, want failed saying not found", run.Status, run.Error)
			}
			if strings.Contains(fmt.Sprint(run), token) {
				t.Errorf("the run record holds the token")
			}
		}
	}
}
