package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPaths(t *testing.T) {
	for _, tc := range []struct {
		path string
		segs []segment
	}{
		{"a", []segment{{key: "a"}}},
		{"services.web-1.image", []segment{{key: "services"}, {key: "web-1"}, {key: "image"}}},
		{"command[0]", []segment{{key: "command"}, {index: 0, isIndex: true}}},
		{`env["A.B"]`, []segment{{key: "env"}, {key: "A.B"}}},
		{`meta["a]b"][2].c`, []segment{{key: "meta"}, {key: "a]b"}, {index: 2, isIndex: true}, {key: "c"}}},
		{`[3]`, []segment{{index: 3, isIndex: true}}},
		{`["é"]`, []segment{{key: "é"}}},
	} {
		got, err := parsePath(tc.path)
		if err != nil {
			t.Errorf("parsePath(%q): %v", tc.path, err)
			continue
		}
		if diff := cmp.Diff(tc.segs, got, cmp.AllowUnexported(segment{})); diff != "" {
			t.Errorf("parsePath(%q) (-want +got):\n%s", tc.path, diff)
		}
		if back := formatPath(got); back != tc.path {
			t.Errorf("formatPath(parsePath(%q)) = %q", tc.path, back)
		}
	}
	for _, bad := range []string{"", ".a", "a.", "a..b", "a[", "a[x]", "a[-1]", "a[01]", "a[0]b", `a["x"`, `a["x"y]`, "a b", "a.[0]"} {
		if segs, err := parsePath(bad); err == nil {
			t.Errorf("parsePath(%q) = %v, want an error", bad, segs)
		}
	}
	// A quoted plain name parses, and prints bare.
	segs, err := parsePath(`["services"].web`)
	if err != nil || formatPath(segs) != "services.web" {
		t.Errorf(`parsePath(["services"].web) = %v, %v`, formatPath(segs), err)
	}
}
