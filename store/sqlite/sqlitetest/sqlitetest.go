// Package sqlitetest opens a migrated SQLite store in a test's temporary
// directory, closed when the test ends. Only test code imports it.
package sqlitetest

import (
	"path/filepath"
	"testing"

	"svc/store/sqlite"
)

// New returns a new, migrated store for tb.
func New(tb testing.TB) *sqlite.Store {
	tb.Helper()
	st, err := sqlite.Open(tb.Context(), filepath.Join(tb.TempDir(), "svc.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(tb.Context()); err != nil {
		tb.Fatal(err)
	}
	return st
}
