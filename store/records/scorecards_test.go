package records

import (
	"context"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/store"
)

// versioned is a ScorecardReader over one stored record that counts the
// full reads.
type versioned struct {
	row   store.Scorecard
	reads int
}

func (v *versioned) ScorecardVersion(context.Context, string, string) (int64, error) {
	return v.row.Version, nil
}

func (v *versioned) GetScorecard(context.Context, string, string) (store.Scorecard, error) {
	v.reads++
	return v.row, nil
}

func (v *versioned) GetScorecardSelection(context.Context, string, string) ([]byte, error) {
	return nil, nil
}

// TestPlanCacheDecodesOncePerVersion: the case activities of a batch read
// its record once per version, and see a write as soon as it is stored.
func TestPlanCacheDecodesOncePerVersion(t *testing.T) {
	at := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	sc := eval.Scorecard{ID: "sc_1", Tenant: "acme", Status: eval.ScorecardRunning, CreatedAt: at, UpdatedAt: at}
	row, err := ScorecardRow(sc, 3)
	if err != nil {
		t.Fatal(err)
	}
	st := &versioned{row: row}
	var c PlanCache
	for _, step := range []struct {
		name      string
		bump      eval.Status
		wantReads int
		want      eval.Status
	}{
		{name: "first read decodes", wantReads: 1, want: eval.ScorecardRunning},
		{name: "same version is cached", wantReads: 1, want: eval.ScorecardRunning},
		{name: "a new version is read again", bump: eval.ScorecardCancelled, wantReads: 2, want: eval.ScorecardCancelled},
		{name: "and cached again", wantReads: 2, want: eval.ScorecardCancelled},
	} {
		if step.bump != "" {
			sc.Status = step.bump
			next, err := ScorecardRow(sc, st.row.Version+1)
			if err != nil {
				t.Fatal(err)
			}
			st.row = next
		}
		got, err := c.Plan(t.Context(), st, "acme", "sc_1")
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got.Status != step.want || st.reads != step.wantReads || !got.CreatedAt.Equal(at) {
			t.Errorf("%s: status %s after %d reads (created %s), want %s after %d", step.name, got.Status, st.reads, got.CreatedAt, step.want, step.wantReads)
		}
	}
}
