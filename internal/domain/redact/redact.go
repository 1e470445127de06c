// Package redact masks secret values in text a job produced (its stdout,
// stderr, streamed logs and trace file) before anything is stored, the way
// CI systems mask secrets in build logs: every occurrence of a secret, or of
// one of its common encodings, becomes "***".
//
// A Masker is built once per job from the secret values it was given. For
// each value (and, for a value with surrounding whitespace or several
// lines, the trimmed value and each line) it masks:
//
//   - the value itself;
//   - its base64 in the standard and URL-safe alphabets with and without
//     padding, and the characters the value fixes at each of the three
//     alignments inside a larger base64 blob; and its hex in both cases;
//     these also when wrapped onto several lines (CR and LF between any of
//     their characters, at most one break per 60 characters, as MIME's 76
//     columns, PEM's 64 and xxd -p's 60 put them);
//   - any spelling of the value in which some of its characters other than
//     ASCII letters and digits are escaped, one escape per character and
//     escapes of different families mixed: percent escapes %XX in either
//     case (url.QueryEscape, url.PathEscape, Python's quote and quote_plus,
//     JavaScript's encodeURI and encodeURIComponent) and + for a space; HTML
//     and XML character references (&amp; &quot; &lt; &gt; &apos; and the
//     other HTML names of ASCII punctuation, decimal &#47; and hexadecimal
//     &#x2F; or &#x2f;); and JSON and JavaScript backslash escapes (\/ \"
//     \\ \' \n \r \t \b \f, \u002F or \u002f with surrogate pairs, and
//     \xHH of a byte).
//
// Every byte covered by an occurrence of any of these is masked, overlapping
// occurrences included, and each maximal covered run becomes one Mask. So
// the result does not depend on the order of the patterns, and a Stream fed
// the same bytes in any chunking emits exactly what String does at once.
//
// Values shorter than MinLen bytes are not masked (see MinLen). Masking is a
// safeguard against accidental disclosure, not a sandbox: a harness that
// transforms a secret in some other way (reverses it, encodes it twice,
// sends it over the network) is beyond its reach.
//
// The package is pure: standard library only.
package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sort"
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
	// patterns are matched as they are: the values (deduplicated, longest
	// first).
	patterns [][]byte
	// wrapped are matched with line breaks ignored: the base64 and hex
	// forms, which encoders wrap.
	wrapped [][]byte
	// escaped match the values spelled with escapes, for the values that
	// hold a character some encoding escapes.
	escaped []*escaped
	// escapeBytes are the bytes an escape starts with ('+' only when a
	// value holds a space): text without any holds no escaped value.
	escapeBytes []byte
	maxLen      int
	short       int
}

