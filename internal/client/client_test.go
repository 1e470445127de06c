package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestErrorsCarryTheServicesMessage: a refusal in the one JSON error shape
// becomes an *Error whose message is the service's (with its request id
// and problems); an answer without that shape is described, not echoed;
// a 401 without a token says how to send one.
func TestErrorsCarryTheServicesMessage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.EscapedPath() {
		case "/datasets":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":{"code":"INVALID","message":"the dataset is not valid","requestId":"req-1","details":{"problems":[{"path":"cases[0].input","message":"required"},{"message":"no cases"}]}}}`))
		case "/scorecards/sc%2F1":
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("<html>proxy</html>"))
		default:
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	c := New(srv.URL, "", "")
	ctx := context.Background()

	_, _, err := c.Register(ctx, "/datasets", map[string]any{"id": "qa"})
	if got, want := err.Error(), "the dataset is not valid (request req-1)"; got != want {
		t.Errorf("Register error %q, want %q", got, want)
	}
	if StatusOf(err) != http.StatusBadRequest || Transient(err) {
		t.Errorf("status %d transient %v, want 400 and not transient", StatusOf(err), Transient(err))
	}
	if diff := cmp.Diff([]string{"cases[0].input: required", "no cases"}, Problems(err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}

	_, _, err = c.Scorecard(ctx, "sc/1")
	if got, want := err.Error(), srv.URL+" answered HTTP 502 Bad Gateway"; got != want {
		t.Errorf("Scorecard error %q, want %q", got, want)
	}
	if !Transient(err) {
		t.Error("a 502 is not transient")
	}

	_, _, err = c.Run(ctx, "run_1")
	if got, want := err.Error(), srv.URL+" answered HTTP 401 Unauthorized; set "+EnvToken+" to a bearer token"; got != want {
		t.Errorf("Run error %q, want %q", got, want)
	}

	_, _, err = New("http://127.0.0.1:1", "", "").Run(ctx, "run_1")
	var te *TransportError
	if !errors.As(err, &te) || !Transient(err) {
		t.Errorf("no answer: %v (%T), want a transient *TransportError", err, err)
	}
}
