// Package testbin finds the real servers that some tests run (the
// kube-apiserver and etcd, Jaeger), which a build.sh beside each test
// package builds from the Go module proxy into a cache directory, and
// starts them for a test.
package testbin

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir is where a build.sh puts its binaries: the directory the variable
// env names, else ~/.cache/<name>/<version>.
func Dir(env, name, version string) string {
	if d := os.Getenv(env); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", name, version)
}

// Require skips t when the file path does not exist, saying msg (which
// tells how to build it), unless CI=true, where that is a failure.
func Require(t testing.TB, path, msg string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
