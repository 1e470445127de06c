package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"svc/internal/testing/pgcluster"
)

func TestExitStatusIsTheCommands(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://given@127.0.0.1:1/db")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--", "true"}, 0},
		{[]string{"sh", "-c", "exit 3"}, 3},
		{[]string{"sh", "-c", "kill -TERM $$"}, 128 + 15},
		{[]string{"/no/such/command"}, 127},
		{[]string{"--"}, 2},
	} {
		if got := run(tc.args); got != tc.want {
			t.Errorf("run(%q) = %d, want %d", tc.args, got, tc.want)
		}
	}
}

func TestForwardsSignals(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://given@127.0.0.1:1/db")
	// The command sends SIGINT to us (its parent); run must pass it on, and
	// the command's trap turns it into exit status 7.
	// The background sleep is killed on the way out: it holds the test's
	// output open, and go test would wait for it.
	script := `trap 'kill $! 2>/dev/null; exit 7' INT; kill -INT $PPID; sleep 30 >/dev/null 2>&1 & wait`
	if got := run([]string{"sh", "-c", script}); got != 7 {
		t.Errorf("run = %d, want 7 (the command's SIGINT trap)", got)
	}
}

func TestGivenDatabaseURLIsKept(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://given@127.0.0.1:1/db")
	out := filepath.Join(t.TempDir(), "url")
	if got := run([]string{"sh", "-c", `printf %s "$DATABASE_URL" > ` + out}); got != 0 {
		t.Fatalf("run = %d", got)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "postgres://given@127.0.0.1:1/db" {
		t.Errorf("the command saw DATABASE_URL=%q, want the given one", b)
	}
}

func TestStartsAndStopsACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("PostgreSQL cluster: skipped in -short mode")
	}
	bin, err := pgcluster.FindBinaries()
	if errors.Is(err, pgcluster.ErrNoBinaries) {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Setenv("DATABASE_URL", "")
	out := filepath.Join(t.TempDir(), "url")
	// The command proves the database answers while it runs.
	script := `printf %s "$DATABASE_URL" > ` + out + ` && "` + filepath.Join(bin, "psql") + `" -Atc 'SELECT 1' "$DATABASE_URL"`
	if got := run([]string{"--", "sh", "-c", script}); got != 0 {
		t.Fatalf("run = %d, want 0", got)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	url := string(b)
	if !strings.HasPrefix(url, "postgres://") {
		t.Fatalf("the command saw DATABASE_URL=%q, want a postgres:// URL", url)
	}
	// After run returns, the cluster is gone.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx, url); err == nil {
		conn.Close(ctx)
		t.Errorf("Connect(%s) after run succeeded, want the cluster stopped", url)
	}
}
