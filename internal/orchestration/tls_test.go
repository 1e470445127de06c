package orchestration_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc/internal/orchestration"
	"svc/internal/platform/derrors"
)

// writeCert writes a self-signed certificate and its key as PEM files in
// dir and returns their paths.
func writeCert(t *testing.T, dir, name string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func TestTLSSettingsConfig(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir, "client")
	ca, _ := writeCert(t, dir, "ca")
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")

	if cfg, err := (orchestration.TLSSettings{}).Config(); cfg != nil || err != nil {
		t.Errorf("no settings: Config() = %v, %v; want nil, nil (plain gRPC)", cfg, err)
	}
	cfg, err := orchestration.TLSSettings{Cert: cert, Key: key, CA: ca, ServerName: "temporal.internal"}.Config()
	if err != nil {
		t.Fatalf("Config: %v", err)
	}
	if cfg.ServerName != "temporal.internal" || cfg.RootCAs == nil || cfg.GetClientCertificate == nil {
		t.Errorf("Config() = %+v, want the server name, the CA pool and the client certificate", cfg)
	}
	// Only a server name or a CA: TLS without a client certificate.
	if cfg, err := (orchestration.TLSSettings{ServerName: "temporal.internal"}).Config(); err != nil || cfg == nil || cfg.GetClientCertificate != nil {
		t.Errorf("server name only: Config() = %+v, %v; want TLS with no client certificate", cfg, err)
	}

	refused := []struct {
		name     string
		s        orchestration.TLSSettings
		wantText string
	}{
		{"cert without key", orchestration.TLSSettings{Cert: cert}, "TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together"},
		{"key without cert", orchestration.TLSSettings{Key: key, CA: ca}, "TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together"},
		{"CA missing", orchestration.TLSSettings{CA: missing}, "TEMPORAL_TLS_CA=" + missing},
		{"CA not PEM", orchestration.TLSSettings{CA: notPEM}, "TEMPORAL_TLS_CA=" + notPEM + ": invalid argument: no PEM certificate"},
		{"cert missing", orchestration.TLSSettings{Cert: missing, Key: key}, "TEMPORAL_TLS_CERT=" + missing},
		{"key of another cert", orchestration.TLSSettings{Cert: cert, Key: filepath.Join(dir, "ca-key.pem")}, "TEMPORAL_TLS_KEY="},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := tt.s.Config()
			if err == nil {
				t.Fatalf("Config(%+v) = %+v, want an error", tt.s, cfg)
			}
			if !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Config(%+v) = %q, want ErrInvalid containing %q", tt.s, err, tt.wantText)
			}
		})
	}
}

// TestTLSClientCertificateReloaded: a renewed client certificate is used
// at the next connection without a restart; a file caught half-written
// keeps the last one that loaded.
func TestTLSClientCertificateReloaded(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir, "client")
	cfg, err := orchestration.TLSSettings{Cert: cert, Key: key}.Config()
	if err != nil {
		t.Fatal(err)
	}
	subject := func() string {
		t.Helper()
		c, err := cfg.GetClientCertificate(&tls.CertificateRequestInfo{})
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.Subject.CommonName
	}
	if got := subject(); got != "client" {
		t.Fatalf("client certificate %q, want client", got)
	}
	renewed, renewedKey := writeCert(t, dir, "renewed")
	for _, mv := range [][2]string{{renewed, cert}, {renewedKey, key}} {
		if err := os.Rename(mv[0], mv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if got := subject(); got != "renewed" {
		t.Errorf("after renewal: client certificate %q, want renewed", got)
	}
	if err := os.WriteFile(key, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := subject(); got != "renewed" {
		t.Errorf("with a broken key file: client certificate %q, want the last good one (renewed)", got)
	}
}
