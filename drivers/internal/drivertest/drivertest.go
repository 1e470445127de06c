// Package drivertest holds what the runtime drivers' tests share: the
// probe guard that lets a probe reach a test server on loopback, a
// loopback address nobody listens on, and the check that a probe of a
// wrong or hostile endpoint never repeats what it answered. Only test code
// imports it.
package drivertest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"svc/drivers/probe"
	"svc/internal/platform/netguard"
)

// Body is what a server of CheckAnswers sends; a probe's Detail must never
// repeat it (see Echoes).
const Body = "INTERNAL-Body-only-the-service-sees"

// LoopbackGuard is the probe guard allowing 127.0.0.1, for probing a test
// server on loopback.
func LoopbackGuard(t testing.TB) *netguard.Guard {
	t.Helper()
	g, err := probe.NewGuard("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// DeadAddr is a loopback host:port the OS just handed out and that nobody
// listens on any more, so that dialling it is refused.
func DeadAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Answer is one way a wrong or hostile server answers a probe, and what the
// probe's Detail must then say.
type Answer struct {
	Status int
	CType  string // the answer's Content-Type
	Want   string // in Detail
}

// CheckAnswers serves each of answers, with Body, from a loopback server
// (TLS when tls is set), probes it with probeAt, and fails t unless the
// result is not reachable, says Want and does not repeat Body.
func CheckAnswers(t *testing.T, tls bool, answers []Answer, probeAt func(*httptest.Server) probe.Result) {
	t.Helper()
	for _, a := range answers {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", a.CType)
			w.WriteHeader(a.Status)
			io.WriteString(w, Body)
		}))
		if tls {
			srv.StartTLS()
		} else {
			srv.Start()
		}
		got := probeAt(srv)
		srv.Close()
		if got.Reachable || Echoes(got.Detail) || !strings.Contains(got.Detail, a.Want) {
			t.Errorf("status %d %s: Probe = %+v, want not reachable with %q and none of the body", a.Status, a.CType, got, a.Want)
		}
	}
}

// Echoes reports whether detail repeats Body, which a probe must not: it
// would let a caller read an internal service's answers.
func Echoes(detail string) bool { return strings.Contains(detail, "INTERNAL") }
