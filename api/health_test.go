package api_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/api"
	"svc/api/apitest"
)

// newServer builds a Server with a searchable logger and a loopback client.
func newServer(t *testing.T, o api.Options) (*api.Server, *apitest.Client, *apitest.Logs) {
	t.Helper()
	logger, logs := apitest.NewLogger()
	if o.Logger == nil {
		o.Logger = logger
	}
	s := api.New(o)
	return s, apitest.NewClient(t, s.Handler()), logs
}

// fakeChecker is a dependency that answers with err, or hangs until its
// deadline when hang is set.
type fakeChecker struct {
	name string
	err  error
	hang bool
}

func (f fakeChecker) Name() string { return f.name }

func (f fakeChecker) Check(ctx context.Context) error {
	if f.hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return f.err
}

func TestHealthz(t *testing.T) {
	_, client, _ := newServer(t, api.Options{})
	res := client.Get(t, "/healthz")
	if res.Status != http.StatusOK {
		t.Fatalf("status = %d, want 200; body %s", res.Status, res.Body)
	}
	var got map[string]any
	res.JSON(t, &got)
	if diff := cmp.Diff(map[string]any{"ok": true}, got); diff != "" {
		t.Errorf("body mismatch (-want +got):\n%s", diff)
	}
}

func TestReadyz(t *testing.T) {
	// secret stands for what a dependency's error may carry (a host, a
	// user name): it belongs in the log, never in the public body.
	const secret = "dial tcp 10.9.8.7:7233: user svc_admin refused"
	tests := []struct {
		name       string
		checkers   []api.Checker
		wantStatus int
		wantChecks map[string]any
		wantNamed  string // a word the 503 message must contain
		wantLogged string // a check error the log must hold
	}{
		{
			name:       "no checkers",
			wantStatus: http.StatusOK,
			wantChecks: map[string]any{},
		},
		{
			name:       "all reachable",
			checkers:   []api.Checker{fakeChecker{name: "database"}, fakeChecker{name: "temporal"}},
			wantStatus: http.StatusOK,
			wantChecks: map[string]any{"database": "ok", "temporal": "ok"},
		},
		{
			name:       "temporal unreachable",
			checkers:   []api.Checker{fakeChecker{name: "database"}, fakeChecker{name: "temporal", err: errors.New(secret)}},
			wantStatus: http.StatusServiceUnavailable,
			wantChecks: map[string]any{"database": "ok", "temporal": "unreachable"},
			wantNamed:  "temporal unreachable",
			wantLogged: secret,
		},
		{
			name:       "database hangs past its deadline",
			checkers:   []api.Checker{fakeChecker{name: "database", hang: true}, fakeChecker{name: "temporal"}},
			wantStatus: http.StatusServiceUnavailable,
			wantChecks: map[string]any{"database": "timeout", "temporal": "ok"},
			wantNamed:  "database timeout",
			wantLogged: context.DeadlineExceeded.Error(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, client, logs := newServer(t, api.Options{Checkers: tt.checkers})
			s.SetCheckTimeout(50 * time.Millisecond)
			res := client.Get(t, "/readyz")
			if res.Status != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", res.Status, tt.wantStatus, res.Body)
			}
			if tt.wantStatus == http.StatusOK {
				var got struct {
					OK     bool           `json:"ok"`
					Checks map[string]any `json:"checks"`
				}
				res.JSON(t, &got)
				if !got.OK {
					t.Errorf("ok = false, want true")
				}
				if diff := cmp.Diff(tt.wantChecks, got.Checks); diff != "" {
					t.Errorf("checks mismatch (-want +got):\n%s", diff)
				}
				return
			}
			info := res.ErrorInfo(t)
			if info.Code != api.CodeUnavailable {
				t.Errorf("code = %q, want %q", info.Code, api.CodeUnavailable)
			}
			if !strings.Contains(info.Message, tt.wantNamed) {
				t.Errorf("message %q does not name %q", info.Message, tt.wantNamed)
			}
			if diff := cmp.Diff(map[string]any{"checks": tt.wantChecks}, info.Details); diff != "" {
				t.Errorf("details mismatch (-want +got):\n%s", diff)
			}
			if strings.Contains(string(res.Body), secret) {
				t.Errorf("body leaks the check's error: %s", res.Body)
			}
			logs.Find(t, "of the failed check", func(rec map[string]any) bool {
				return rec["msg"] == "readiness check failed" && rec["request_id"] == info.RequestID &&
					strings.Contains(rec["error"].(string), tt.wantLogged)
			})
		})
	}
}
