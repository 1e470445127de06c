package e2e

import (
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"svc/internal/platform/config"
	"svc/internal/testing/testwait"
	"svc/store/pgtest"
)

// TestDevAnswersAndShutsDownGracefully: `svc dev` on a fresh data dir answers
// /healthz and /readyz, prints a curl line, and exits 0 on SIGTERM.
func TestDevAnswersAndShutsDownGracefully(t *testing.T) {
	p := start(t, devEnv(t.TempDir()), true, "dev")
	var health map[string]any
	if code := call(t, "GET", p.URL+"/healthz", nil, &health); code != 200 || health["ok"] != true {
		t.Fatalf("GET /healthz = %d %v, want 200 {ok:true}", code, health)
	}
	testwait.Until(t, 30*time.Second, "/readyz 200", func() bool { return call(t, "GET", p.URL+"/readyz", nil, nil) == 200 })
	// The curl line is written after the first line, which start waits
	// for: wait for it too.
	testwait.Until(t, 30*time.Second, "the curl line on stdout", func() bool {
		return strings.Contains(p.Stdout(), "try: curl -s "+p.URL+"/healthz")
	})

	p.signal(syscall.SIGTERM)
	if code := p.wait(time.Minute); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0", code)
	}
}

// TestServeWithoutSettingsNamesThem: serve and worker refuse to start without
// their dependencies, with one line naming the setting, and never fall back.
func TestServeWithoutSettingsNamesThem(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"serve no database", []string{"serve"}, nil, "DATABASE_URL is not set"},
		{"worker no database", []string{"worker"}, nil, "DATABASE_URL is not set"},
		{"serve no temporal", []string{"serve"}, []string{"DATABASE_URL=postgres://x@127.0.0.1:1/x"}, "TEMPORAL_ADDRESS is not set"},
		{"serve unreachable database", []string{"serve"}, []string{"DATABASE_URL=postgres://x@127.0.0.1:1/x", "TEMPORAL_ADDRESS=127.0.0.1:1"}, "DATABASE_URL=postgres://x@127.0.0.1:1/x: cannot reach PostgreSQL"},
		{"bad flag value", []string{"dev", "-max-body-bytes", "lots"}, nil, "-max-body-bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := start(t, tc.env, false, tc.args...)
			code := p.wait(time.Minute)
			if code == 0 {
				t.Fatalf("exit code 0, want failure")
			}
			errText := strings.TrimSpace(p.Stderr())
			mustContain(t, errText, tc.want)
		})
	}
}

// TestServeUnreachableTemporal: a reachable database but no Temporal stops
// start-up naming TEMPORAL_ADDRESS.
func TestServeUnreachableTemporal(t *testing.T) {
	url := pgtest.URL(t)
	p := start(t, []string{"DATABASE_URL=" + url, "TEMPORAL_ADDRESS=" + deadAddr(t)}, false, "serve")
	if code := p.wait(time.Minute); code == 0 {
		t.Fatal("serve started without Temporal")
	}
	mustContain(t, p.Stderr(), "TEMPORAL_ADDRESS=")
}

// TestHelpListsEverySetting: `svc help` and `svc <cmd> -h` list every setting.
func TestHelpListsEverySetting(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"dev", "-h"}, {"serve", "-h"}} {
		p := start(t, nil, false, args...)
		if code := p.wait(30 * time.Second); code != 0 {
			t.Fatalf("svc %v exit %d", args, code)
		}
		out := p.Stdout() + p.Stderr()
		for _, s := range config.Settings {
			mustContain(t, out, s.Env)
		}
	}
	p := start(t, nil, false, "version")
	p.wait(30 * time.Second)
	mustContain(t, p.Stdout(), "svc ")
}

// TestServeAndWorkerAgainstPostgresAndTemporal runs the production roles for
// real: PostgreSQL from pgtest and, as the external Temporal cluster, the
// frontend of a `svc dev` process.
func TestServeAndWorkerAgainstPostgresAndTemporal(t *testing.T) {
	temporalPort := freePort(t)
	devDir := t.TempDir()
	start(t, devEnv(devDir, "SVC_TEMPORAL_PORT="+temporalPort, "SVC_TASK_QUEUE=dev-only"), true, "dev")
	// svc dev's Temporal requires its client certificate: without it
	// serve stops at start-up, saying which settings to give.
	env := []string{"DATABASE_URL=" + pgtest.URL(t), "TEMPORAL_ADDRESS=127.0.0.1:" + temporalPort, "SVC_ADDR=127.0.0.1:0"}
	plain := start(t, env, false, "serve")
	if code := plain.wait(time.Minute); code == 0 {
		t.Fatalf("serve without the client certificate exited 0, want a refused start")
	}
	mustContain(t, plain.Stderr(), "TEMPORAL_ADDRESS=127.0.0.1:"+temporalPort+": cannot reach Temporal")
	mustContain(t, plain.Stderr(), "set TEMPORAL_TLS_CA, and TEMPORAL_TLS_CERT with TEMPORAL_TLS_KEY")
	env = append(env, devTemporalTLS(devDir)...)

	m := start(t, env, false, "migrate")
	if code := m.wait(time.Minute); code != 0 {
		t.Fatalf("migrate exit %d: %s", code, m.Stderr())
	}
	mustContain(t, m.Stdout(), "up to date")

	s := start(t, env, true, "serve")
	testwait.Until(t, 30*time.Second, "serve /readyz 200", func() bool { return call(t, "GET", s.URL+"/readyz", nil, nil) == 200 })

	w := start(t, env, false, "worker")
	testwait.Until(t, 30*time.Second, "worker polling line", func() bool { return strings.Contains(w.Stdout(), "polling task queue") })

	for _, p := range []*proc{w, s} {
		p.signal(syscall.SIGTERM)
		if code := p.wait(time.Minute); code != 0 {
			t.Fatalf("exit code after SIGTERM = %d, want 0; stderr: %s", code, tail(p.Stderr(), 2000))
		}
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string { return "127.0.0.1:" + freePort(t) }
