package redact_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/redact"
)

func TestString(t *testing.T) {
	const sec = "s3cr3t-t0ken/+?&="
	b64 := base64.StdEncoding.EncodeToString([]byte(sec))
	tests := []struct {
		name   string
		values []string
		in     string
		want   string
	}{
		{"no secrets", nil, "hello " + sec, "hello " + sec},
		{"plain", []string{sec}, "key=" + sec + "\n", "key=***\n"},
		{"twice", []string{sec}, sec + " and " + sec, "*** and ***"},
		{"adjacent occurrences are one mask", []string{sec}, sec + sec, "***"},
		{"base64 std", []string{sec}, "b64:" + b64, "b64:***"},
		{"base64 std no padding", []string{sec}, "b64:" + base64.RawStdEncoding.EncodeToString([]byte(sec)) + ".", "b64:***."},
		{"base64 url", []string{sec}, base64.URLEncoding.EncodeToString([]byte(sec)), "***"},
		{"base64 url no padding", []string{sec}, "[" + base64.RawURLEncoding.EncodeToString([]byte(sec)) + "]", "[***]"},
		{"query escape", []string{sec}, "?q=" + url.QueryEscape(sec), "?q=***"},
		{"path escape", []string{sec}, "/x/" + url.PathEscape(sec) + "/y", "/x/***/y"},
		{"hex", []string{sec}, hex.EncodeToString([]byte(sec)) + " " + strings.ToUpper(hex.EncodeToString([]byte(sec))), "*** ***"},
		{"json escaped", []string{`pa"ss\word<1>`}, `{"p":"pa\"ss\\word\u003c1\u003e","q":"pa\"ss\\word<1>"}`, `{"p":"***","q":"***"}`},
		{"json ascii-only", []string{"clé-secrète"}, `{"p": "cl\u00e9-secr\u00e8te"}`, `{"p": "***"}`},
		{"trimmed value", []string{"tok-1234\n"}, "token is tok-1234.", "token is ***."},
		{"each line of a multi-line value", []string{"-----BEGIN KEY-----\nMIIBOgIBAAJBAK\n-----END KEY-----\n"}, "line: MIIBOgIBAAJBAK", "line: ***"},
		{"overlapping secrets mask the union", []string{"abcdef", "cdefgh12"}, "xabcdefgh12y", "x***y"},
		{"too short is not masked", []string{"abc"}, "abc abcd", "abc abcd"},
		{"empty value is ignored", []string{""}, "text", "text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := redact.New(tt.values)
			got := m.String(tt.in)
			if got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if b := string(m.Bytes([]byte(tt.in))); b != got {
				t.Errorf("Bytes = %q, String = %q", b, got)
			}
		})
	}
}

// TestBase64Embedded: a secret inside a larger base64 blob (an encoded
// JSON document, a basic-auth header) is masked at each of the three
// alignments, in both alphabets.
func TestBase64Embedded(t *testing.T) {
	const sec = "s3cr3t-t0ken-42"
	m := redact.New([]string{sec})
	for k := range 6 {
		doc := []byte(strings.Repeat("{", k) + sec + `"}`)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			blob := enc.EncodeToString(doc)
			got := m.String(blob)
			if !strings.Contains(got, redact.Mask) {
				t.Errorf("offset %d: %q masked to %q, want the secret's characters masked", k, blob, got)
			}
			// What is left must not decode to anything that holds the
			// secret's middle.
			if strings.Contains(got, blob[len(blob)/2-2:len(blob)/2+2]) {
				t.Errorf("offset %d: %q keeps the characters of the secret's middle: %q", k, blob, got)
			}
		}
	}
}

func TestShort(t *testing.T) {
	m := redact.New([]string{"a", "bcd", "long-enough"})
	if m.Short() != 2 {
		t.Errorf("Short() = %d, want 2", m.Short())
	}
	if !redact.IsShort("abc") || redact.IsShort("abcd") {
		t.Error("IsShort disagrees with MinLen")
	}
	var nilM *redact.Masker
	if nilM.String("x") != "x" || !nilM.Empty() || nilM.Short() != 0 {
		t.Error("a nil Masker must mask nothing")
	}
}

// TestStreamSplitSecret: a secret cut across chunks at every offset is
// still masked, and nothing of it is emitted before the stream knows.
func TestStreamSplitSecret(t *testing.T) {
	const sec = "hunter2-is-the-password"
	m := redact.New([]string{sec})
	in := "before " + sec + " middle " + base64.StdEncoding.EncodeToString([]byte(sec)) + " after"
	want := "before *** middle *** after"
	for cut := range len(in) + 1 {
		var out bytes.Buffer
		var leaked bool
		s := m.Stream(func(p []byte) {
			out.Write(p)
			if strings.Contains(out.String(), sec[:8]) {
				leaked = true
			}
		})
		s.Write([]byte(in[:cut]))
		s.Write([]byte(in[cut:]))
		s.Flush()
		if out.String() != want {
			t.Fatalf("cut at %d: %q, want %q", cut, out.String(), want)
		}
		if leaked {
			t.Fatalf("cut at %d: a prefix of the secret was emitted", cut)
		}
	}
}

