package orchestration

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"

	"svc/internal/platform/derrors"
)

// TLSSettings are the PEM files of a TLS connection to the Temporal
// frontend (TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY, TEMPORAL_TLS_CA,
// TEMPORAL_TLS_SERVER_NAME). All empty: plain gRPC.
type TLSSettings struct {
	// Cert and Key are the client certificate and its private key, for a
	// frontend that requires mutual TLS; both or neither. They are read
	// again at every new connection, so a renewed pair is picked up
	// without a restart.
	Cert, Key string
	// CA holds the certificates that may sign the frontend's certificate;
	// the system's roots when empty.
	CA string
	// ServerName is the name the frontend's certificate must carry; the
	// host of TEMPORAL_ADDRESS when empty.
	ServerName string
}

// Enabled reports whether any setting asks for TLS.
func (s TLSSettings) Enabled() bool {
	return s.Cert != "" || s.Key != "" || s.CA != "" || s.ServerName != ""
}

// Config loads the files into a client TLS configuration; nil when no
// setting is given. An error names the setting to fix.
func (s TLSSettings) Config() (*tls.Config, error) {
	if !s.Enabled() {
		return nil, nil
	}
	if (s.Cert == "") != (s.Key == "") {
		return nil, fmt.Errorf("TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together: %w: set both (a client certificate and its key) or neither", derrors.ErrInvalid)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.ServerName}
	if s.CA != "" {
		pem, err := os.ReadFile(s.CA)
		if err != nil {
			return nil, fmt.Errorf("TEMPORAL_TLS_CA=%s: %w: %w", s.CA, derrors.ErrInvalid, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TEMPORAL_TLS_CA=%s: %w: no PEM certificate in the file", s.CA, derrors.ErrInvalid)
		}
		cfg.RootCAs = pool
	}
	if s.Cert != "" {
		r := &certReloader{cert: s.Cert, key: s.Key}
		// Load once now, so a wrong file stops start-up naming it.
		if _, err := r.get(nil); err != nil {
			return nil, fmt.Errorf("TEMPORAL_TLS_CERT=%s, TEMPORAL_TLS_KEY=%s: %w: %w", s.Cert, s.Key, derrors.ErrInvalid, err)
		}
		cfg.GetClientCertificate = r.get
	}
	return cfg, nil
}

// certReloader reads a client certificate and key at every handshake (a
// new connection, which is rare) and keeps the last pair that loaded, so a
// renewal caught half-written does not break a reconnect.
type certReloader struct {
	cert, key string
	mu        sync.Mutex
	last      *tls.Certificate
}

func (r *certReloader) get(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	c, err := tls.LoadX509KeyPair(r.cert, r.key)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if r.last != nil {
			return r.last, nil
		}
		return nil, err
	}
	r.last = &c
	return &c, nil
}
