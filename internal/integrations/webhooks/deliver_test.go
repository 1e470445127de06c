package webhooks

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
)

// received is what the test receiver saw of one delivery.
type received struct {
	Method, ContentType, UserAgent, ID string
	Body                               string
	VerifyErr                          string
}

func TestDeliver(t *testing.T) {
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan received, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := received{
			Method: r.Method, ContentType: r.Header.Get("Content-Type"), UserAgent: r.Header.Get("User-Agent"),
			ID: r.Header.Get(HeaderID), Body: string(body),
		}
		// The receiver checks the signature exactly as a customer would.
		if err := Verify(secret, r.Header, body, time.Now(), 0); err != nil {
			rec.VerifyErr = err.Error()
			w.WriteHeader(http.StatusUnauthorized)
		} else {
			w.WriteHeader(http.StatusAccepted)
		}
		got <- rec
	}))
	defer srv.Close()

	g, err := NewGuard("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	c := g.Client(5 * time.Second)
	m := Message{ID: "msg_run_42", Timestamp: time.Now(), Body: []byte(`{"id":"run_42","status":"succeeded"}`)}
	status, err := Deliver(context.Background(), c, srv.URL+"/hook", secret, m)
	if err != nil || status != http.StatusAccepted {
		t.Fatalf("Deliver = %d, %v; want 202, nil", status, err)
	}
	want := received{Method: "POST", ContentType: "application/json", UserAgent: "svc-webhooks/1", ID: "msg_run_42", Body: string(m.Body)}
	if diff := cmp.Diff(want, <-got); diff != "" {
		t.Errorf("receiver saw (-want +got):\n%s", diff)
	}

	// A delivery signed with another secret is refused by the receiver, and
	// Deliver reports the status.
	other, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	status, err = Deliver(context.Background(), c, srv.URL+"/hook", other, m)
	if err == nil || status != http.StatusUnauthorized || !strings.Contains(err.Error(), "401") {
		t.Errorf("Deliver(wrong secret) = %d, %v; want 401 and an error naming it", status, err)
	}
	if rec := <-got; rec.VerifyErr == "" {
		t.Errorf("receiver verified a delivery signed with the wrong secret")
	}
}

func TestDeliverStatuses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(http.StatusOK)
		case "/down":
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(strings.Repeat("x", 1<<20))) // larger than the drain cap
		case "/moved":
			http.Redirect(w, r, "http://169.254.169.254/", http.StatusFound)
		}
	}))
	defer srv.Close()
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	m := Message{ID: "msg_1", Timestamp: time.Now(), Body: []byte(`{}`)}
	allowed, err := NewGuard("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	closed, err := NewGuard("")
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name       string
		g          *Guard
		path       string
		m          Message
		secret     string
		wantStatus int
		wantErr    string // "" = success
		wantIs     error
	}{
		{"2xx", allowed, "/ok", m, secret, 200, "", nil},
		{"5xx", allowed, "/down", m, secret, 503, "503 Service Unavailable", nil},
		{"redirect is not followed", allowed, "/moved", m, secret, 302, "302 Found", nil},
		{"refused at dial", closed, "/ok", m, secret, 0, "loopback", derrors.ErrInvalid},
		{"bad secret", allowed, "/ok", m, "whsec_???", 0, "secret", derrors.ErrInvalid},
		{"zero timestamp", allowed, "/ok", Message{ID: "msg_1"}, secret, 0, "timestamp", derrors.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, err := Deliver(context.Background(), tc.g.Client(5*time.Second), srv.URL+tc.path, tc.secret, tc.m)
			if status != tc.wantStatus {
				t.Errorf("status = %d, want %d", status, tc.wantStatus)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("Deliver = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Deliver = %v, want an error containing %q", err, tc.wantErr)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("Deliver = %v, want errors.Is %v", err, tc.wantIs)
			}
		})
	}
}

// TestDeliverKeepsTokenOutOfErrors checks that a receiver's URL token does not
// leak into errors, which end up in logs and run records.
func TestDeliverKeepsTokenOutOfErrors(t *testing.T) {
	g, err := NewGuard("")
	if err != nil {
		t.Fatal(err)
	}
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Deliver(context.Background(), g.Client(time.Second), "http://127.0.0.1:1/services/T000/SECRET-TOKEN", secret,
		Message{ID: "m", Timestamp: time.Now(), Body: []byte(`{}`)})
	if err == nil || strings.Contains(err.Error(), "SECRET-TOKEN") {
		t.Errorf("Deliver = %v, want an error without the URL path", err)
	}
}
