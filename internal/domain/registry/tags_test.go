package registry

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
)

func TestNormalizeTags(t *testing.T) {
	many := func(n int) []string {
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, strings.Repeat("t", i+1))
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		in      []string
		want    []string
		wantErr string
	}{
		{name: "nil", in: nil, want: []string{}},
		{name: "trimmed", in: []string{"  prod ", "\tbeta\n"}, want: []string{"prod", "beta"}},
		{name: "empties dropped", in: []string{"", "  ", "a", "\t"}, want: []string{"a"}},
		{name: "first occurrence kept", in: []string{"b", "a", "b ", "c", "a"}, want: []string{"b", "a", "c"}},
		{name: "case sensitive", in: []string{"Prod", "prod"}, want: []string{"Prod", "prod"}},
		{name: "twenty", in: many(20), want: many(20)},
		{name: "twenty after de-dup", in: append(many(20), many(20)...), want: many(20)},
		{name: "twenty-one", in: many(21), wantErr: "at most 20"},
		{name: "sixty chars", in: []string{strings.Repeat("é", 60)}, want: []string{strings.Repeat("é", 60)}},
		{name: "sixty after trim", in: []string{"  " + strings.Repeat("x", 60) + "  "}, want: []string{strings.Repeat("x", 60)}},
		{name: "sixty-one chars", in: []string{strings.Repeat("x", 61)}, wantErr: "longer than 60"},
		{name: "control", in: []string{"a\x00b"}, wantErr: "control characters"},
		{name: "invalid UTF-8", in: []string{"a\xffb"}, wantErr: "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormalizeTags(tc.in)
			if tc.wantErr != "" {
				if !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("NormalizeTags = %v, %v; want ErrInvalid containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Error("got nil, want a non-nil slice (encodes as [])")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
