package manifest

import (
	"testing"
	"time"

	"svc/internal/domain/registry"
)

// TestSealAnswerDefault: from identity version 3 a case without graders
// whose expected answer the default answer grader compares seals that
// grader, distinct from a declared list; a case without expected seals []
// as before; a manifest of version 2 still verifies as it was sealed.
func TestSealAnswerDefault(t *testing.T) {
	ds := parse(t, registry.Dataset, `{"id": "qa", "version": "1.0.0", "cases": [
		{"id": "recall", "task": "What is 17 * 23?", "expected": "391"},
		{"id": "shape", "task": "Give JSON", "expected": {"ok": true}},
		{"id": "declared", "task": "What is 17 * 23?", "expected": "391", "graders": [{"id": "exact"}]},
		{"id": "free", "task": "Write a haiku"}
	]}`)
	in := fixture(t)
	in.Dataset, in.Cases = ds, ds.Dataset().Cases
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	m, err := Seal(in, now)
	if err != nil {
		t.Fatal(err)
	}
	if m.IdentityVersion != 3 {
		t.Fatalf("identityVersion = %d, want 3", m.IdentityVersion)
	}
	digest := func(doc string) string { return registry.Digest([]byte(doc)) }
	for id, doc := range map[string]string{
		"recall":   `{"answerDefault":{"id":"exact"}}`,
		"shape":    `{"answerDefault":{"id":"json_match"}}`,
		"declared": `[{"id":"exact"}]`,
		"free":     `[]`,
	} {
		if got := m.GradingCases[id]; got != digest(doc) {
			t.Errorf("gradingCases[%s] = %s, want the digest of %s", id, got, doc)
		}
	}
	if v := Verify(m, in); !v.Verified {
		t.Errorf("a version 3 manifest does not verify against its own input: %+v", v.Facets)
	}

	// The same batch sealed by generation 2: every case's own graders,
	// [] for none. It verifies unchanged.
	old := m
	old.IdentityVersion = 2
	old.GradingCases = map[string]string{}
	for _, c := range in.Cases {
		doc, err := gradersDoc(c.Graders)
		if err != nil {
			t.Fatal(err)
		}
		old.GradingCases[c.ID] = registry.Digest(doc)
	}
	plan, err := planDoc(in, 2)
	if err != nil {
		t.Fatal(err)
	}
	old.GradingPlan = registry.Digest(plan)
	if old.GradingPlan == m.GradingPlan || old.GradingCases["recall"] == m.GradingCases["recall"] {
		t.Error("generation 2 and 3 seal the default-graded case alike; the grading changed")
	}
	if v := Verify(old, in); !v.Verified {
		t.Errorf("a version 2 manifest no longer verifies: %+v", v.Facets)
	}
}
