// Package redact masks secret values in text a job produced (its stdout,
// stderr, streamed logs and trace file) before anything is stored, the way
// CI systems mask secrets in build logs: every occurrence of a secret, or of
// one of its common encodings, becomes "***".
//
// A Masker is built once per job from the secret values it was given. Its
// patterns are, for each value: the value itself (and, for a value with
// surrounding whitespace or several lines, the trimmed value and each line),
// its base64 in the standard and URL-safe alphabets with and without
// padding (plus the characters a secret fixes at each of the three
// alignments inside a larger base64 blob), its URL query and path escapes,
// its JSON string escapes (Go's with and without HTML escaping, and the
// ASCII-only \uXXXX form of Python's json.dumps) and its hex in both cases.
//
// Every byte covered by an occurrence of any pattern is masked, overlapping
// occurrences included, and each maximal covered run becomes one Mask. So
// the result does not depend on the order of the patterns, and a Stream fed
// the same bytes in any chunking emits exactly what String does at once.
//
// Values shorter than MinLen bytes are not masked (see MinLen). Masking is a
// safeguard against accidental disclosure, not a sandbox: a harness that
// transforms a secret in some other way (reverses it, sends it over the
// network) is beyond its reach.
//
// The package is pure: standard library only.
package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// Mask replaces every masked run of bytes.
const Mask = "***"

// MinLen is the shortest value (in bytes) that is masked. A shorter value
// would match all over ordinary output ("1", "ab", "yes"), destroying the
// log while revealing the value by where the masks fall; CI systems refuse
// to mask such values too. New skips them, and Short reports how many it
// skipped so the caller can warn. Patterns derived from a value (a line of
// a multi-line value, a base64 fragment) are held to the same bound, or to
// minFragment for base64 alignment fragments.
const MinLen = 4

// minFragment is the shortest base64 alignment fragment kept: shorter ones
// would mask unrelated base64 too often.
const minFragment = 8

// Masker masks a fixed set of secret values. It is immutable and safe for
// concurrent use; a nil or empty Masker masks nothing.
type Masker struct {
	patterns [][]byte // deduplicated, longest first
	maxLen   int
	short    int
}

// New returns a Masker for values. Values shorter than MinLen bytes are
// skipped (see Short); duplicates are harmless.
func New(values []string) *Masker {
	m := &Masker{}
	seen := map[string]bool{}
	add := func(p string) {
		if len(p) < MinLen || seen[p] {
			return
		}
		seen[p] = true
		m.patterns = append(m.patterns, []byte(p))
	}
	for _, v := range values {
		if len(v) < MinLen {
			m.short++
			continue
		}
		for _, base := range variants(v) {
			if len(base) < MinLen {
				continue // a short line's encodings are as common as it is
			}
			for _, p := range encodings(base) {
				add(p)
			}
		}
	}
	slices.SortFunc(m.patterns, func(a, b []byte) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return bytes.Compare(a, b)
	})
	if len(m.patterns) > 0 {
		m.maxLen = len(m.patterns[0])
	}
	return m
}

// IsShort reports whether value is too short to be masked (see MinLen).
func IsShort(value string) bool { return len(value) < MinLen }

// Short is how many of New's values were too short to be masked.
func (m *Masker) Short() int {
	if m == nil {
		return 0
	}
	return m.short
}

// Empty reports whether m masks nothing.
func (m *Masker) Empty() bool { return m == nil || len(m.patterns) == 0 }

// Longest is the length of the longest pattern: a stream holds back one
// byte less than this.
func (m *Masker) Longest() int {
	if m == nil {
		return 0
	}
	return m.maxLen
}

