package pgcluster

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// startOrSkip starts a cluster, skipping when the machine has no PostgreSQL
// binaries, except in CI where a missing PostgreSQL is a failure.
func startOrSkip(t *testing.T) *Cluster {
	t.Helper()
	c, err := Start(t.Context())
	if errors.Is(err, ErrNoBinaries) {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	return c
}

func TestStartServesQueriesAndStopRemovesEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("PostgreSQL cluster: skipped in -short mode")
	}
	c := startOrSkip(t)
	ctx := t.Context()

	conn, err := pgx.Connect(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	var fsync string
	if err := conn.QueryRow(ctx, "SHOW fsync").Scan(&fsync); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if fsync != "off" {
		t.Errorf("fsync = %q, want off", fsync)
	}

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stat(%s) after Stop: err = %v, want not exist", c.Dir(), err)
	}
	select {
	case <-c.done:
	default:
		t.Error("postgres process still running after Stop")
	}
	ctx2, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx2, c.URL()); err == nil {
		conn.Close(ctx2)
		t.Error("Connect after Stop succeeded, want failure")
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestTwoClustersRunSideBySide(t *testing.T) {
	if testing.Short() {
		t.Skip("PostgreSQL cluster: skipped in -short mode")
	}
	a := startOrSkip(t)
	b := startOrSkip(t)
	if a.URL() == b.URL() {
		t.Fatalf("both clusters have URL %s", a.URL())
	}
	for _, c := range []*Cluster{a, b} {
		conn, err := pgx.Connect(t.Context(), c.URL())
		if err != nil {
			t.Fatal(err)
		}
		conn.Close(t.Context())
	}
}
