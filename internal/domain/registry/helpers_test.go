package registry

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"svc/internal/platform/derrors"
)

// kindOfFile maps a file under testdata/specs to the kind it holds.
func kindOfFile(name string) Kind {
	switch {
	case strings.HasPrefix(name, "dataset"):
		return Dataset
	case strings.HasPrefix(name, "harness-template"):
		return HarnessTemplate
	case strings.HasPrefix(name, "harness"):
		return Harness
	case strings.HasPrefix(name, "judge"):
		return Judge
	case strings.HasPrefix(name, "rubric"):
		return Rubric
	case strings.HasPrefix(name, "runtime"):
		return Runtime
	}
	panic("no kind for " + name)
}

// specFiles lists the example specs, by base name without ".json".
func specFiles(t testing.TB) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join("testdata", "specs"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".json"))
	}
	return names
}

// readSpec returns an example spec's bytes.
func readSpec(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "specs", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// edit sets the value at path to the JSON in value, or deletes it when
// value is empty.
type edit struct {
	path  string
	value string
}

// edited returns an example spec with edits applied.
func edited(t testing.TB, name string, edits ...edit) []byte {
	t.Helper()
	tree, err := parseTree(readSpec(t, name))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		segs, err := parsePath(e.path)
		if err != nil {
			t.Fatalf("edit path %q: %v", e.path, err)
		}
		var v any
		if e.value != "" {
			dec := json.NewDecoder(strings.NewReader(e.value))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("edit value %q: %v", e.value, err)
			}
		}
		if tree, err = setPath(tree, segs, v); err != nil {
			t.Fatalf("edit %q: %v", e.path, err)
		}
	}
	out, err := json.Marshal(tree)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// mustParse parses an example spec that must be valid.
func mustParse(t testing.TB, name string, forNew bool) Spec {
	t.Helper()
	s, err := Parse(kindOfFile(name), readSpec(t, name), forNew)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return s
}

// wantProblem fails unless err is a *ValidationError (and ErrInvalid) with
// a problem at path whose message contains msg.
func wantProblem(t testing.TB, err error, path, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want a problem at %q containing %q", path, msg)
	}
	if !errors.Is(err, derrors.ErrInvalid) {
		t.Fatalf("error %v does not wrap ErrInvalid", err)
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v is not a *ValidationError", err)
	}
	for _, p := range ve.Problems {
		if p.Path == path && strings.Contains(p.Message, msg) {
			return
		}
	}
	t.Fatalf("no problem at %q containing %q in:\n%v", path, msg, err)
}
