package scorecards

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

// TestSelectCases: a submit's `cases` picks ids, then tags (any match),
// then the first limit, in the dataset's order; the subset it records is
// nil when every case is picked. An unknown id or an empty result is a 400
// that says what to change.
func TestSelectCases(t *testing.T) {
	all := []registry.EvalCase{
		{ID: "a", Tags: []string{"smoke", "fast"}},
		{ID: "b", Tags: []string{"slow"}},
		{ID: "c", Tags: []string{"smoke"}},
		{ID: "d"},
	}
	for _, tc := range []struct {
		name       string
		all        []registry.EvalCase
		sel        *Selection
		wantIDs    []string
		wantSubset *eval.Subset
		wantErr    string // a substring of the refusal; "" for none
	}{
		{name: "no selection picks every case", sel: nil, wantIDs: []string{"a", "b", "c", "d"}},
		{name: "an empty selection picks every case", sel: &Selection{}, wantIDs: []string{"a", "b", "c", "d"}},
		{
			name: "ids keep the dataset's order, not the request's", sel: &Selection{IDs: []string{"c", "a"}},
			wantIDs: []string{"a", "c"}, wantSubset: &eval.Subset{Total: 4, Selected: 2, IDs: []string{"c", "a"}},
		},
		{
			name: "an id named twice picks its case once", sel: &Selection{IDs: []string{"b", "b"}},
			wantIDs: []string{"b"}, wantSubset: &eval.Subset{Total: 4, Selected: 1, IDs: []string{"b", "b"}},
		},
		{
			name: "tags pick a case with any of them", sel: &Selection{Tags: []string{"fast", "slow"}},
			wantIDs: []string{"a", "b"}, wantSubset: &eval.Subset{Total: 4, Selected: 2, Tags: []string{"fast", "slow"}},
		},
		{
			name: "tags narrow the ids", sel: &Selection{IDs: []string{"a", "b", "c"}, Tags: []string{"smoke"}},
			wantIDs:    []string{"a", "c"},
			wantSubset: &eval.Subset{Total: 4, Selected: 2, IDs: []string{"a", "b", "c"}, Tags: []string{"smoke"}},
		},
		{
			name: "limit keeps the first cases", sel: &Selection{Limit: 3},
			wantIDs: []string{"a", "b", "c"}, wantSubset: &eval.Subset{Total: 4, Selected: 3, Limit: 3},
		},
		{
			name: "limit applies after tags", sel: &Selection{Tags: []string{"smoke"}, Limit: 1},
			wantIDs: []string{"a"}, wantSubset: &eval.Subset{Total: 4, Selected: 1, Tags: []string{"smoke"}, Limit: 1},
		},
		{
			name: "a limit above the count picks every case and records no subset", sel: &Selection{Limit: 10},
			wantIDs: []string{"a", "b", "c", "d"},
		},
		{
			name: "ids naming every case record no subset", sel: &Selection{IDs: []string{"d", "c", "b", "a"}},
			wantIDs: []string{"a", "b", "c", "d"},
		},
		{
			name: "an unknown id is refused by name", sel: &Selection{IDs: []string{"a", "zz"}},
			wantErr: `cases.ids: case "zz" is not in the dataset; GET the dataset version`,
		},
		{
			name: "an unknown id is refused even when tags would drop it", sel: &Selection{IDs: []string{"zz"}, Tags: []string{"smoke"}},
			wantErr: `case "zz" is not in the dataset`,
		},
		{
			name: "tags matching no case leave an empty selection", sel: &Selection{Tags: []string{"nightly"}},
			wantErr: "the case selection is empty: no case matches ids [] and tags [nightly]; widen it or omit cases",
		},
		{
			name: "ids and tags with nothing in common leave an empty selection", sel: &Selection{IDs: []string{"b"}, Tags: []string{"smoke"}},
			wantErr: "the case selection is empty: no case matches ids [b] and tags [smoke]",
		},
		{
			name: "a dataset without cases", all: []registry.EvalCase{}, sel: nil,
			wantErr: "the dataset has no cases; register a version with cases",
		},
		{
			name: "a dataset without cases and a selection", all: []registry.EvalCase{}, sel: &Selection{Limit: 2},
			wantErr: "the case selection is empty",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cases := all
			if tc.all != nil {
				cases = tc.all
			}
			got, sub, err := selectCases(cases, tc.sel)
			if tc.wantErr != "" {
				if !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("selectCases(%+v) = %v, want ErrInvalid containing %q", tc.sel, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("selectCases(%+v): %v", tc.sel, err)
			}
			ids := make([]string, len(got))
			for i, c := range got {
				ids[i] = c.ID
			}
			if diff := cmp.Diff(tc.wantIDs, ids); diff != "" {
				t.Errorf("selectCases(%+v) case ids (-want +got):\n%s", tc.sel, diff)
			}
			if diff := cmp.Diff(tc.wantSubset, sub); diff != "" {
				t.Errorf("selectCases(%+v) subset (-want +got):\n%s", tc.sel, diff)
			}
		})
	}
}
