package registry

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"svc/internal/platform/derrors"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func TestCanonicalJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"sorted members", `{"b":1,"a":{"d":2,"c":3}}`, `{"a":{"c":3,"d":2},"b":1}`},
		{"byte order of UTF-8", `{"é":1,"z":2,"Z":3,"_":4}`, `{"Z":3,"_":4,"z":2,"é":1}`},
		{"whitespace dropped", " {\n\t\"a\" : [ 1 , 2 ] ,\r\n\"b\": null } ", `{"a":[1,2],"b":null}`},
		{"array order kept", `[3,1,2]`, `[3,1,2]`},
		{"no HTML escaping", `"<a href='x'>&</a>"`, `"<a href='x'>&</a>"`},
		{"unicode raw", `"\u65e5\u672c \u2028 \u00e9"`, "\"日本 \u2028 é\""},
		{"minimal escapes", `"q\" b\\ \/ \b\f\n\r\t \u0001 \u001f \u007f"`, "\"q\\\" b\\\\ / \\b\\f\\n\\r\\t \\u0001 \\u001f \u007f\""},
		{"integer", `42`, `42`},
		{"negative zero", `-0`, `0`},
		{"zero fraction", `-0.000`, `0`},
		{"trailing zeros", `1.500`, `1.5`},
		{"integral fraction", `2.0`, `2`},
		{"exponent up", `1.5e3`, `1500`},
		{"exponent capital", `15E-1`, `1.5`},
		{"exponent small", `1e-7`, `0.0000001`},
		{"exponent plus", `12e+2`, `1200`},
		{"big integer exact", `123456789012345678901234567890`, `123456789012345678901234567890`},
		{"many digits exact", `0.1000000000000000055511151231257827`, `0.1000000000000000055511151231257827`},
		{"zero with exponent", `0e99999999999`, `0`},
		{"booleans", `[true,false,null]`, `[true,false,null]`},
		{"empty containers", `{"a":{},"b":[]}`, `{"a":{},"b":[]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CanonicalJSON([]byte(tc.in))
			if err != nil {
				t.Fatalf("CanonicalJSON(%s): %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Errorf("CanonicalJSON(%s)\n got %s\nwant %s", tc.in, got, tc.want)
			}
			again, err := CanonicalJSON(got)
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("not idempotent: %s -> %s (%v)", got, again, err)
			}
		})
	}
}

func TestCanonicalJSONRefuses(t *testing.T) {
	for _, in := range []string{
		`{"a":1,"a":2}`,  // duplicate members would let two readers disagree
		`{"a":1`,         // malformed
		`1 2`,            // two values
		`1e500`,          // past the normal form's length bound
		"\"\xff\"",       // invalid UTF-8
		`{"a":"\u0000"}`, // NUL cannot be stored in jsonb
		``,
	} {
		if got, err := CanonicalJSON([]byte(in)); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("CanonicalJSON(%q) = %s, %v; want ErrInvalid", in, got, err)
		}
	}
}

func TestCanonicalJSONOfValues(t *testing.T) {
	// Go values go through encoding/json, then the same normal form.
	got, err := CanonicalJSON(map[string]any{"b": 1.0, "a": []string{"<x>"}, "c": 1e21})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":["<x>"],"b":1,"c":1000000000000000000000}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, err := CanonicalJSON(func() {}); err == nil {
		t.Error("CanonicalJSON(func) succeeded")
	}
}

// TestDigestIgnoresLayout: the same content in another member order and
// layout, with numbers written differently, has the same digest.
func TestDigestIgnoresLayout(t *testing.T) {
	a := `{"id":"r","version":"1.0.0","text":"t","criteria":[{"id":"c","weight":2,"passThreshold":0.50}]}`
	b := "{\n  \"criteria\": [ { \"passThreshold\": 5e-1, \"weight\": 2.0, \"id\": \"c\" } ],\n  \"text\": \"t\",\n  \"version\": \"1.0.0\",\n  \"id\": \"r\"\n}\n"
	sa, err := Parse(Rubric, []byte(a), true)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := Parse(Rubric, []byte(b), true)
	if err != nil {
		t.Fatal(err)
	}
	if sa.Digest() != sb.Digest() {
		t.Errorf("digests differ:\n%s %s\n%s %s", sa.Digest(), sa.Canonical(), sb.Digest(), sb.Canonical())
	}
	// Absent optional members and their empty values are the same content.
	sc, err := Parse(Rubric, []byte(`{"id":"r","version":"1.0.0","text":"t","tags":[],"description":"","criteria":[{"id":"c","weight":2,"passThreshold":0.5,"description":""}]}`), true)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Digest() != sa.Digest() {
		t.Errorf("empty optional members change the digest: %s", sc.Canonical())
	}
	// Different content differs.
	sd, err := Parse(Rubric, []byte(strings.Replace(a, `"weight":2`, `"weight":3`, 1)), true)
	if err != nil {
		t.Fatal(err)
	}
	if sd.Digest() == sa.Digest() {
		t.Error("a changed weight kept the digest")
	}
}

// TestGoldenDigests pins the digest of every example spec. A change to
// canonicalisation changes digests of stored versions (re-registering
// identical content would then be a 409), so it must be deliberate: run
// `go test ./registry -run TestGoldenDigests -update` and say why in the
// commit.
func TestGoldenDigests(t *testing.T) {
	got := map[string]string{}
	for _, name := range specFiles(t) {
		got[name] = mustParse(t, name, false).Digest()
	}
	path := filepath.Join("testdata", "digests.golden")
	if *update {
		var b strings.Builder
		b.WriteString("# name digest: the digest of testdata/specs/<name>.json; see TestGoldenDigests\n")
		names := sortedKeys(got)
		for _, n := range names {
			fmt.Fprintf(&b, "%s %s\n", n, got[n])
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, digest, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("bad golden line %q", line)
		}
		want[name] = digest
	}
	var names []string
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(want) != len(got) {
		t.Errorf("golden has %d specs %v, testdata/specs has %d", len(want), names, len(got))
	}
	for _, n := range names {
		if got[n] != want[n] {
			t.Errorf("%s: digest %s, golden %s; canonical form now:\n%s", n, got[n], want[n], mustParse(t, n, false).Canonical())
		}
	}
}

func TestVerifyDigest(t *testing.T) {
	canon := []byte(`{"a":1}`)
	full := Digest(canon)
	legacy := strings.TrimPrefix(full, DigestPrefix)[:16]
	for _, tc := range []struct {
		stamp   string
		want    bool
		invalid bool
	}{
		{stamp: full, want: true},
		{stamp: DigestPrefix + strings.ToUpper(strings.TrimPrefix(full, DigestPrefix)), want: true},
		{stamp: legacy, want: true},
		{stamp: strings.ToUpper(legacy), want: true},
		{stamp: Digest([]byte(`{"a":2}`)), want: false},
		{stamp: strings.TrimPrefix(Digest([]byte(`{"a":2}`)), DigestPrefix)[:16], want: false},
		{stamp: "sha256:abc", invalid: true},
		{stamp: "sha256:" + strings.Repeat("g", 64), invalid: true},
		{stamp: "md5:" + strings.Repeat("a", 32), invalid: true},
		{stamp: strings.Repeat("a", 15), invalid: true},
		{stamp: strings.TrimPrefix(full, DigestPrefix), invalid: true}, // bare 64 hex: no algorithm
		{stamp: "", invalid: true},
	} {
		got, err := VerifyDigest(tc.stamp, canon)
		if tc.invalid {
			if !errors.Is(err, derrors.ErrInvalid) {
				t.Errorf("VerifyDigest(%q) = %v, %v; want ErrInvalid", tc.stamp, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("VerifyDigest(%q) = %v, %v; want %v", tc.stamp, got, err, tc.want)
		}
	}
}

func TestDigestFormat(t *testing.T) {
	// sha256 of the empty string, a published test vector.
	if got, want := Digest(nil), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"; got != want {
		t.Errorf("Digest(nil) = %s, want %s", got, want)
	}
}

// TestCanonicalPieces: the exported pieces write what CanonicalJSON
// writes for the same string, number and tree.
func TestCanonicalPieces(t *testing.T) {
	for _, s := range []string{"", "plain", "a\"b\\c", "\x00\x01\x1f\b\t\n\f\r", "é\u2028<>&", "end\\"} {
		whole, err := CanonicalJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendCanonicalString([]byte("x"), s); string(got) != "x"+string(whole) {
			t.Errorf("AppendCanonicalString(%q) = %s, want x%s", s, got, whole)
		}
	}
	for _, n := range []string{"1.50", "15e-1", "-0", "1E+3", "0.000120"} {
		whole, err := CanonicalJSON([]byte(n))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := CanonicalNumber(n); err != nil || got != string(whole) {
			t.Errorf("CanonicalNumber(%q) = %q, %v; want %s", n, got, err, whole)
		}
	}
	if _, err := CanonicalNumber("1e999"); err == nil {
		t.Error("CanonicalNumber(1e999) = nil error, want out of range")
	}
	raw := []byte(`{"b":[1.0,"x",null,true],"a":{"d":2e1,"c":{}}}`)
	whole, err := CanonicalJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		t.Fatal(err)
	}
	if got, err := AppendCanonicalTree([]byte("x"), tree); err != nil || string(got) != "x"+string(whole) {
		t.Errorf("AppendCanonicalTree = %s, %v; want x%s", got, err, whole)
	}
}