// New returns a Masker for values. Values shorter than MinLen bytes are
// skipped (see Short); duplicates are harmless.
func New(values []string) *Masker {
	m := &Masker{}
	seen := map[string]bool{}
	add := func(list *[][]byte, p string) {
		if len(p) < MinLen || seen[p] {
			return
		}
		seen[p] = true
		*list = append(*list, []byte(p))
	}
	space := false
	for _, v := range values {
		if len(v) < MinLen {
			m.short++
			continue
		}
		for _, base := range variants(v) {
			if len(base) < MinLen {
				continue // a short line's encodings are as common as it is
			}
			add(&m.patterns, base)
			if !utf8.ValidString(base) {
				// Go's encoding/json writes the invalid bytes as \ufffd,
				// which no longer decodes to the value: match its output.
				for _, j := range jsonEscapes(base) {
					add(&m.patterns, j)
				}
			}
			for _, p := range wrappable(base) {
				add(&m.wrapped, p)
			}
			if e := newEscaped(base); e != nil && !seen["\x00esc"+base] {
				seen["\x00esc"+base] = true
				m.escaped = append(m.escaped, e)
				space = space || strings.Contains(base, " ")
			}
		}
	}
	longestFirst := func(a, b []byte) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return bytes.Compare(a, b)
	}
	slices.SortFunc(m.patterns, longestFirst)
	slices.SortFunc(m.wrapped, longestFirst)
	for _, p := range m.patterns {
		m.maxLen = max(m.maxLen, len(p))
	}
	for _, p := range m.wrapped {
		m.maxLen = max(m.maxLen, wrappedLen(len(p)))
	}
	for _, e := range m.escaped {
		m.maxLen = max(m.maxLen, e.bound)
	}
	if len(m.escaped) > 0 {
		m.escapeBytes = []byte(`%&\`)
		if space {
			m.escapeBytes = append(m.escapeBytes, '+')
		}
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
func (m *Masker) Empty() bool {
	return m == nil || len(m.patterns) == 0 && len(m.wrapped) == 0 && len(m.escaped) == 0
}

// Longest is the length of the longest text an occurrence may take: a
// stream holds back one byte less than this.
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

// wrappable are the binary-to-text encodings of v, which encoders wrap onto
// lines: base64 (both alphabets, with and without padding, and the
// fragments v fixes inside a larger blob) and hex in both cases.
func wrappable(v string) []string {
	raw := []byte(v)
	out := []string{
		base64.StdEncoding.EncodeToString(raw),
		base64.RawStdEncoding.EncodeToString(raw),
		base64.URLEncoding.EncodeToString(raw),
		base64.RawURLEncoding.EncodeToString(raw),
		hex.EncodeToString(raw),
		strings.ToUpper(hex.EncodeToString(raw)),
	}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		out = append(out, base64Fragments(enc, raw)...)
	}
	return out
}

// wrapColumns is the narrowest line a wrapped pattern is matched across
// (xxd -p writes 60 columns; MIME 76, PEM 64).
const wrapColumns = 60

// wrappedLen is the most text a wrapped pattern of n characters takes: a
// CR LF after every wrapColumns characters, and one more at either end of
// a fragment that starts or ends a line.
func wrappedLen(n int) int { return n + 2*(n/wrapColumns+1) }

// jsonEscapes are v as it appears inside a JSON string written by Go's
// encoding/json (without the quotes), with and without HTML escaping. Only
// needed for a v that is not valid UTF-8; the escape matcher reads every
// other JSON spelling.
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
	return out
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

// maxEscape is the longest escape of one byte the matcher reads
// ("&#0000047;", "&#x00002F;"; a multi-byte character's escape is shorter
// per byte), so an escaped value of n bytes spans at most n*maxEscape.
const maxEscape = 10

// minAnchor is the shortest run of letters and digits used to find an
// escaped value's candidates: shorter runs occur too often in ordinary text.
const minAnchor = 4

// escaped matches one value spelled with escapes (see the package comment):
// at each candidate start it reads the text one escape or byte at a time
// against the value, trying a byte as itself and as the start of an escape.
type escaped struct {
	s []byte
	// bound is the longest text an escaped spelling of s may take: letters
	// and digits as themselves, every other byte as its longest escape.
	bound int
	// anchor is the longest run of ASCII letters and digits in s, which
	// every escaped spelling keeps literally, at s[anchorAt:]; preBound is
	// the longest text the part of s before it may take. Without an anchor
	// (none of minAnchor bytes), every byte that can start an occurrence
	// (starts) is a candidate.
	anchor   []byte
	anchorAt int
	preBound int
	starts   [256]bool
	// ends are the bytes a spelling of the byte before the anchor can end
	// with, and follows those the spelling of the byte after it can start
	// with: an anchor found with other neighbours is no occurrence's.
	ends, follows [256]bool
	// budget bounds the branch points visited from one candidate (each
	// visited once: failures are remembered), so that no text makes the
	// matcher costly; past it the candidate is no match.
	budget int
}

// newEscaped is the matcher of v, or nil when v is all ASCII letters and
// digits, which no encoding it reads escapes. (- _ . ~ are kept by every
// standard encoder, but an encoder that writes every other character as a
// character reference escapes them too.)
func newEscaped(v string) *escaped {
	s := []byte(v)
	if !slices.ContainsFunc(s, func(c byte) bool { return !isAlnum(c) }) {
		return nil
	}
	e := &escaped{s: s}
	charBound := func(c byte) int {
		if isAlnum(c) {
			return 1
		}
		return maxEscape
	}
	for i := 0; i < len(s); {
		if !isAlnum(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isAlnum(s[j]) {
			j++
		}
		if j-i > len(e.anchor) {
			e.anchor, e.anchorAt = s[i:j], i
		}
		i = j
	}
	for i, c := range s {
		e.bound += charBound(c)
		if i < e.anchorAt {
			e.preBound += charBound(c)
		}
	}
	e.budget = 256 + 4*e.bound + len(s)*len(s)
	if len(e.anchor) < minAnchor {
		e.anchor, e.anchorAt, e.preBound = nil, 0, 0
	}
	e.starts[s[0]] = true
	for _, c := range []byte(`%&\+`) {
		e.starts[c] = true
	}
	if e.anchor != nil && e.anchorAt > 0 {
		c := s[e.anchorAt-1]
		e.ends[c], e.ends[';'] = true, true // as itself; a character reference
		for _, h := range []byte("0123456789abcdefABCDEF") {
			e.ends[h] = true // %XX, \uXXXX, \xHH
		}
		switch c {
		case ' ':
			e.ends['+'] = true
		case '\n', '\r', '\t', '\b', '\f':
			e.ends["nrtbf"[strings.IndexByte("\n\r\t\b\f", c)]] = true
		}
	}
	if end := e.anchorAt + len(e.anchor); e.anchor != nil && end < len(s) {
		e.follows[s[end]] = true
		for _, c := range []byte(`%&\+`) {
			e.follows[c] = true
		}
	}
	return e
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// cover appends the spans of b covered by an escaped spelling of e.s that
// starts before limit and within e.bound bytes.
func (e *escaped) cover(b []byte, limit int, spans []span) []span {
	var st matchState
	try := func(p int) {
		if !e.starts[b[p]] {
			return
		}
		st.steps = 0
		if len(st.failed) > 0 {
			clear(st.failed)
		}
		if end := e.match(b, p, 0, min(len(b), p+e.bound), false, &st); end > p {
			spans = append(spans, span{p, end})
		}
	}
	if e.anchor == nil {
		for p := range limit {
			try(p)
		}
		return spans
	}
	// An occurrence holds the anchor between anchorAt and preBound bytes
	// after its start; try the starts each anchor allows, each once.
	next := 0
	for from := 0; ; {
		i := bytes.Index(b[from:], e.anchor)
		if i < 0 {
			break
		}
		q := from + i
		lo := max(next, q-e.preBound)
		if lo >= limit {
			break
		}
		from = q + 1
		if q < e.anchorAt || e.anchorAt > 0 && !e.ends[b[q-1]] {
			continue
		}
		if end := q + len(e.anchor); e.anchorAt+len(e.anchor) < len(e.s) && (end >= len(b) || !e.follows[b[end]]) {
			continue
		}
		hi := min(q-e.anchorAt, limit-1)
		for p := lo; p <= hi; p++ {
			try(p)
		}
		next = max(next, hi+1)
	}
	return spans
}

// matchState is what one candidate's match remembers: the branch points
// it visited and those known to fail.
type matchState struct {
	steps  int
	failed map[int]bool
}

// match returns the end of a spelling of e.s[j:] that starts at b[p] and
// ends by w, or -1. When partial, running into the end of b after at least
// one byte of e.s counts as a match ending there (a window cut the
// occurrence). A byte that can start an escape is tried as itself and as
// the escape; a branch point that failed once is not tried again, so a text
// of many ambiguous bytes (\\\\ against a value of backslashes) costs
// at most one visit per point.
func (e *escaped) match(b []byte, p, j, w int, partial bool, st *matchState) int {
	s := e.s
	for j < len(s) {
		if p >= w {
			if partial && p == len(b) && j > 0 {
				return p
			}
			return -1
		}
		c := b[p]
		if c != '%' && c != '&' && c != '\\' && c != '+' {
			if c != s[j] {
				return -1
			}
			p, j = p+1, j+1
			continue
		}
		u := unescape(b[p:w], s[j])
		n, dec := u.n, u.buf[:u.len]
		escapes := n > 0 && bytes.HasPrefix(s[j:], dec)
		switch {
		case !escapes && c != s[j]:
			return -1
		case !escapes:
			p, j = p+1, j+1
			continue
		case c != s[j]:
			p, j = p+n, j+len(dec)
			continue
		}
		// c matches as itself and as the start of an escape: a branch.
		key := p*(len(s)+1) + j
		if st.failed[key] {
			return -1
		}
		if st.steps++; st.steps > e.budget {
			return -1
		}
		if end := e.match(b, p+1, j+1, w, partial, st); end >= 0 {
			return end
		}
		if end := e.match(b, p+n, j+len(dec), w, partial, st); end >= 0 {
			return end
		}
		if st.failed == nil {
			st.failed = map[int]bool{}
		}
		st.failed[key] = true
		return -1
	}
	return p
}

// unit is one escape read: n bytes of text standing for buf[:len].
type unit struct {
	n, len int
	buf    [utf8.UTFMax]byte
}

// byteUnit is an escape of n bytes standing for the byte c.
func byteUnit(n int, c byte) unit { return unit{n: n, len: 1, buf: [utf8.UTFMax]byte{c}} }

// runeUnit is an escape of n bytes standing for the character r; none
// (n = 0) when r is not a valid character.
func runeUnit(n int, r rune) unit {
	if !utf8.ValidRune(r) {
		return unit{}
	}
	u := unit{n: n}
	u.len = utf8.EncodeRune(u.buf[:], r)
	return u
}

// unescape reads the escape at the start of t (t[0] is one of % & \ +);
// n = 0 when t does not start with one. want is the byte the caller needs
// next: '+' is a space only when a space is wanted.
func unescape(t []byte, want byte) unit {
	switch t[0] {
	case '+':
		if want == ' ' {
			return byteUnit(1, ' ')
		}
	case '%':
		if len(t) >= 3 {
			if v, ok := hexValue(t[1:3]); ok {
				return byteUnit(3, byte(v))
			}
		}
	case '&':
		return charRef(t)
	case '\\':
		return backslash(t)
	}
	return unit{}
}

// hexValue parses hex digits of either case.
func hexValue(t []byte) (rune, bool) {
	var v rune
	for _, c := range t {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// namedRefs are the HTML character references of ASCII punctuation (and
// two spaces) whose names fit in maxEscape: what HTML and XML escapers
// write (&amp; &lt; &gt; &quot; &apos;) and the rarer HTML5 names.
var namedRefs = map[string]rune{
	"quot": '"', "QUOT": '"', "amp": '&', "AMP": '&', "lt": '<', "LT": '<', "gt": '>', "GT": '>', "apos": '\'',
	"excl": '!', "num": '#', "dollar": '$', "percnt": '%', "lpar": '(', "rpar": ')', "ast": '*', "midast": '*',
	"plus": '+', "comma": ',', "period": '.', "sol": '/', "colon": ':', "semi": ';', "equals": '=', "quest": '?',
	"commat": '@', "lsqb": '[', "lbrack": '[', "bsol": '\\', "rsqb": ']', "rbrack": ']', "Hat": '^', "lowbar": '_',
	"UnderBar": '_', "grave": '`', "lcub": '{', "lbrace": '{', "verbar": '|', "vert": '|', "rcub": '}', "rbrace": '}',
	"Tab": '\t', "NewLine": '\n', "nbsp": 0xa0,
}

// charRef reads an HTML or XML character reference at the start of t:
// &name;, &#ddd; (up to 7 digits) or &#xhhh; (up to 6 hex digits, either
// case).
func charRef(t []byte) unit {
	end := bytes.IndexByte(t[:min(len(t), maxEscape)], ';')
	if end < 2 {
		return unit{}
	}
	body := t[1:end]
	var r rune
	switch {
	case body[0] != '#':
		v, ok := namedRefs[string(body)]
		if !ok {
			return unit{}
		}
		r = v
	case len(body) > 2 && (body[1] == 'x' || body[1] == 'X'):
		v, ok := hexValue(body[2:])
		if !ok {
			return unit{}
		}
		r = v
	default:
		if len(body) < 2 {
			return unit{}
		}
		for _, c := range body[1:] {
			if c < '0' || c > '9' {
				return unit{}
			}
			r = r*10 + rune(c-'0')
		}
	}
	return runeUnit(end+1, r)
}

// backslash reads a JSON or JavaScript escape at the start of t.
func backslash(t []byte) unit {
	if len(t) < 2 {
		return unit{}
	}
	switch t[1] {
	case '/', '"', '\\', '\'':
		return byteUnit(2, t[1])
	case 'n':
		return byteUnit(2, '\n')
	case 'r':
		return byteUnit(2, '\r')
	case 't':
		return byteUnit(2, '\t')
	case 'b':
		return byteUnit(2, '\b')
	case 'f':
		return byteUnit(2, '\f')
	case 'x':
		if len(t) >= 4 {
			if v, ok := hexValue(t[2:4]); ok {
				return byteUnit(4, byte(v))
			}
		}
	case 'u':
		if len(t) < 6 {
			return unit{}
		}
		r, ok := hexValue(t[2:6])
		if !ok {
			return unit{}
		}
		if r >= 0xd800 && r < 0xdc00 { // a surrogate pair
			if len(t) < 12 || t[6] != '\\' || t[7] != 'u' {
				return unit{}
			}
			lo, ok := hexValue(t[8:12])
			if !ok || lo < 0xdc00 || lo >= 0xe000 {
				return unit{}
			}
			return runeUnit(12, 0x10000+(r-0xd800)<<10+(lo-0xdc00))
		}
		return runeUnit(6, r)
	}
	return unit{}
}

// lineView is text with its CR and LF bytes left out, for the wrapped
// patterns, and the way back to the text's offsets.
type lineView struct {
	b []byte
	// cuts are where bytes were left out: from view offset at on, the
	// text offset is the view offset plus shift.
	cuts []viewCut
}

type viewCut struct{ at, shift int }

// newLineView returns the view of b (b itself when it has no line breaks),
// reusing the storage of scratch, which it updates.
func newLineView(b []byte, scratch *lineView) lineView {
	nl, cr := bytes.IndexByte(b, '\n'), bytes.IndexByte(b, '\r')
	if nl < 0 && cr < 0 {
		return lineView{b: b}
	}
	v := lineView{b: scratch.b[:0], cuts: scratch.cuts[:0]}
	defer func() { *scratch = v }()
	for i := 0; i < len(b); {
		// The next break at or after i.
		if nl >= 0 && nl < i {
			if nl = bytes.IndexByte(b[i:], '\n'); nl >= 0 {
				nl += i
			}
		}
		if cr >= 0 && cr < i {
			if cr = bytes.IndexByte(b[i:], '\r'); cr >= 0 {
				cr += i
			}
		}
		brk := nl
		if brk < 0 || cr >= 0 && cr < brk {
			brk = cr
		}
		if brk < 0 {
			v.b = append(v.b, b[i:]...)
			break
		}
		v.b = append(v.b, b[i:brk]...)
		j := brk
		for j < len(b) && (b[j] == '\n' || b[j] == '\r') {
			j++
		}
		v.cuts = append(v.cuts, viewCut{at: len(v.b), shift: j - len(v.b)})
		i = j
	}
	return v
}

// orig is the text offset of view offset i.
func (v lineView) orig(i int) int {
	k := sort.Search(len(v.cuts), func(k int) bool { return v.cuts[k].at > i })
	if k == 0 {
		return i
	}
	return i + v.cuts[k-1].shift
}

// span returns the text span of the view span [start, end), end > start.
func (v lineView) span(start, end int) span {
	return span{v.orig(start), v.orig(end-1) + 1}
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
// the start of b that is a proper suffix of an occurrence (atStart), or at
// its end that is a proper prefix of one; 0 when none.
func (m *Masker) partialAt(b []byte, atStart bool) int {
	best := partialOf(b, m.patterns, atStart)
	if len(m.wrapped) > 0 {
		v := newLineView(b, &lineView{})
		if n := partialOf(v.b, m.wrapped, atStart); n > 0 {
			if atStart {
				best = max(best, v.orig(n-1)+1)
			} else {
				best = max(best, len(b)-v.orig(len(v.b)-n))
			}
		}
	}
	for _, e := range m.escaped {
		best = max(best, e.partial(b, atStart))
	}
	return best
}

// partialOf is partialAt for patterns matched as they are.
func partialOf(b []byte, patterns [][]byte, atStart bool) int {
	best := 0
	for _, p := range patterns {
		for n := min(len(p)-1, len(b)); n >= MinLen && n > best; n-- {
			if atStart && bytes.Equal(b[:n], p[len(p)-n:]) || !atStart && bytes.Equal(b[len(b)-n:], p[:n]) {
				best = n
				break
			}
		}
	}
	return best
}

// partial is partialAt for an escaped spelling of e.s.
func (e *escaped) partial(b []byte, atStart bool) int {
	best := 0
	if atStart {
		for k := 1; k < len(e.s); k++ {
			if end := e.match(b, 0, k, min(len(b), e.bound), false, &matchState{}); end >= MinLen && end > best {
				best = end
			}
		}
		return best
	}
	for p := max(0, len(b)-e.bound); p <= len(b)-MinLen; p++ {
		if !e.starts[b[p]] {
			continue
		}
		if end := e.match(b, p, 0, len(b), true, &matchState{}); end == len(b) {
			return len(b) - p
		}
	}
	return 0
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
	// view is the storage of buf's view without line breaks, reused.
	view lineView
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
	spans := s.m.cover(s.buf, limit, &s.view)
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

// cover returns the spans of b covered by an occurrence that starts before
// limit and spans at most Longest() bytes.
func (m *Masker) cover(b []byte, limit int, scratch *lineView) []span {
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
	if len(m.wrapped) > 0 {
		v := newLineView(b, scratch)
		for _, p := range m.wrapped {
			for from := 0; ; {
				i := bytes.Index(v.b[from:], p)
				if i < 0 {
					break
				}
				sp := v.span(from+i, from+i+len(p))
				if sp.start >= limit {
					break
				}
				if sp.end-sp.start <= m.maxLen {
					spans = append(spans, sp)
				}
				from += i + 1
			}
		}
	}
	if len(m.escaped) > 0 && containsAny(b, m.escapeBytes) {
		for _, e := range m.escaped {
			spans = e.cover(b, limit, spans)
		}
	}
	return spans
}

// containsAny reports whether b holds any of the bytes in set.
func containsAny(b, set []byte) bool {
	for _, c := range set {
		if bytes.IndexByte(b, c) >= 0 {
			return true
		}
	}
	return false
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
