//go:build linux

package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnpackConfinesHostileImages: an image's tar cannot write outside
// the root it is unpacked into, through "..", an absolute name, a
// symbolic link on the way, or a hard link to a file outside; device
// nodes are skipped.
func TestUnpackConfinesHostileImages(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unpacking shifts owners, which needs root")
	}
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	type ent struct {
		typ        byte
		name, link string
	}
	build := func(ents ...ent) *bytes.Buffer {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, e := range ents {
			h := &tar.Header{Typeflag: e.typ, Name: e.name, Linkname: e.link, Mode: 0o644}
			if e.typ == tar.TypeReg {
				h.Size = 1
			}
			if e.typ == tar.TypeChar {
				h.Devmajor, h.Devminor = 1, 3
			}
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			if e.typ == tar.TypeReg {
				tw.Write([]byte("x"))
			}
		}
		tw.Close()
		return &b
	}
	for name, tc := range map[string]struct {
		ents    []ent
		refused string
	}{
		"dotdot":        {ents: []ent{{tar.TypeReg, "../../../" + strings.TrimPrefix(outside, "/") + "/dotdot", ""}}},
		"absolute":      {ents: []ent{{tar.TypeReg, outside + "/absolute", ""}}},
		"through link":  {ents: []ent{{tar.TypeSymlink, "out", outside}, {tar.TypeReg, "out/through", ""}}, refused: "symbolic link"},
		"hard link out": {ents: []ent{{tar.TypeLink, "hard", secret}}, refused: "not a regular file of the image"},
		"device":        {ents: []ent{{tar.TypeChar, "null", ""}}},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			err := unpack(context.Background(), build(tc.ents...), root, DefaultUIDBase)
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("want a refusal naming %q, got %v", tc.refused, err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			ents, _ := os.ReadDir(outside)
			if len(ents) != 1 {
				t.Fatalf("the tar wrote outside its root: %v", ents)
			}
			if data, _ := os.ReadFile(secret); string(data) != "host" {
				t.Fatalf("the host's file changed: %q", data)
			}
			if _, err := os.Lstat(filepath.Join(root, "null")); err == nil {
				t.Fatal("a device node was created")
			}
		})
	}
}