// variants are the forms of v that are masked in their own right: v, v
// without surrounding whitespace (a value stored with a trailing newline is
// usually printed without it), and each line of a multi-line value (a PEM
// key is often printed, or logged, line by line).
func variants(v string) []string {
	out := []string{v}
	if t := strings.TrimSpace(v); t != v {
		out = append(out, t)
	}
	if strings.ContainsAny(v, "\r\n") {
		for _, line := range strings.FieldsFunc(v, func(r rune) bool { return r == '\n' || r == '\r' }) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// encodings are the patterns of one value: itself and the encodings a
// program commonly puts a secret through before printing it.
func encodings(v string) []string {
	raw := []byte(v)
	out := []string{
		v,
		base64.StdEncoding.EncodeToString(raw),
		base64.RawStdEncoding.EncodeToString(raw),
		base64.URLEncoding.EncodeToString(raw),
		base64.RawURLEncoding.EncodeToString(raw),
		url.QueryEscape(v),
		url.PathEscape(v),
		hex.EncodeToString(raw),
		strings.ToUpper(hex.EncodeToString(raw)),
	}
	out = append(out, jsonEscapes(v)...)
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		out = append(out, base64Fragments(enc, raw)...)
	}
	return out
}

// jsonEscapes are v as it appears inside a JSON string (without the
// quotes): as Go's encoding/json writes it with and without HTML escaping,
// and with every non-ASCII character as \uXXXX (Python's default).
func jsonEscapes(v string) []string {
	var out []string
	if b, err := json.Marshal(v); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) == nil {
		b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		out = append(out, string(b[1:len(b)-1]))
	}
	var ascii strings.Builder
	for _, r := range v {
		switch {
		case r == '"' || r == '\\':
			ascii.WriteByte('\\')
			ascii.WriteRune(r)
		case r == '\n':
			ascii.WriteString(`\n`)
		case r == '\r':
			ascii.WriteString(`\r`)
		case r == '\t':
			ascii.WriteString(`\t`)
		case r < 0x20 || r > 0x7e && r < 0x10000:
			fmt.Fprintf(&ascii, `\u%04x`, r)
		case r >= 0x10000:
			r -= 0x10000
			fmt.Fprintf(&ascii, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			ascii.WriteRune(r)
		}
	}
	if !utf8.ValidString(v) {
		return out // the loop above saw U+FFFD for the bad bytes
	}
	return append(out, ascii.String())
}

// base64Fragments are the characters of enc's encoding that v alone fixes
// when it starts 0, 1 or 2 bytes into a 3-byte group of a larger blob (a
// secret inside an encoded JSON document or header, say): the characters
// that mix in neighbouring bytes are left out, so these match wherever v
// sits.
func base64Fragments(enc *base64.Encoding, v []byte) []string {
	var out []string
	for k := range 3 {
		padded := append(make([]byte, k), v...)
		s := enc.EncodeToString(padded)
		start := (k*8 + 5) / 6        // first character made only of v's bits
		end := (k + len(v)) * 8 / 6   // past the last such character
		if end-start >= minFragment { // shorter would mask unrelated base64
			out = append(out, s[start:end])
		}
	}
	return out
}

// String returns s with every secret masked.
func (m *Masker) String(s string) string {
	if m.Empty() {
		return s
	}
	return string(m.Bytes([]byte(s)))
}

// Bytes returns b with every secret masked, in a new slice when anything
// was masked.
func (m *Masker) Bytes(b []byte) []byte {
	if m.Empty() {
		return b
	}
	var out []byte
	s := m.Stream(func(p []byte) { out = append(out, p...) })
	s.Write(b)
	s.Flush()
	if out == nil && b != nil {
		out = []byte{}
	}
	return out
}

// Clipped masks s, a window cut out of a longer output (a tail, or a head
// kept up to a cap): where cutStart, a run of at least MinLen bytes at its
// start that ends a pattern is masked too, and where cutEnd, one at its end
// that begins a pattern; so a secret the window cut in two does not leak
// its larger half. A fragment shorter than MinLen bytes is kept.
func (m *Masker) Clipped(s string, cutStart, cutEnd bool) string {
	if m.Empty() {
		return s
	}
	b := []byte(s)
	var extra []span
	if cutStart {
		if n := m.partialAt(b, true); n > 0 {
			extra = append(extra, span{0, n})
		}
	}
	if cutEnd {
		if n := m.partialAt(b, false); n > 0 {
			extra = append(extra, span{len(b) - n, len(b)})
		}
	}
	var out []byte
	st := &Stream{m: m, emit: func(p []byte) { out = append(out, p...) }, buf: b, extra: extra}
	st.advance(len(b))
	return string(out)
}

// partialAt is the length of the longest run of at least MinLen bytes at
// the start of b that is a proper suffix of a pattern (atStart), or at its
// end that is a proper prefix of one; 0 when none.
func (m *Masker) partialAt(b []byte, atStart bool) int {
	best := 0
	for _, p := range m.patterns {
		for n := min(len(p)-1, len(b)); n >= MinLen && n > best; n-- {
			if atStart && bytes.Equal(b[:n], p[len(p)-n:]) || !atStart && bytes.Equal(b[len(b)-n:], p[:n]) {
				best = n
				break
			}
		}
	}
	return best
}

// span is a half-open byte range [start, end).
type span struct{ start, end int }

// Stream masks a stream of chunks: Write masks what it can decide and
// passes it to emit, holding back at least the last Longest()-1 bytes (a
// secret may continue in the next chunk) and at most 2*Longest()-1; Flush
// decides and emits the rest. Output
// order is kept, and the emitted bytes are exactly what String gives for
// the concatenated input. A Stream is not safe for concurrent use.
type Stream struct {
	m    *Masker
	emit func([]byte)
	buf  []byte // bytes written, not yet emitted
	// covered is how many bytes at the start of buf an earlier occurrence
	// already covers.
	covered int
	// inMask is true when the last byte emitted was part of a masked run,
	// so a run continuing into buf emits no second Mask.
	inMask bool
	// extra are spans of buf masked in addition to the occurrences; only
	// Clipped sets them, for a single advance over the whole text.
	extra []span
}

// Stream returns a Stream that passes masked bytes to emit. emit must not
// keep the slice it is given past its return.
func (m *Masker) Stream(emit func([]byte)) *Stream {
	return &Stream{m: m, emit: emit}
}

// Write masks p into the stream. It always returns len(p), nil, so a
// Stream can serve as an io.Writer.
func (s *Stream) Write(p []byte) (int, error) {
	if s.m.Empty() {
		if len(p) > 0 {
			s.emit(p)
		}
		return len(p), nil
	}
	s.buf = append(s.buf, p...)
	// Every occurrence starting before limit lies wholly in buf, so what
	// covers the bytes before limit is known. Deciding scans all of buf
	// for every pattern, so it waits until at least Longest() bytes can be
	// released: a harness writing a byte at a time then costs a few
	// pattern scans per byte, not one per byte per held-back byte.
	if len(s.buf) >= 2*s.m.maxLen {
		s.advance(len(s.buf) - (s.m.maxLen - 1))
	}
	return len(p), nil
}

// Flush masks and emits everything held back. The stream may be written
// to again afterwards, as a new text.
func (s *Stream) Flush() {
	if !s.m.Empty() {
		s.advance(len(s.buf))
	}
	s.buf, s.covered, s.inMask, s.extra = s.buf[:0], 0, false, nil
}

// advance emits buf[:limit] masked and keeps the rest.
func (s *Stream) advance(limit int) {
	if limit <= 0 {
		return
	}
	spans := s.m.cover(s.buf, limit)
	if s.covered > 0 {
		spans = append(spans, span{0, s.covered})
	}
	spans = append(spans, s.extra...)
	spans = merge(spans)

	var out []byte
	at := 0
	for _, sp := range spans {
		if sp.start >= limit {
			break
		}
		if sp.start > at {
			out = append(out, s.buf[at:sp.start]...)
			s.inMask = false
		}
		if !s.inMask {
			out = append(out, Mask...)
			s.inMask = true
		}
		at = sp.end
	}
	if at < limit {
		out = append(out, s.buf[at:limit]...)
		s.inMask = false
		at = limit
	}
	if len(out) > 0 {
		s.emit(out)
	}
	// at >= limit: a masked run may reach past limit into the kept bytes.
	s.covered = at - limit
	s.buf = append(s.buf[:0], s.buf[limit:]...)
}

// cover returns the spans of b covered by an occurrence of a pattern that
// starts before limit, each pattern's overlapping occurrences merged.
func (m *Masker) cover(b []byte, limit int) []span {
	var spans []span
	for _, p := range m.patterns {
		from := 0
		for from < limit {
			i := bytes.Index(b[from:], p)
			if i < 0 || from+i >= limit {
				break
			}
			start := from + i
			end := start + len(p)
			if n := len(spans); n > 0 && spans[n-1].end >= start && spans[n-1].start <= start {
				spans[n-1].end = max(spans[n-1].end, end)
			} else {
				spans = append(spans, span{start, end})
			}
			from = start + 1
		}
	}
	return spans
}

// merge sorts spans and joins those that overlap or touch.
func merge(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	var out []span
	for _, sp := range spans {
		if sp.end <= sp.start {
			continue
		}
		if n := len(out); n > 0 && sp.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, sp.end)
			continue
		}
		out = append(out, sp)
	}
	return out
}
