package manifest

import (
	"strings"
	"testing"
	"time"

	"svc/internal/domain/registry"
)

const bindingHarnessJSON = `{"id": "agent", "version": "0.4.0", "kind": "process", "command": ["agent"], "model": {"ref": "brain"}}`

// A harness that calls a model binding seals its closure (the binding's
// name@version, or unresolved): the same closure verifies, a replaced or
// removed binding drifts and says so; a label harness seals as every
// earlier manifest did, whatever closure the caller passes.
func TestHarnessModelClosure(t *testing.T) {
	now := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	in := fixture(t)
	in.Harness = parse(t, registry.Harness, bindingHarnessJSON)
	in.HarnessModel = "brain@1a2b3c4d5e6f7a8b"
	m, err := Seal(in, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := registry.Digest([]byte(`{"binding":"brain@1a2b3c4d5e6f7a8b","ref":"brain"}`)); m.HarnessModel != want {
		t.Errorf("HarnessModel = %s, want %s", m.HarnessModel, want)
	}
	facet := func(cur Input) FacetResult {
		t.Helper()
		for _, f := range Verify(m, cur).Facets {
			if f.Facet == "harness:model" {
				return f
			}
		}
		t.Fatal("no harness:model facet")
		return FacetResult{}
	}
	if f := facet(in); f.Status != FacetMatch {
		t.Errorf("same closure: %+v, want match", f)
	}
	replaced := in
	replaced.HarnessModel = "brain@ffffffffffffffff"
	if f := facet(replaced); f.Status != FacetDrifted || !strings.Contains(f.Detail, `"brain" resolves to brain@ffffffffffffffff`) {
		t.Errorf("replaced binding: %+v, want drifted naming the binding", f)
	}
	gone := in
	gone.HarnessModel = ""
	if f := facet(gone); f.Status != FacetDrifted || !strings.Contains(f.Detail, "resolves to unresolved") {
		t.Errorf("removed binding: %+v, want drifted, unresolved", f)
	}

	// Sealed unresolved, verified unresolved: a match.
	in.HarnessModel = ""
	if m, err = Seal(in, now); err != nil {
		t.Fatal(err)
	}
	if want := registry.Digest([]byte(`{"binding":"unresolved","ref":"brain"}`)); m.HarnessModel != want {
		t.Errorf("unresolved: HarnessModel = %s, want %s", m.HarnessModel, want)
	}

	// A label harness: the closure the caller passes does not matter.
	label := fixture(t)
	label.HarnessModel = "brain@1"
	m, err = Seal(label, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := registry.Digest([]byte(`{"model":"claude-sonnet"}`)); m.HarnessModel != want {
		t.Errorf("label harness: HarnessModel = %s, want the pre-binding seal %s", m.HarnessModel, want)
	}
}
