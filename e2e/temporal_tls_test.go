package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"svc/internal/orchestration"
	"svc/internal/testing/testwait"
)

// devTemporalTLS is the environment with which `svc serve` and `svc worker`
// use the Temporal server of a `svc dev` on dataDir: its frontend requires
// the client certificate svc dev keeps in the data dir.
func devTemporalTLS(dataDir string) []string {
	dir := filepath.Join(dataDir, "temporal-tls")
	return []string{
		"TEMPORAL_TLS_CA=" + filepath.Join(dir, "ca.pem"),
		"TEMPORAL_TLS_CERT=" + filepath.Join(dir, "client.pem"),
		"TEMPORAL_TLS_KEY=" + filepath.Join(dir, "client-key.pem"),
	}
}

// temporalProbeArg makes the e2e test binary, run as a local job's harness,
// act as a Temporal client that knows the addresses of svc dev's Temporal
// services but holds no certificate (see init).
const temporalProbeArg = "-svc-temporal-probe"

// init runs the probe when the test binary is a harness: args are the
// client key's path, the frontend's address and the internal services'.
// For each address it prints whether a TCP connection opens, then whether
// a call in plain gRPC and one over TLS without a client certificate
// succeed ("listed"/"served") or not ("refused").
func init() {
	if len(os.Args) < 4 || os.Args[1] != temporalProbeArg {
		return
	}
	keyPath, frontend, args := os.Args[2], os.Args[3], os.Args[4:]
	if _, err := os.ReadFile(keyPath); err == nil {
		fmt.Println("key-read")
	} else {
		fmt.Println("key-refused")
	}
	// registry=ADDR and cred=PATH: the managed image store and its
	// credential file; the job may reach the one and must not read the
	// other, and the store must answer it nothing without it.
	var others []string
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "cred="):
			if _, err := os.ReadFile(strings.TrimPrefix(a, "cred=")); err == nil {
				fmt.Println("credential-read")
			} else {
				fmt.Println("credential-refused")
			}
		case strings.HasPrefix(a, "registry="):
			c := &http.Client{Timeout: 10 * time.Second}
			resp, err := c.Get("http://" + strings.TrimPrefix(a, "registry=") + "/v2/_catalog")
			switch {
			case err != nil:
				fmt.Println("registry-unreachable")
			case resp.StatusCode == http.StatusUnauthorized:
				fmt.Println("registry-refused")
			default:
				fmt.Println("registry-served")
			}
			if err == nil {
				resp.Body.Close()
			}
		default:
			others = append(others, a)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	creds := []struct {
		name string
		c    credentials.TransportCredentials
	}{
		{"plain", insecure.NewCredentials()},
		// The job cannot read the CA either: it skips verification.
		{"tls", credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})},
	}
	for i, addr := range append([]string{frontend}, others...) {
		name := "frontend"
		if i > 0 {
			name = "internal"
		}
		var d net.Dialer
		if c, err := d.DialContext(ctx, "tcp", addr); err == nil {
			c.Close()
			fmt.Println(name + "-tcp-open")
		} else {
			fmt.Println(name + "-tcp-refused")
		}
		for _, cr := range creds {
			if err := temporalCall(ctx, addr, i == 0, cr.c); err == nil {
				fmt.Println(name + "-" + cr.name + "-served")
			} else {
				fmt.Println(name + "-" + cr.name + "-refused")
			}
		}
	}
	fmt.Println("done")
	os.Exit(0)
}

// temporalCall lists the workflows of the default namespace on a frontend,
// or asks another service for its health.
func temporalCall(ctx context.Context, addr string, frontend bool, creds credentials.TransportCredentials) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if !frontend {
		_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	ws := workflowservice.NewWorkflowServiceClient(conn)
	if _, err := ws.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"}); err != nil {
		return err
	}
	_, err = ws.ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default"})
	return err
}

