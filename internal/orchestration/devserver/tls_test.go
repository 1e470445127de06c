package devserver_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"svc/internal/orchestration"
	"svc/internal/orchestration/devserver"
)

// TestEmbeddedTemporalRequiresClientCert is issue 30's third finding at the
// embedded server: a client that knows the address of the frontend or of an
// internal service (history, matching, worker) cannot call it without the
// client certificate of the data dir: not in plain gRPC, not over TLS
// without a certificate, not with a certificate of another CA. With the
// client certificate, it can; and so can a client built from the files, as
// `svc serve` and `svc worker` pointed at `svc dev` build theirs.
func TestEmbeddedTemporalRequiresClientCert(t *testing.T) {
	if testing.Short() {
		t.Skip("embedded Temporal: skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	srv, err := devserver.Start(ctx, devserver.Options{DBPath: filepath.Join(dir, "temporal.db"), Namespace: namespace, Logger: testLogger()})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() { _ = srv.Stop() }()

	files := srv.TLSFiles()
	tlsDir := filepath.Join(dir, devserver.TLSDirName)
	checkMode(t, tlsDir, 0o700|os.ModeDir)
	for _, f := range []string{files.CA, files.Cert, files.Key} {
		if filepath.Dir(f) != tlsDir {
			t.Errorf("TLS file %s is not in %s", f, tlsDir)
		}
		checkMode(t, f, 0o600)
	}
	caPEM, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	trustCA := x509.NewCertPool()
	if !trustCA.AppendCertsFromPEM(caPEM) {
		t.Fatalf("%s holds no certificate", files.CA)
	}
	fromFiles, err := orchestration.TLSSettings{CA: files.CA, Cert: files.Cert, Key: files.Key}.Config()
	if err != nil {
		t.Fatalf("TLSSettings from %+v: %v", files, err)
	}

	services := srv.Services()
	names := make([]string, 0, len(services))
	for name := range services {
		names = append(names, name)
	}
	slices.Sort(names)
	if want := []string{"frontend", "history", "matching", "worker"}; !slices.Equal(names, want) {
		t.Fatalf("Services() = %v, want %v", names, want)
	}

	foreign := foreignCert(t)
	refused := []struct {
		name  string
		creds credentials.TransportCredentials
	}{
		{"plain gRPC", insecure.NewCredentials()},
		{"TLS without a client certificate", credentials.NewTLS(&tls.Config{RootCAs: trustCA})},
		// GetClientCertificate, not Certificates: Go's client sends a
		// certificate from Certificates only when the server names its CA.
		{"a client certificate of another CA", credentials.NewTLS(&tls.Config{RootCAs: trustCA,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &foreign, nil }})},
	}
	for _, name := range names {
		addr := services[name]
		for _, r := range refused {
			if err := call(ctx, t, name, addr, r.creds); status.Code(err) != codes.Unavailable {
				t.Errorf("%s (%s) with %s: %v, want refused (Unavailable)", name, addr, r.name, err)
			} else {
				t.Logf("%s with %s: %v", name, r.name, err)
			}
		}
		for _, cfg := range []*tls.Config{srv.ClientTLS(), fromFiles} {
			if err := call(ctx, t, name, addr, credentials.NewTLS(cfg)); err != nil {
				t.Errorf("%s (%s) with the client certificate: %v", name, addr, err)
			}
		}
	}
}

// call makes one call to the service at addr: DescribeNamespace and
// ListWorkflowExecutions on the frontend, the gRPC health check elsewhere.
func call(ctx context.Context, t *testing.T, service, addr string, creds credentials.TransportCredentials) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if service != "frontend" {
		_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	ws := workflowservice.NewWorkflowServiceClient(conn)
	if _, err := ws.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace}); err != nil {
		return err
	}
	_, err = ws.ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace})
	return err
}

// foreignCert is a self-signed client certificate for 127.0.0.1.
func foreignCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "svc dev Temporal client"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() & (os.ModeDir | os.ModePerm); got != want {
		t.Errorf("mode of %s = %v, want %v", path, got, want)
	}
}
