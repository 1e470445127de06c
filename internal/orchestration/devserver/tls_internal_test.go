package devserver

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCredentialsReusedOrRenewed: the certificates of the first start are
// reused by the next ones, and made anew when a file is missing or
// unparsable, a key is readable by other users, or they expire soon.
func TestCredentialsReusedOrRenewed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), TLSDirName)
	now := time.Now()
	first, why, err := ensureCredentials(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	if why == "" {
		t.Errorf("the first call reported reusing certificates")
	}
	same := func(a, b *credentials) bool {
		return bytes.Equal(a.caPEM, b.caPEM) && bytes.Equal(a.serverCertPEM, b.serverCertPEM) &&
			bytes.Equal(a.serverKeyPEM, b.serverKeyPEM) && bytes.Equal(a.clientCertPEM, b.clientCertPEM) &&
			bytes.Equal(a.clientKeyPEM, b.clientKeyPEM)
	}
	again, why, err := ensureCredentials(dir, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if why != "" || !same(first, again) {
		t.Fatalf("a second call made new certificates (%s), want the first ones reused", why)
	}
	// The CA's key is not kept.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 5 {
		t.Errorf("%d files in %s, want 5 (CA, server and client certificates and keys)", len(entries), dir)
	}

	tests := []struct {
		name  string
		spoil func(t *testing.T)
		at    time.Time
	}{
		{"client key missing", func(t *testing.T) { remove(t, filepath.Join(dir, clientKeyFile)) }, now},
		{"CA unparsable", func(t *testing.T) { write(t, filepath.Join(dir, caFile), []byte("not PEM"), 0o600) }, now},
		{"server certificate of another CA", func(t *testing.T) {
			other, err := newCredentials(now)
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, serverCertFile), other.serverCertPEM, 0o600)
			write(t, filepath.Join(dir, serverKeyFile), other.serverKeyPEM, 0o600)
		}, now},
		{"key readable by others", func(t *testing.T) {
			if err := os.Chmod(filepath.Join(dir, serverKeyFile), 0o644); err != nil {
				t.Fatal(err)
			}
		}, now},
		{"expiring within renewBefore", func(*testing.T) {}, now.Add(certValidity - renewBefore/2)},
	}
	prev := first
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spoil(t)
			got, why, err := ensureCredentials(dir, tt.at)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("renewed because: %s", why)
			if why == "" || same(prev, got) {
				t.Errorf("certificates reused, want new ones")
			}
			prev = got
			for _, f := range []string{caFile, serverCertFile, serverKeyFile, clientCertFile, clientKeyFile} {
				fi, err := os.Stat(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != 0o600 {
					t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
				}
			}
			if _, why, err := ensureCredentials(dir, tt.at); err != nil || why != "" {
				t.Errorf("the renewed certificates are not reused: %v %s", err, why)
			}
		})
	}
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}