// TestDevTemporalRequiresClientCert is issue 30's third finding through
// the binary: a harness running as a local job that shares the host's
// network (SVC_LOCAL_NETWORK=host, where the isolated network is not set
// up) reaches the ports of svc dev's Temporal services but can call none of
// them (plain gRPC, or TLS without a certificate: the client key is in the
// data dir, which the job cannot read); the test process, with the files of
// the data dir that docs/operations.md names, can.
func TestDevTemporalRequiresClientCert(t *testing.T) {
	dataDir, scripts := t.TempDir(), jobDir(t)
	svc := start(t, devEnv(dataDir, "SVC_LOCAL_NETWORK=host"), true, "dev")
	m := temporalLine.FindStringSubmatch(svc.Stdout())
	if m == nil {
		t.Fatalf("svc dev did not print Temporal's address: %s", svc.Stdout())
	}
	frontend := m[1]
	env := devTemporalTLS(dataDir)
	testwait.Until(t, 30*time.Second, "svc dev to print the TLS files", func() bool {
		return strings.Contains(svc.Stdout(), "Temporal requires mutual TLS: a client uses "+strings.Join(env, " "))
	})
	var others []string
	_, apiPort, _ := strings.Cut(strings.TrimPrefix(svc.URL, "http://"), ":")
	for _, port := range listeningPorts(t, svc.cmd.Process.Pid) {
		if addr := "127.0.0.1:" + port; port != apiPort && addr != frontend {
			others = append(others, addr)
		}
	}
	// One of them is the managed image store (plain HTTP on loopback):
	// it answers nothing without the credential in the data dir.
	registry := ""
	for i, addr := range others {
		c := &http.Client{Timeout: 2 * time.Second}
		resp, err := c.Get("http://" + addr + "/v2/")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.Header.Get("Docker-Distribution-API-Version") != "" {
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("the image store at %s answers %d without a credential, want 401", addr, resp.StatusCode)
			}
			registry = addr
			others = append(others[:i:i], others[i+1:]...)
			break
		}
	}
	if registry == "" {
		t.Errorf("svc dev serves no image store among %v", others)
	}
	if len(others) != 3 {
		t.Errorf("svc dev listens on %v besides the API, the frontend and the image store, want Temporal's history, matching and worker services", others)
	}

	// The harness is this test binary, copied where a job can read it.
	self, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	probe := filepath.Join(scripts, "temporal-probe")
	out, err := os.OpenFile(probe, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, self); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	key := strings.TrimPrefix(env[2], "TEMPORAL_TLS_KEY=")
	cred := filepath.Join(dataDir, "images", "credential")
	run := probeRun(t, svc.URL, "temporal-probe", append(append([]string{probe, temporalProbeArg, key, frontend}, others...), "registry="+registry, "cred="+cred))
	want := []string{"key-refused", "registry-refused", "credential-refused", "frontend-tcp-open", "frontend-plain-refused", "frontend-tls-refused"}
	for range others {
		want = append(want, "internal-tcp-open", "internal-plain-refused", "internal-tls-refused")
	}
	want = append(want, "done")
	t.Logf("the job: %q", run.Result.Evidence.FinalAnswer)
	if got := strings.Fields(run.Result.Evidence.FinalAnswer); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("what the job could do:\n got %q\nwant %q", got, want)
	}

	// With the data dir's files, as serve and worker use them, every
	// service answers.
	cfg, err := orchestration.TLSSettings{
		CA:   strings.TrimPrefix(env[0], "TEMPORAL_TLS_CA="),
		Cert: strings.TrimPrefix(env[1], "TEMPORAL_TLS_CERT="),
		Key:  key,
	}.Config()
	if err != nil {
		t.Fatal(err)
	}
	for i, addr := range append([]string{frontend}, others...) {
		if err := temporalCall(t.Context(), addr, i == 0, credentials.NewTLS(cfg)); err != nil {
			t.Errorf("%s with the client certificate: %v", addr, err)
		}
	}
}
