package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/client"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// exitProblem is the client commands' exit code for a usage or service error.
const exitProblem = 2

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// TestRunDispatchesClientCommands: main's dispatch reaches the client
// commands with their own flags and exit codes, and help lists them.
func TestRunDispatchesClientCommands(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"help"}, &out, &errOut); code != 0 {
		t.Fatalf("svc help exit %d", code)
	}
	for _, want := range []string{"gate ", "verify ", "scorecard ", client.EnvToken, client.EnvURL} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("svc help lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	errOut.Reset()
	if code := run(context.Background(), []string{"gate", "--baseline", "sc_1"}, &out, &errOut); code != exitProblem {
		t.Errorf("svc gate without --candidate exit %d, want %d", code, exitProblem)
	}
	if !strings.Contains(errOut.String(), "svc gate: usage: --baseline and --candidate are both required") {
		t.Errorf("stderr %q lacks the usage line", errOut.String())
	}
	errOut.Reset()
	if code := run(context.Background(), []string{"verify", "-h"}, &out, &errOut); code != 0 || !strings.Contains(errOut.String(), "usage: svc verify") {
		t.Errorf("svc verify -h exit %d stderr %q, want 0 and the usage", code, errOut.String())
	}
}
