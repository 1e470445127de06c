package devserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/server/common/config"
)

// TLSDirName is the folder, next to the database file, that holds the
// embedded server's certificates (mode 0700, files 0600).
const TLSDirName = "temporal-tls"

// The files of TLSDirName. The CA's private key is not kept: nothing is
// signed after the first start, and a key that is not on disk cannot leak.
const (
	caFile         = "ca.pem"
	serverCertFile = "server.pem"
	serverKeyFile  = "server-key.pem"
	clientCertFile = "client.pem"
	clientKeyFile  = "client-key.pem"
)

// certValidity is how long the certificates are valid. They never leave the
// machine, and a developer's data dir should not stop working after a year.
const certValidity = 10 * 365 * 24 * time.Hour

// renewBefore makes a start regenerate certificates that expire this soon,
// so a long-lived svc dev never meets an expired one.
const renewBefore = 30 * 24 * time.Hour

// TLSFiles names the PEM files a client of the embedded server uses: the
// CA that signed the server's certificate, and the client certificate with
// its key. `svc serve` and `svc worker` take them as TEMPORAL_TLS_CA,
// TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY.
type TLSFiles struct {
	CA, Cert, Key string
}

// credentials are the embedded server's CA, server and client certificates,
// as PEM and parsed.
type credentials struct {
	caPEM                       []byte
	serverCertPEM, serverKeyPEM []byte
	clientCertPEM, clientKeyPEM []byte
	caPool                      *x509.CertPool
	client                      tls.Certificate
}

// files returns the paths of the client's files in dir.
func tlsFiles(dir string) TLSFiles {
	return TLSFiles{CA: filepath.Join(dir, caFile), Cert: filepath.Join(dir, clientCertFile), Key: filepath.Join(dir, clientKeyFile)}
}

// ensureCredentials loads the certificates in dir, or creates them (with
// the folder) when a file is missing, unparsable, does not chain to the CA,
// expires within renewBefore, or holds a key readable by other users. It
// reports why it created them ("" when it reused them).
func ensureCredentials(dir string, now time.Time) (_ *credentials, created string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("certificate folder: %w", err)
	}
	// A folder that existed with looser permissions gets tightened.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("certificate folder: %w", err)
	}
	c, err := loadCredentials(dir, now)
	if err == nil {
		return c, "", nil
	}
	reason := err.Error()
	c, err = newCredentials(now)
	if err != nil {
		return nil, "", fmt.Errorf("create certificates: %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{caFile, c.caPEM}, {serverCertFile, c.serverCertPEM}, {serverKeyFile, c.serverKeyPEM},
		{clientCertFile, c.clientCertPEM}, {clientKeyFile, c.clientKeyPEM},
	} {
		if err := writeFileAtomic(filepath.Join(dir, f.name), f.data); err != nil {
			return nil, "", fmt.Errorf("write certificates: %w", err)
		}
	}
	return c, reason, nil
}

// loadCredentials reads and checks the certificates in dir.
func loadCredentials(dir string, now time.Time) (*credentials, error) {
	read := func(name string, secret bool) ([]byte, error) {
		path := filepath.Join(dir, name)
		fi, err := os.Lstat(path)
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file", path)
		}
		if secret && fi.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("%s has mode %v: other users may have read it", path, fi.Mode().Perm())
		}
		return os.ReadFile(path)
	}
	var c credentials
	var err error
	for _, f := range []struct {
		name   string
		secret bool
		dst    *[]byte
	}{
		{caFile, false, &c.caPEM}, {serverCertFile, false, &c.serverCertPEM}, {serverKeyFile, true, &c.serverKeyPEM},
		{clientCertFile, false, &c.clientCertPEM}, {clientKeyFile, true, &c.clientKeyPEM},
	} {
		if *f.dst, err = read(f.name, f.secret); err != nil {
			return nil, err
		}
	}
	if err := c.check(now); err != nil {
		return nil, err
	}
	return &c, nil
}

