package sqlstore

import (
	"bytes"
	"encoding/json"
	"testing"
)

// referenceShape is the shape check as it was written first, a byte at a time:
// the reference scanEvent's word-at-a-time strings must agree with.
func referenceShape(ev []byte) bool {
	depth := 0
	for i := 0; i < len(ev); i++ {
		switch ev[i] {
		case '"':
			for i++; i < len(ev) && ev[i] != '"'; i++ {
				if ev[i] == '\\' {
					i++
				}
			}
			if i >= len(ev) {
				return false
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth < 0 {
				return false
			}
		case ',', ':':
			if depth == 0 {
				return false
			}
		}
	}
	return depth == 0
}

// FuzzScanEvent: on any input scanEvent's shape is the byte-at-a-time
// scanner's, and on JSON its newline and NUL answers are those of a plain
// search for a newline and of checkDoc.
func FuzzScanEvent(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `{"a":"\"}"}`, `{"a":"\\"}`, `{"a":"\\\"","b":[1,2]}`, `1,2`, `{"a":1},{"b":2}`,
		`"open`, `{"a":"x\u0000y"}`, `{"a":"x\\u0000y"}`, `{"a":"x\\\u0000"}`, "{\n\"a\": 1}", `{"a":"\n"}`, `["\u00001"]`, `{"k":"\\\\"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, ev []byte) {
		shape, newline, nul := scanEvent(ev)
		if want := referenceShape(ev); shape != want {
			t.Fatalf("scanEvent(%q) shape = %v, want %v", ev, shape, want)
		}
		if !json.Valid(ev) {
			return
		}
		if want := bytes.IndexByte(ev, '\n') >= 0; newline != want {
			t.Errorf("scanEvent(%q) newline = %v, want %v", ev, newline, want)
		}
		if want := checkDoc(ev) != nil; nul != want {
			t.Errorf("scanEvent(%q) nul = %v, want %v", ev, nul, want)
		}
	})
}

// TestCanonicalEventFindsNULEscapes: a Canonical event is refused only for
// a NUL escape, told from an escaped backslash followed by "u0000".
func TestCanonicalEventFindsNULEscapes(t *testing.T) {
	for ev, bad := range map[string]bool{
		`{"a":"\u0000"}`:                 true,
		`{"a":"x","b":"y\u0000"}`:        true,
		`{"a":"\\\u0000"}`:               true,
		`{"a":"\\u0000"}`:                false,
		`{"a":"\\\\u0000","b":"\u0000"}`: true,
		`{"a":"\\\\u0000"}`:              false,
		`{"kind":"span"}`:                false,
		``:                               true,
	} {
		if err := canonicalEvent([]byte(ev)); (err != nil) != bad {
			t.Errorf("canonicalEvent(%s) = %v, want refused %v", ev, err, bad)
		}
	}
}
