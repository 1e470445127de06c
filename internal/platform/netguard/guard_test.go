package netguard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"svc/internal/platform/derrors"
)

// The guard's behaviour is tested through package webhooks, its first
// user; these cases cover what netguard adds: the caller's own words and a
// refusal callers can read.
var probeNames = Names{Setting: "SVC_PROBE_ALLOW", Field: "addr", Target: "runtime", UserinfoHint: "use authSecret"}

func TestNamesWordTheErrors(t *testing.T) {
	if _, err := New("10.0.0.0/33", probeNames); err == nil || !strings.HasPrefix(err.Error(), derrors.ErrInvalid.Error()+": SVC_PROBE_ALLOW entry") {
		t.Errorf("New with a bad entry = %v, want it to name SVC_PROBE_ALLOW", err)
	}
	g, err := New("", probeNames)
	if err != nil {
		t.Fatal(err)
	}
	err = g.CheckURL(context.Background(), "http://169.254.169.254/latest")
	var re *RefusedError
	if !errors.As(err, &re) || !errors.Is(err, derrors.ErrInvalid) {
		t.Fatalf("CheckURL(metadata) = %v, want a *RefusedError wrapping ErrInvalid", err)
	}
	if re.Setting != "SVC_PROBE_ALLOW" || re.Addr.String() != "169.254.169.254" || !strings.Contains(re.Kind, "link-local") ||
		!strings.HasPrefix(err.Error(), "addr address is 169.254.169.254") {
		t.Errorf("refusal = %+v (%v)", re, err)
	}
	if err := g.CheckURL(context.Background(), "http://u:p@example.com"); err == nil || !strings.Contains(err.Error(), "use authSecret") {
		t.Errorf("CheckURL with userinfo = %v, want the caller's hint", err)
	}
}

// TestDialRefusalIsReadable: the dial-time refusal survives the HTTP
// client's wrapping as a *RefusedError with the host that was dialled.
func TestDialRefusalIsReadable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the server was reached")
	}))
	defer srv.Close()
	g, err := New("", probeNames)
	if err != nil {
		t.Fatal(err)
	}
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	_, err = g.Client(0).Get("http://localhost:" + port + "/")
	var re *RefusedError
	if !errors.As(err, &re) || re.Host != "localhost" || !re.Addr.IsLoopback() || !strings.Contains(err.Error(), `runtime host "localhost" connects to`) {
		t.Fatalf("GET via localhost = %v, want a *RefusedError for host localhost", err)
	}
}