func TestStreamHoldsBackAndFlushes(t *testing.T) {
	m := redact.New([]string{"abcdefgh"})
	held := m.Longest() - 1 // 15: the hex of the value is the longest pattern
	var got []string
	s := m.Stream(func(p []byte) { got = append(got, string(p)) })
	s.Write([]byte("0123456789"))
	if len(got) != 0 {
		t.Fatalf("after 10 bytes: emitted %q, want nothing yet", got)
	}
	in := strings.Repeat("0123456789", 4)
	s.Write([]byte(in[10:]))
	if want := []string{in[:len(in)-held]}; !cmp.Equal(got, want) {
		t.Fatalf("after %d bytes: %q, want %q (the last %d bytes held)", len(in), got, want, held)
	}
	s.Flush()
	if diff := cmp.Diff([]string{in[:len(in)-held], in[len(in)-held:]}, got); diff != "" {
		t.Errorf("emitted (-want +got):\n%s", diff)
	}
	passthrough := redact.New(nil).Stream(func(p []byte) { got = append(got, string(p)) })
	passthrough.Write([]byte("x"))
	if got[len(got)-1] != "x" {
		t.Error("an empty Masker's stream holds bytes back")
	}
}

func TestClipped(t *testing.T) {
	const sec = "0123456789abcdef"
	m := redact.New([]string{sec})
	tests := []struct {
		name             string
		in               string
		cutStart, cutEnd bool
		want             string
	}{
		{"tail cut through a secret", "89abcdef\nrest", true, false, "***\nrest"},
		{"head cut through a secret", "start 0123456", false, true, "start ***"},
		{"fragment under MinLen kept", "def\nrest", true, false, "def\nrest"},
		{"uncut window keeps a look-alike", "89abcdef\nrest", false, false, "89abcdef\nrest"},
		{"whole secrets still masked", "x " + sec + " y", true, true, "x *** y"},
	}
	for _, tt := range tests {
		if got := m.Clipped(tt.in, tt.cutStart, tt.cutEnd); got != tt.want {
			t.Errorf("%s: Clipped(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

// forms are the encodings of v the Masker promises to mask.
func forms(v string) []string {
	b := []byte(v)
	j, _ := json.Marshal(v)
	return []string{
		v,
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
		url.QueryEscape(v), url.PathEscape(v), string(j[1 : len(j)-1]),
		hex.EncodeToString(b),
	}
}

// FuzzMask: whatever the text, the masked output holds no secret nor any
// of its encodings, and a stream fed the text in any chunking emits
// exactly what one-shot masking gives.
func FuzzMask(f *testing.F) {
	f.Add("the token is s3cr3t!", "s3cr3t!", "other-secret", uint64(7))
	f.Add("czNjcjN0IQ== and s3cr s3cr3t!", "s3cr3t!", "3t!s3", uint64(1))
	f.Add("aaaaaaaaaaaaaaaaaaaa", "aaaa", "aaaaa", uint64(3))
	f.Add("pa%22ss pa\\\"ss", "pa\"ss", "abcd", uint64(12345))
	f.Fuzz(func(t *testing.T, text, s1, s2 string, chunking uint64) {
		m := redact.New([]string{s1, s2})
		// Plant the secrets and their encodings in the text too.
		var in strings.Builder
		in.WriteString(text)
		for _, s := range []string{s1, s2} {
			if redact.IsShort(s) {
				continue
			}
			for _, f := range forms(s) {
				in.WriteString(" " + f)
			}
		}
		input := in.String()
		got := m.String(input)
		for _, s := range []string{s1, s2} {
			if redact.IsShort(s) {
				continue
			}
			for _, f := range forms(s) {
				// A form holding '*' may be made up by the masks
				// themselves ("x***" from "x" + a masked secret).
				if !strings.Contains(f, "*") && strings.Contains(got, f) {
					t.Fatalf("output %q still holds %q (a form of secret %q)", got, f, s)
				}
			}
		}

		var streamed bytes.Buffer
		st := m.Stream(func(p []byte) { streamed.Write(p) })
		rest, seed := input, chunking
		for len(rest) > 0 {
			n := int(seed%uint64(m.Longest()+3)) + 1
			seed = seed/3 + seed%7
			n = min(n, len(rest))
			st.Write([]byte(rest[:n]))
			rest = rest[n:]
		}
		st.Flush()
		if streamed.String() != got {
			t.Fatalf("streamed %q, one-shot %q", streamed.String(), got)
		}
	})
}

func BenchmarkStream(b *testing.B) {
	m := redact.New([]string{"sk-live-0123456789abcdef", "ghp_0123456789abcdefABCDEF0123456789", "hunter2hunter2"})
	chunk := bytes.Repeat([]byte("some ordinary log output, 0123456789 abcdef, nothing secret here\n"), 512)
	b.SetBytes(int64(len(chunk)))
	s := m.Stream(func([]byte) {})
	for b.Loop() {
		s.Write(chunk)
	}
	s.Flush()
}
