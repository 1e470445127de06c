package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"svc/internal/client"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fakeAPI is a loopback svc API: each test routes "METHOD /path" to a
// handler and reads back what the client sent.
type fakeAPI struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	routes map[string]http.HandlerFunc
	seen   []*recorded
}

// recorded is one request the fake API received.
type recorded struct {
	method, path string
	header       http.Header
	body         []byte
}

func newFakeAPI(t *testing.T, routes map[string]http.HandlerFunc) *fakeAPI {
	f := &fakeAPI{t: t, routes: routes}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.seen = append(f.seen, &recorded{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body})
		h := f.routes[r.Method+" "+r.URL.Path]
		f.mu.Unlock()
		if h == nil {
			writeError(w, http.StatusNotFound, "NOT_FOUND", "no route "+r.Method+" "+r.URL.Path)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// requests returns what the fake API received, in order.
func (f *fakeAPI) requests() []*recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*recorded(nil), f.seen...)
}

// last returns the last request to method and path, failing when none.
func (f *fakeAPI) last(method, path string) *recorded {
	f.t.Helper()
	rs := f.requests()
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].method == method && rs[i].path == path {
			return rs[i]
		}
	}
	f.t.Fatalf("no %s %s request", method, path)
	return nil
}

func writeJSONBody(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSONBody(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg, "requestId": "req-42"}})
}

// answer is a handler that always writes v with status.
func answer(status int, v any) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { writeJSONBody(w, status, v) }
}

// invocation runs one client command with env as its whole environment.
type invocation struct {
	env  map[string]string
	tty  bool
	poll time.Duration
}

func (in invocation) run(t *testing.T, name string, f Command, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	x := &cli{stdout: &o, stderr: &e, getenv: func(k string) string { return in.env[k] }, tty: in.tty, poll: in.poll}
	if x.poll == 0 {
		x.poll = time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code = runClient(ctx, name, f, x, args)
	return o.String(), e.String(), code
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// TestClientSendsTokenAndWorkspace: the bearer token comes from SVC_TOKEN
// and the workspace from --workspace (over SVC_WORKSPACE); the token never
// reaches the output, even when the service refuses it.
func TestClientSendsTokenAndWorkspace(t *testing.T) {
	api := newFakeAPI(t, map[string]http.HandlerFunc{
		"POST /scorecards/sc_1/verify-manifest": func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "the bearer token is not valid")
		},
	})
	const token = "s3cret-token-value"
	for _, tc := range []struct {
		name          string
		env           map[string]string
		args          []string
		wantAuth      string
		wantWorkspace string
		wantHint      bool
	}{
		{"token and env workspace", map[string]string{client.EnvURL: api.srv.URL, client.EnvToken: token, client.EnvWorkspace: "acme"}, nil, "Bearer " + token, "acme", false},
		{"flag workspace wins", map[string]string{client.EnvURL: api.srv.URL, client.EnvToken: token, client.EnvWorkspace: "acme"}, []string{"--workspace", "beta"}, "Bearer " + token, "beta", false},
		{"no token, no workspace", map[string]string{client.EnvURL: api.srv.URL}, nil, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := invocation{env: tc.env}.run(t, "verify", RunVerify, append([]string{"sc_1"}, tc.args...)...)
			if code != exitProblem {
				t.Errorf("exit %d, want %d", code, exitProblem)
			}
			req := api.last("POST", "/scorecards/sc_1/verify-manifest")
			if got := req.header.Get("Authorization"); got != tc.wantAuth {
				t.Errorf("Authorization %q, want %q", got, tc.wantAuth)
			}
			if got := req.header.Get(client.WorkspaceHeader); got != tc.wantWorkspace {
				t.Errorf("%s %q, want %q", client.WorkspaceHeader, got, tc.wantWorkspace)
			}
			want := "svc verify: the bearer token is not valid (request req-42)\n"
			if tc.wantHint {
				want = "svc verify: the bearer token is not valid; set SVC_TOKEN to a bearer token (request req-42)\n"
			}
			if errOut != want {
				t.Errorf("stderr %q, want %q", errOut, want)
			}
			if strings.Contains(out+errOut, token) {
				t.Errorf("the token appears in the output: %q %q", out, errOut)
			}
		})
	}
}

// TestClientProblemsExitTwo: an unreachable service, a bad --url and an
// answer without the error body are each one line on stderr and exit 2.
func TestClientProblemsExitTwo(t *testing.T) {
	api := newFakeAPI(t, map[string]http.HandlerFunc{
		"POST /scorecards/sc_1/verify-manifest": func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<html>bad gateway</html>")
		},
	})
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	for _, tc := range []struct {
		name string
		url  string
		want string
	}{
		{"unreachable", deadURL, "svc verify: cannot reach " + deadURL + ": "},
		{"not a URL", "ftp://x", "svc verify: usage: --url \"ftp://x\" is not an http(s) URL"},
		{"no error body", api.srv.URL, "svc verify: " + api.srv.URL + " answered HTTP 502 Bad Gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := invocation{env: map[string]string{client.EnvURL: tc.url}}.run(t, "verify", RunVerify, "sc_1")
			if code != exitProblem || out != "" || !strings.HasPrefix(errOut, tc.want) {
				t.Errorf("exit %d stdout %q stderr %q, want exit 2, no stdout, stderr starting %q", code, out, errOut, tc.want)
			}
			if strings.Contains(errOut, "<html>") {
				t.Errorf("stderr echoes a non-API body: %q", errOut)
			}
		})
	}
}

// TestParseArgsInterspersed: flags may follow the positional arguments.
func TestParseArgsInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		wantPos  []string
		wantJSON bool
	}{
		{[]string{"sc_1"}, []string{"sc_1"}, false},
		{[]string{"sc_1", "--json"}, []string{"sc_1"}, true},
		{[]string{"--json", "sc_1", "sc_2"}, []string{"sc_1", "sc_2"}, true},
		{[]string{"--", "--json"}, []string{"--json"}, false},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		asJSON := fs.Bool("json", false, "")
		pos, err := parseArgs(fs, tc.args)
		if err != nil {
			t.Fatalf("parseArgs(%q): %v", tc.args, err)
		}
		if diff := cmp.Diff(tc.wantPos, pos); diff != "" || *asJSON != tc.wantJSON {
			t.Errorf("parseArgs(%q): json %v, positional diff (-want +got):\n%s", tc.args, *asJSON, diff)
		}
	}
}