// check parses the PEM and verifies that the server and client certificates
// chain to the CA for their uses and stay valid for renewBefore; it fills
// caPool and client.
func (c *credentials) check(now time.Time) error {
	block, _ := pem.Decode(c.caPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return errors.New("the CA file holds no certificate")
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Errorf("CA certificate: %w", err)
	}
	if !ca.IsCA {
		return errors.New("the CA certificate is not a CA")
	}
	c.caPool = x509.NewCertPool()
	c.caPool.AddCert(ca)
	server, err := tls.X509KeyPair(c.serverCertPEM, c.serverKeyPEM)
	if err != nil {
		return fmt.Errorf("server certificate: %w", err)
	}
	if c.client, err = tls.X509KeyPair(c.clientCertPEM, c.clientKeyPEM); err != nil {
		return fmt.Errorf("client certificate: %w", err)
	}
	at := now.Add(renewBefore)
	for _, chk := range []struct {
		name string
		leaf *x509.Certificate
		host string
		uses []x509.ExtKeyUsage
	}{
		// The server's certificate is also the client certificate of the
		// internal services when they call each other.
		{"server", server.Leaf, loopback, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		{"server", server.Leaf, "localhost", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		{"client", c.client.Leaf, "", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
	} {
		for _, t := range []time.Time{now, at} {
			opts := x509.VerifyOptions{Roots: c.caPool, DNSName: chk.host, CurrentTime: t, KeyUsages: chk.uses}
			if _, err := chk.leaf.Verify(opts); err != nil {
				return fmt.Errorf("%s certificate: %w", chk.name, err)
			}
		}
	}
	return nil
}

// newCredentials creates a CA and a server and a client certificate signed
// by it, ECDSA P-256, valid for certValidity, for 127.0.0.1, ::1 and
// localhost.
func newCredentials(now time.Time) (*credentials, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	notBefore, notAfter := now.Add(-time.Hour), now.Add(certValidity)
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "svc dev Temporal CA"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	if caTmpl.SerialNumber, err = serial(); err != nil {
		return nil, err
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	leaf := func(name string, uses ...x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: name},
			NotBefore:   notBefore,
			NotAfter:    notAfter,
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: uses,
			DNSNames:    []string{"localhost"},
			IPAddresses: []net.IP{net.ParseIP(loopback), net.IPv6loopback},
		}
		if tmpl.SerialNumber, err = serial(); err != nil {
			return nil, nil, err
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", keyDER), nil
	}
	c := &credentials{caPEM: pemBlock("CERTIFICATE", caDER)}
	if c.serverCertPEM, c.serverKeyPEM, err = leaf("svc dev Temporal server", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth); err != nil {
		return nil, err
	}
	if c.clientCertPEM, c.clientKeyPEM, err = leaf("svc dev Temporal client", x509.ExtKeyUsageClientAuth); err != nil {
		return nil, err
	}
	if err := c.check(now); err != nil {
		return nil, fmt.Errorf("the new certificates do not check: %w", err)
	}
	return c, nil
}

// serial is a random 128-bit certificate serial number.
func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// writeFileAtomic writes data to path with mode 0600 through a temporary
// file renamed into place, so a crash leaves the old file or the new one.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(f.Name()) }()
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// rootTLS is the server's TLS configuration: every gRPC listener (the
// frontend and the history, matching and worker services) requires a
// client certificate signed by the CA. The internal services call each
// other with the server's certificate (Temporal's internode client presents
// the internode server certificate); the system worker calls the frontend
// with the client certificate.
func (c *credentials) rootTLS() config.RootTLS {
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	ca := []string{b64(c.caPEM)}
	group := config.GroupTLS{
		Server: config.ServerTLS{
			CertData:          b64(c.serverCertPEM),
			KeyData:           b64(c.serverKeyPEM),
			ClientCAData:      ca,
			RequireClientAuth: true,
		},
		Client: config.ClientTLS{RootCAData: ca},
	}
	return config.RootTLS{
		Internode: group,
		Frontend:  group,
		SystemWorker: config.WorkerTLS{
			CertData: b64(c.clientCertPEM),
			KeyData:  b64(c.clientKeyPEM),
			Client:   config.ClientTLS{RootCAData: ca},
		},
	}
}

// clientTLS is the configuration a client of the embedded server dials
// with: it trusts only the CA and presents the client certificate.
func (c *credentials) clientTLS() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		RootCAs:      c.caPool,
		Certificates: []tls.Certificate{c.client},
	}
}
