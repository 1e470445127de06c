// Package pgtest gives each test a fresh PostgreSQL database on a real
// server: the one DATABASE_URL names, or else a throwaway cluster started
// once per test binary from the binaries installed on the machine.
//
// A package that uses it calls Main from TestMain so the cluster is stopped:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"svc/internal/testing/pgcluster"
)

var (
	mu      sync.Mutex
	cluster *pgcluster.Cluster
	baseURL string
	baseErr error // sticky: a failed start is not retried by every test
	started bool
)

// Main runs the package's tests and then stops the cluster, if one was
// started, before exiting with the tests' status.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run runs the tests and stops the cluster, if one was started, and returns
// the exit code, for a TestMain that has clean-up of its own.
func Run(m *testing.M) int {
	code := m.Run()
	mu.Lock()
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
		cluster = nil
	}
	mu.Unlock()
	return code
}

// base returns the URL of the server to create test databases on, starting
// the cluster on first use.
func base(ctx context.Context) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if started {
		return baseURL, baseErr
	}
	started = true
	if u := os.Getenv("DATABASE_URL"); u != "" {
		baseURL = u
		return baseURL, nil
	}
	c, err := pgcluster.Start(ctx)
	if err != nil {
		baseErr = err
		return "", err
	}
	cluster, baseURL = c, c.URL()
	return baseURL, nil
}

// URL returns the URL of a new, empty database (svc_test_<random>) that is
// dropped when t ends. Without DATABASE_URL and without PostgreSQL binaries it
// skips t, except when CI=true: there a missing PostgreSQL is a failure.
func URL(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("pgtest: PostgreSQL tests are skipped in -short mode")
	}
	// Not t.Context: the cluster outlives this test.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 2*time.Minute)
	defer cancel()
	b, err := base(ctx)
	if errors.Is(err, pgcluster.ErrNoBinaries) {
		msg := "pgtest: no PostgreSQL: set DATABASE_URL or install the server (apt-get install postgresql): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if err != nil {
		t.Fatalf("pgtest: start PostgreSQL: %v", err)
	}

	name := "svc_test_" + randomHex(8)
	admin, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v", redact(b), err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		admin, err := pgx.Connect(ctx, b)
		if err != nil {
			t.Errorf("pgtest: drop %s: %v", name, err)
			return
		}
		defer admin.Close(ctx)
		// FORCE ends sessions a test forgot to close, which would otherwise
		// make DROP fail.
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop %s: %v", name, err)
		}
	})
	u, err := withDatabase(b, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// withDatabase returns the connection string base with its database replaced
// by name, for both URL and keyword/value forms.
func withDatabase(base, name string) (string, error) {
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err != nil {
			return "", fmt.Errorf("parse DATABASE_URL: %w", err)
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	// Keyword/value form: a later keyword wins.
	return base + " dbname=" + name, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand documents it)
	return hex.EncodeToString(b)
}

// redact hides a password in a URL for messages.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}
