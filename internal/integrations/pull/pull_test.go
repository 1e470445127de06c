package pull

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/eval"
	"svc/internal/domain/trace"
	"svc/internal/platform/derrors"
)

// platform is a loopback server answering one platform's documented
// routes with the recorded fixtures of testdata/, and 401 to a request
// without the right credential.
func platform(t *testing.T, kind, credential string) *httptest.Server {
	t.Helper()
	fixture := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	authorized := func(r *http.Request) bool {
		switch kind {
		case KindLangfuse:
			u, p, ok := r.BasicAuth()
			return ok && u+":"+p == credential
		case KindLangSmith:
			return r.Header.Get("x-api-key") == credential
		case KindMLflow:
			if u, p, ok := r.BasicAuth(); ok {
				return u+":"+p == credential
			}
		}
		return r.Header.Get("Authorization") == "Bearer "+credential
	}
	routes := map[string]func(r *http.Request) (int, []byte){
		KindLangfuse: func(r *http.Request) (int, []byte) {
			switch {
			case r.Method == http.MethodGet && r.URL.Path == "/api/public/traces/lf-trace-1":
				return 200, fixture("langfuse_trace.json")
			case r.Method == http.MethodGet && r.URL.Path == "/api/public/traces" && r.URL.Query().Get("limit") != "":
				return 200, fixture("langfuse_list.json")
			}
			return 404, []byte(`{"message":"Trace not found"}`)
		},
		KindLangSmith: func(r *http.Request) (int, []byte) {
			switch {
			case r.Method == http.MethodGet && r.URL.Path == "/api/v1/runs/3f1a9f8e-0000-4000-8000-000000000001":
				return 200, fixture("langsmith_run.json")
			case r.Method == http.MethodPost && r.URL.Path == "/api/v1/runs/query":
				body, _ := io.ReadAll(r.Body)
				if strings.Contains(string(body), `"is_root":true`) {
					return 200, []byte(`{"runs": [` + string(fixture("langsmith_run.json")) + `], "cursors": {}}`)
				}
				return 200, fixture("langsmith_query.json")
			}
			return 404, []byte(`{"detail":"Run not found"}`)
		},
		KindPhoenix: func(r *http.Request) (int, []byte) {
			if r.Method == http.MethodGet && r.URL.Path == "/v1/projects/default/spans" {
				if r.URL.Query().Get("parent_id") == "null" {
					return 200, fixture("phoenix_roots.json")
				}
				return 200, fixture("phoenix_spans.json")
			}
			return 404, []byte(`{"detail":"Project not found"}`)
		},
		KindMLflow: func(r *http.Request) (int, []byte) {
			switch {
			case r.URL.Path == "/api/2.0/mlflow/traces/tr-7d0c4b1e2a3f4c5d9e8f/info":
				return 200, fixture("mlflow_info.json")
			case r.URL.Path == "/api/2.0/mlflow/get-trace-artifact" && r.URL.Query().Get("request_id") == "tr-7d0c4b1e2a3f4c5d9e8f":
				return 200, fixture("mlflow_artifact.json")
			case r.URL.Path == "/api/2.0/mlflow/traces" && r.URL.Query().Get("experiment_ids") == "42":
				return 200, fixture("mlflow_search.json")
			}
			return 404, []byte(`{"error_code":"RESOURCE_DOES_NOT_EXIST","message":"Trace not found"}`)
		},
		KindOTel: func(r *http.Request) (int, []byte) {
			switch {
			case r.URL.Path == "/api/v3/traces/5b8efff798038103d269b633813fc60c":
				return 200, fixture("otel_jaeger_trace.json")
			case r.URL.Path == "/api/v2/traces/5b8efff798038103d269b633813fc60c":
				return 200, fixture("otel_tempo_trace.json")
			case r.URL.Path == "/api/v3/traces" && r.URL.Query().Get("query.service_name") == "qa-agent":
				return 200, fixture("otel_jaeger_search.json")
			case r.URL.Path == "/api/v3/traces" && r.URL.Query().Get("query.service_name") == "idle-agent":
				// Jaeger v2's answer to a search that finds nothing.
				return 404, []byte(`{"error":{"httpCode":404,"message":"No traces found"}}`)
			}
			return 404, []byte(`{"error":{"code":5,"message":"trace not found"}}`)
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r) {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"message":"Invalid credentials"}`))
			return
		}
		status, body := routes[kind](r)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestFetchEachKind(t *testing.T) {
	for _, tc := range []struct {
		kind, project, runID, endpointPath string
		want                               []string // kind:name of each event, in order
		answer                             string
		inTokens                           int64
	}{
		{kind: KindLangfuse, runID: "lf-trace-1",
			want: []string{"llm_call:chat gpt-4o", "tool_call:calculator", "error:retrieve", "message:"}, answer: "4", inTokens: 812},
		{kind: KindLangSmith, runID: "3f1a9f8e-0000-4000-8000-000000000001",
			want: []string{"span:AgentExecutor", "llm_call:ChatOpenAI", "tool_call:calculator", "message:"}, answer: "4", inTokens: 812},
		{kind: KindPhoenix, project: "default", runID: "0af7651916cd43dd8448eb211c80319c",
			want: []string{"span:agent", "llm_call:ChatCompletion", "error:calculator", "message:"}, answer: "4", inTokens: 812},
		{kind: KindMLflow, runID: "tr-7d0c4b1e2a3f4c5d9e8f",
			want: []string{"span:qa-agent", "llm_call:ChatOpenAI", "tool_call:calculator", "message:"}, answer: "4", inTokens: 812},
		{kind: KindOTel, runID: "5B8EFFF798038103D269B633813FC60C",
			want: []string{"span:invoke_agent", "llm_call:chat gpt-4o", "tool_call:calculator", "message:"}, answer: "4", inTokens: 812},
		{kind: KindOTel, runID: "5b8efff798038103d269b633813fc60c", endpointPath: "/api/v2/traces",
			want: []string{"llm_call:invoke_agent"}},
	} {
		t.Run(tc.kind+tc.endpointPath, func(t *testing.T) {
			srv := platform(t, tc.kind, "pk-lf-1:sk-lf-1")
			c, err := New(Config{Kind: tc.kind, Endpoint: srv.URL + tc.endpointPath, Project: tc.project, AuthSecret: "src-key"}, srv.Client(), "pk-lf-1:sk-lf-1")
			if err != nil {
				t.Fatal(err)
			}
			tr, err := c.Fetch(context.Background(), tc.runID)
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			events := tr.Events(trace.SpanAttrMapping{})
			var got []string
			for _, e := range events {
				got = append(got, e.Kind+":"+e.Name)
				if err := e.Validate(); err != nil {
					t.Errorf("event %+v does not validate: %v", e, err)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			ev, u := eval.Extract(events, "")
			if ev.FinalAnswer != tc.answer {
				t.Errorf("final answer %q, want %q", ev.FinalAnswer, tc.answer)
			}
			if u.InputTokens != tc.inTokens {
				t.Errorf("input tokens %d, want %d", u.InputTokens, tc.inTokens)
			}
		})
	}
}

func TestFetchModelAndTool(t *testing.T) {
	srv := platform(t, KindLangfuse, "pk:sk")
	c, err := New(Config{Kind: KindLangfuse, Endpoint: srv.URL}, srv.Client(), "pk:sk")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := c.Fetch(context.Background(), "lf-trace-1")
	if err != nil {
		t.Fatal(err)
	}
	events := tr.Events(trace.SpanAttrMapping{})
	llm, tool := events[0], events[1]
	if llm.Model != "gpt-4o" || llm.OutputTokens != 40 || llm.CostUSD != 0.0031 {
		t.Errorf("llm_call %+v: want model gpt-4o, 40 output tokens, cost 0.0031", llm)
	}
	if string(tool.Input) != `{"expression":"2+2"}` {
		t.Errorf("tool input %s", tool.Input)
	}
	if got := events[2].Message; got != "index unavailable" {
		t.Errorf("error message %q", got)
	}
	// A mapping reads the span's metadata, as the inspect route shows.
	m := trace.SpanAttrMapping{Fields: map[string][]string{"toolName": {"metadata.acme.tool"}}, SpanKinds: map[string]string{"retrieve": "tool_call"}}
	if got := tr.Events(m)[2]; got.Kind != eval.EventToolCall || got.Name != "kb" {
		t.Errorf("mapped span: %s %q, want tool_call kb", got.Kind, got.Name)
	}
}

func TestList(t *testing.T) {
	for _, tc := range []struct {
		kind, project string
		wantIDs       []string
	}{
		{KindLangfuse, "", []string{"lf-trace-2", "lf-trace-1"}},
		{KindLangSmith, "9b2f0000-0000-4000-8000-00000000aaaa", []string{"3f1a9f8e-0000-4000-8000-000000000001"}},
		{KindPhoenix, "default", []string{"0af7651916cd43dd8448eb211c80319c"}},
		{KindMLflow, "42", []string{"tr-7d0c4b1e2a3f4c5d9e8f"}},
		{KindOTel, "qa-agent", []string{"6c9f00f798038103d269b633813fc60d", "5b8efff798038103d269b633813fc60c"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			srv := platform(t, tc.kind, "pk:sk")
			c, err := New(Config{Kind: tc.kind, Endpoint: srv.URL, Project: tc.project}, srv.Client(), "pk:sk")
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.List(context.Background(), 10)
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			var ids []string
			for _, s := range got {
				ids = append(ids, s.TraceID)
			}
			if diff := cmp.Diff(tc.wantIDs, ids); diff != "" {
				t.Errorf("trace ids (-want +got):\n%s", diff)
			}
		})
	}
}

// TestListFindingNothing: Jaeger's 404 for a search that finds nothing is
// an empty list; a 404 of a wrong endpoint stays an error.
func TestListFindingNothing(t *testing.T) {
	srv := platform(t, KindOTel, "k")
	c, _ := New(Config{Kind: KindOTel, Endpoint: srv.URL, Project: "idle-agent"}, srv.Client(), "k")
	if got, err := c.List(context.Background(), 10); err != nil || len(got) != 0 {
		t.Errorf("List of a service with no traces = %v, %v; want none", got, err)
	}
	c, _ = New(Config{Kind: KindOTel, Endpoint: srv.URL + "/wrong", Project: "qa-agent"}, srv.Client(), "k")
	if _, err := c.List(context.Background(), 10); err == nil {
		t.Error("List at a wrong endpoint: no error")
	}
}

func TestListMetrics(t *testing.T) {
	srv := platform(t, KindOTel, "k")
	c, _ := New(Config{Kind: KindOTel, Endpoint: srv.URL, Project: "qa-agent"}, srv.Client(), "k")
	got, err := c.List(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if got[1].Spans != 2 || got[1].InputTokens != 812 || got[1].DurationMs != 2000 || got[1].Name != "invoke_agent" || got[0].Status != "error" {
		t.Errorf("summaries %+v", got)
	}
}

func TestErrorsSayWhatToFixWithoutTheCredential(t *testing.T) {
	const secret = "sk-very-secret-value"
	srv := platform(t, KindLangSmith, secret)
	for _, tc := range []struct {
		name, cred, runID string
		is                error
		retryable         bool
		want              string
	}{
		{"wrong key", "sk-wrong-" + secret, "3f1a9f8e-0000-4000-8000-000000000001", derrors.ErrInvalid, false, `refused the credential (HTTP 401)`},
		{"unknown run", secret, "nope", derrors.ErrNotFound, false, "not found (HTTP 404)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{Kind: KindLangSmith, Endpoint: srv.URL, AuthSecret: "ls-key"}, srv.Client(), tc.cred)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Fetch(context.Background(), tc.runID)
			if !errors.Is(err, tc.is) || Retryable(err) != tc.retryable {
				t.Fatalf("err %v: want %v, retryable %v", err, tc.is, tc.retryable)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), secret) {
				t.Errorf("error %q: want it to say %q and never the credential", err, tc.want)
			}
			if fmtd := c.String() + c.GoString(); strings.Contains(fmtd, secret) {
				t.Errorf("String %q shows the credential", fmtd)
			}
		})
	}
}

func TestServerErrorsAreRetryable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()
	c, _ := New(Config{Kind: KindLangfuse, Endpoint: srv.URL}, srv.Client(), "")
	_, err := c.Fetch(context.Background(), "x")
	if !Retryable(err) || !errors.Is(err, derrors.ErrUnavailable) {
		t.Fatalf("err %v: want a retryable ErrUnavailable", err)
	}
	srv.Close()
	if _, err := c.Fetch(context.Background(), "x"); !Retryable(err) {
		t.Fatalf("a closed server: err %v, want retryable", err)
	}
}

func TestGuardRefusesLoopbackUnlessAllowed(t *testing.T) {
	srv := platform(t, KindLangfuse, "pk:sk")
	g, err := NewGuard("")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := New(Config{Kind: KindLangfuse, Endpoint: srv.URL}, g.Client(0), "pk:sk")
	_, err = c.Fetch(context.Background(), "lf-trace-1")
	if !errors.Is(err, derrors.ErrInvalid) || Retryable(err) || !strings.Contains(err.Error(), "SVC_WEBHOOK_ALLOW") {
		t.Fatalf("err %v: want the guard's refusal naming SVC_WEBHOOK_ALLOW", err)
	}
	g, _ = NewGuard("127.0.0.1")
	c, _ = New(Config{Kind: KindLangfuse, Endpoint: srv.URL}, g.Client(0), "pk:sk")
	if _, err := c.Fetch(context.Background(), "lf-trace-1"); err != nil {
		t.Fatalf("allow-listed loopback: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string // "" when valid
	}{
		{Config{Kind: KindLangfuse, Endpoint: "https://cloud.langfuse.com"}, ""},
		{Config{Kind: "datadog", Endpoint: "https://x"}, "source.kind"},
		{Config{Kind: KindLangfuse, Endpoint: "ftp://x"}, "source.endpoint"},
		{Config{Kind: KindLangfuse, Endpoint: "https://u:p@x"}, "user:password"},
		{Config{Kind: KindPhoenix, Endpoint: "https://x"}, "project is required"},
		{Config{Kind: KindLangfuse, Endpoint: "https://x", Correlate: "metadata:svc_run_id"}, "finds traces by id only"},
		{Config{Kind: KindLangSmith, Endpoint: "https://x", Correlate: "metadata:svc_run_id"}, ""},
		{Config{Kind: KindLangSmith, Endpoint: "https://x", Correlate: "tag"}, "correlate"},
		{Config{Kind: KindOTel, Endpoint: "https://x", Mapping: trace.SpanAttrMapping{SpanKinds: map[string]string{"a": "bogus"}}}, "spanAttrMapping"},
	} {
		err := tc.cfg.Validate("source.")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.cfg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, derrors.ErrInvalid)):
			t.Errorf("%+v: err %v, want an ErrInvalid saying %q", tc.cfg, err, tc.want)
		}
	}
}

func TestMLflowIDs(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	for in, want := range map[string]string{"0x1a2b": "1a2b", b64: "0102030405060708", "plain": "plain"} {
		if got := mlflowID(in); got != want {
			t.Errorf("mlflowID(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCorrelateByMetadata: a runId that is a metadata value (LangSmith)
// or a tag value (MLflow) is found with the platform's documented search.
func TestCorrelateByMetadata(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		read := func(name string) []byte {
			b, _ := os.ReadFile(filepath.Join("testdata", name))
			return b
		}
		switch {
		case r.URL.Path == "/api/v1/runs/query":
			body, _ := io.ReadAll(r.Body)
			asked = append(asked, string(body))
			if strings.Contains(string(body), `"filter"`) {
				w.Write([]byte(`{"runs": [` + string(read("langsmith_run.json")) + `]}`))
				return
			}
			w.Write(read("langsmith_query.json"))
		case r.URL.Path == "/api/2.0/mlflow/traces":
			asked = append(asked, r.URL.Query().Get("filter"))
			w.Write(read("mlflow_search.json"))
		case r.URL.Path == "/api/2.0/mlflow/get-trace-artifact":
			w.Write(read("mlflow_artifact.json"))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct{ kind, project, wantAsked string }{
		{KindLangSmith, "9b2f0000-0000-4000-8000-00000000aaaa", `and(eq(metadata_key, \"svc_run_id\"), eq(metadata_value, \"case-even1\"))`},
		{KindMLflow, "42", "tags.`svc_run_id` = 'case-even1'"},
	} {
		asked = nil
		c, err := New(Config{Kind: tc.kind, Endpoint: srv.URL, Project: tc.project, Correlate: "metadata:svc_run_id"}, srv.Client(), "")
		if err != nil {
			t.Fatal(err)
		}
		tr, err := c.Fetch(context.Background(), "case-even1")
		if err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		if len(tr.Spans) != 3 || len(asked) == 0 || !strings.Contains(asked[0], tc.wantAsked) {
			t.Errorf("%s: %d spans, asked %q; want 3 spans found by %s", tc.kind, len(tr.Spans), asked, tc.wantAsked)
		}
	}
}
