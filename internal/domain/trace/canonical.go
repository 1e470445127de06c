package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// The ledger's digests are over registry.CanonicalJSON of the events
// array, which marshals the events with encoding/json, decodes the result
// into a generic tree and writes the tree canonically. The canonical form
// of an array is '[' + its elements' canonical forms joined by ',' + ']',
// so a trajectory can be sealed from each event's canonical bytes, computed
// once when the span arrives. eventWriter writes those bytes straight from
// a TraceEvent, byte for byte what the generic path writes for it; for
// anything it does not handle it reports errSlowPath and the caller takes
// the generic path.
//
// The format is registry's alone: every string, member name and number
// is written by registry's primitives (AppendCanonicalString,
// AppendCanonicalBytes, AppendCanonicalNumber, AppendCanonicalFloat) and
// members are sorted in registry.CompareKeys's order. What this file adds
// is the shape of an event (its members, in order, omitted as
// encoding/json omits them) and reading raw JSON without a generic tree.
// The differential fuzz test FuzzCanonicalEvent holds it to
// registry.CanonicalJSON; its committed corpus
// (testdata/fuzz/FuzzCanonicalEvent) runs with every go test, and make
// test fuzzes it for a bounded time (make fuzz-canonical).

// errSlowPath says the fast writer cannot write an event itself.
var errSlowPath = errors.New("traces: event needs the generic canonical path")

// float53 bounds the integers a float64 holds exactly.
const float53 = 1 << 53

// maxEventText is eval's bound of an event's text fields and raw JSON
// (TraceEvent.Validate); TestMaxEventText holds the two together.
const maxEventText = 1 << 20

// event is a TraceEvent as the writer reads it. The times are held by
// value and the embedded TS, StartTime and EndTime are unused, so that an
// event normalised and written within one call (AppendSpanEvent) lives on
// the stack. While inLazy (outLazy), Input (Output) is rawValue(inText),
// not yet computed.
type event struct {
	eval.TraceEvent
	ts, startTime, endTime  time.Time
	hasTS, hasStart, hasEnd bool
	inText, outText         string
	inLazy, outLazy         bool
	// attrs are a compact span's attributes, in place of Attributes,
	// when compact.
	attrs   []attr
	compact bool
}

// eventOf is e as the writer reads it.
func eventOf(e *eval.TraceEvent) event {
	ev := event{TraceEvent: *e}
	ev.TS, ev.StartTime, ev.EndTime = nil, nil, nil
	if e.TS != nil {
		ev.ts, ev.hasTS = *e.TS, true
	}
	if e.StartTime != nil {
		ev.startTime, ev.hasStart = *e.StartTime, true
	}
	if e.EndTime != nil {
		ev.endTime, ev.hasEnd = *e.EndTime, true
	}
	return ev
}

// traceEvent is e as a TraceEvent, its lazy fields computed.
func (e *event) traceEvent() eval.TraceEvent {
	x := e.TraceEvent
	if e.hasTS {
		t := e.ts
		x.TS = &t
	}
	if e.hasStart {
		t := e.startTime
		x.StartTime = &t
	}
	if e.hasEnd {
		t := e.endTime
		x.EndTime = &t
	}
	if e.inLazy {
		x.Input = rawValue(e.inText)
	}
	if e.outLazy {
		x.Output = rawValue(e.outText)
	}
	if e.compact {
		s := Span{attrs: e.attrs}
		x.Attributes = s.attributes()
	}
	return x
}

// valid reports whether the event's Validate accepts it, by the same
// rules without building the TraceEvent (TestEventValidMirrorsValidate);
// a lazy raw field is within maxEventText by construction (maxLazyRaw).
func (e *event) valid() bool {
	switch e.Kind {
	case eval.EventToolCall, eval.EventSpan, eval.EventArtifact:
		if strings.TrimSpace(e.Name) == "" {
			return false
		}
	case eval.EventError:
		if strings.TrimSpace(e.Message) == "" {
			return false
		}
	case eval.EventMessage:
		if strings.TrimSpace(e.Role) == "" {
			return false
		}
	case eval.EventLLMCall:
	default:
		return false
	}
	if e.InputTokens < 0 || e.OutputTokens < 0 || e.CostUSD < 0 || e.DurationMs < 0 {
		return false
	}
	return len(e.Content) <= maxEventText && len(e.Message) <= maxEventText &&
		len(e.Input) <= maxEventText && len(e.Output) <= maxEventText
}

// eventWriter writes one event's canonical bytes. stored selects what the
// bytes are the canonical form of: the event itself (false), or the event
// after a trip through its stored JSON, json.Marshal then json.Unmarshal
// into a TraceEvent (true), where every number among the attributes comes
// back a float64. The pending-span ledger sealed events after that trip,
// so its digests are of the second form.
//
// Its scratch slices are stacks that nested objects push on and pop, kept
// between events (writers), so that writing an event allocates nothing.
type eventWriter struct {
	stored bool
	pairs  []attrPair // scratch for sorting an object's members
	raw    rawScratch
}

// attrPair is a member of an attributes object.
type attrPair struct {
	k string
	v any
}

// writers keeps eventWriters and their scratch between calls.
var writers = sync.Pool{New: func() any { return new(eventWriter) }}

// AppendCanonicalEvent appends the canonical JSON of e, as it is an
// element of registry.CanonicalJSON([]eval.TraceEvent{..., e, ...}).
func AppendCanonicalEvent(dst []byte, e *eval.TraceEvent) ([]byte, error) {
	ev := eventOf(e)
	return appendEvent(dst, &ev, false)
}

// AppendCanonicalStoredEvent appends the canonical JSON of e as a
// pending span's event: that of e after json.Marshal and json.Unmarshal
// into a TraceEvent, which is how spans stored by earlier versions are
// read back when their trajectory is sealed.
func AppendCanonicalStoredEvent(dst []byte, e *eval.TraceEvent) ([]byte, error) {
	ev := eventOf(e)
	return appendEvent(dst, &ev, true)
}

// AppendSpanEvent appends the canonical JSON of s's event as a pending
// span keeps it: the bytes of AppendCanonicalStoredEvent(dst,
// &Normalize(*s, m)), or the error of that event's Validate or of the
// writer, with dst as it was. It writes straight from the span, without
// the TraceEvent and its allocations.
func AppendSpanEvent(dst []byte, s *Span, m SpanAttrMapping) ([]byte, error) {
	var e event
	normalize(&e, s, m, true)
	if !e.valid() {
		x := e.traceEvent()
		if err := x.Validate(); err != nil {
			return dst, err
		}
	}
	return appendEvent(dst, &e, true)
}

// appendEvent appends e's canonical bytes with a pooled writer.
func appendEvent(dst []byte, e *event, stored bool) ([]byte, error) {
	w := writers.Get().(*eventWriter)
	w.stored = stored
	out, err := w.write(dst, e)
	writers.Put(w)
	return out, err
}

// event appends e's canonical bytes (SealEvents' writer).
func (w *eventWriter) event(dst []byte, e *eval.TraceEvent) ([]byte, error) {
	ev := eventOf(e)
	return w.write(dst, &ev)
}

// write appends e's canonical bytes, or falls back to the generic path.
func (w *eventWriter) write(dst []byte, e *event) ([]byte, error) {
	out, err := w.fast(dst, e)
	if err == nil {
		return out, nil
	}
	if !errors.Is(err, errSlowPath) {
		return dst, err
	}
	return w.slow(dst, e)
}

// slow is the generic path: exactly what the ledger did before.
func (w *eventWriter) slow(dst []byte, e *event) ([]byte, error) {
	x := e.traceEvent()
	if w.stored {
		raw, err := json.Marshal(&x)
		if err != nil {
			return dst, err
		}
		x = eval.TraceEvent{}
		if err := json.Unmarshal(raw, &x); err != nil {
			return dst, err
		}
	}
	c, err := registry.CanonicalJSON(&x)
	if err != nil {
		return dst, err
	}
	return append(dst, c...), nil
}

// fast writes the members in canonical (sorted) order: attributes, code,
// content, costUsd, durationMs, endTime, input, inputTokens, kind,
// mediaType, message, model, name, output, outputTokens, ref, role,
// startTime, ts; each omitted when encoding/json omits it.
func (w *eventWriter) fast(dst []byte, e *event) ([]byte, error) {
	var err error
	dst = append(dst, '{')
	first := true
	member := func(name string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, '"', ':')
	}
	str := func(name, v string) {
		if v != "" {
			member(name)
			dst = registry.AppendCanonicalString(dst, v)
		}
	}
	raw := func(name string, raw json.RawMessage, text string, lazy bool) {
		switch {
		case lazy:
			member(name)
			dst, err = w.rawText(dst, text)
		case len(raw) > 0:
			member(name)
			dst, err = w.appendRaw(dst, raw)
		}
	}
	switch {
	case e.compact && len(e.attrs) > 0:
		member("attributes")
		if dst, err = w.attrList(dst, e.attrs); err != nil {
			return dst, err
		}
	case len(e.Attributes) > 0:
		member("attributes")
		if dst, err = w.object(dst, e.Attributes, 0); err != nil {
			return dst, err
		}
	}
	str("code", e.Code)
	str("content", e.Content)
	if e.CostUSD != 0 {
		member("costUsd")
		if dst, err = appendFloat(dst, e.CostUSD); err != nil {
			return dst, err
		}
	}
	if e.DurationMs != 0 {
		member("durationMs")
		if dst, err = appendFloat(dst, e.DurationMs); err != nil {
			return dst, err
		}
	}
	if e.hasEnd {
		member("endTime")
		if dst, err = appendTime(dst, e.endTime); err != nil {
			return dst, err
		}
	}
	if raw("input", e.Input, e.inText, e.inLazy); err != nil {
		return dst, err
	}
	if e.InputTokens != 0 {
		member("inputTokens")
		dst = strconv.AppendInt(dst, e.InputTokens, 10)
	}
	member("kind")
	dst = registry.AppendCanonicalString(dst, e.Kind)
	str("mediaType", e.MediaType)
	str("message", e.Message)
	str("model", e.Model)
	str("name", e.Name)
	if raw("output", e.Output, e.outText, e.outLazy); err != nil {
		return dst, err
	}
	if e.OutputTokens != 0 {
		member("outputTokens")
		dst = strconv.AppendInt(dst, e.OutputTokens, 10)
	}
	str("ref", e.Ref)
	str("role", e.Role)
	if e.hasStart {
		member("startTime")
		if dst, err = appendTime(dst, e.startTime); err != nil {
			return dst, err
		}
	}
	if e.hasTS {
		member("ts")
		if dst, err = appendTime(dst, e.ts); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// value appends an attribute value as the generic path writes it.
func (w *eventWriter) value(dst []byte, v any, depth int) ([]byte, error) {
	if depth > 1000 {
		return dst, errSlowPath
	}
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return registry.AppendCanonicalString(dst, x), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case int64:
		if w.stored && (x > float53 || x < -float53) {
			return appendFloat(dst, float64(x))
		}
		return strconv.AppendInt(dst, x, 10), nil
	case float64:
		return appendFloat(dst, x)
	case []any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = w.value(dst, e, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		return w.object(dst, x, depth)
	}
	return dst, errSlowPath
}

// object appends a map with its members sorted by name. The members of
// the event's attributes are sorted in an array on the stack, where
// moving them needs no write barrier; those of nested objects are pushed
// on w.pairs (the depth of an event's values is not bounded here).
func (w *eventWriter) object(dst []byte, m map[string]any, depth int) ([]byte, error) {
	var local [16]attrPair
	var pairs []attrPair
	if depth == 0 && len(m) <= len(local) {
		pairs = appendPairs(local[:0], m)
	} else {
		mark := len(w.pairs)
		defer func() {
			clear(w.pairs[mark:]) // a pooled writer holds no attribute
			w.pairs = w.pairs[:mark]
		}()
		// A nested object pushes after these, and may move w.pairs to a
		// new array; pairs keeps the members.
		w.pairs = appendPairs(w.pairs, m)
		pairs = w.pairs[mark:]
	}
	sortPairs(pairs)
	dst = append(dst, '{')
	var err error
	for i := range pairs {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = appendKey(dst, pairs[i].k); err != nil {
			return dst, err
		}
		dst = append(dst, ':')
		if dst, err = w.value(dst, pairs[i].v, depth+1); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// attrList appends a compact span's attributes, sorted already, as
// object writes them as a map. A key FlattenSpansCompact found plain
// (plainASCII) is known to be UTF-8.
func (w *eventWriter) attrList(dst []byte, attrs []attr) ([]byte, error) {
	dst = append(dst, '{')
	var err error
	for i := range attrs {
		a := &attrs[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		if a.val.plainKey {
			dst = registry.AppendCanonicalString(dst, a.key)
		} else if dst, err = appendKey(dst, a.key); err != nil {
			return dst, err
		}
		dst = append(dst, ':')
		switch v := &a.val; v.kind {
		case kindString:
			dst = registry.AppendCanonicalString(dst, v.s)
		case kindInt:
			if x := int64(v.n); w.stored && (x > float53 || x < -float53) {
				dst, err = appendFloat(dst, float64(x)) // as value writes an int64
			} else {
				dst = strconv.AppendInt(dst, x, 10)
			}
		case kindFloat:
			dst, err = appendFloat(dst, math.Float64frombits(v.n))
		case kindBool:
			dst = strconv.AppendBool(dst, v.n == 1)
		default:
			dst, err = w.value(dst, v.x, 1)
		}
		if err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendKey appends an object member's name, or errSlowPath when it is
// not UTF-8: encoding/json would replace the invalid bytes, and two names
// could then collide.
func appendKey(dst []byte, k string) ([]byte, error) {
	if !plainASCII(k) && !utf8.ValidString(k) {
		return dst, errSlowPath
	}
	return registry.AppendCanonicalString(dst, k), nil
}

// appendPairs appends the members of m.
func appendPairs(pairs []attrPair, m map[string]any) []attrPair {
	for k, v := range m {
		pairs = append(pairs, attrPair{k, v})
	}
	return pairs
}

// sortPairs sorts an object's members in canonical order
// (registry.CompareKeys): by insertion for the few members of a span's
// usual attributes, which beats the general sort.
func sortPairs(p []attrPair) {
	if len(p) > 12 {
		slices.SortFunc(p, func(a, b attrPair) int { return registry.CompareKeys(a.k, b.k) })
		return
	}
	for i := 1; i < len(p); i++ {
		for j := i; j > 0 && registry.CompareKeys(p[j].k, p[j-1].k) < 0; j-- {
			p[j], p[j-1] = p[j-1], p[j]
		}
	}
}

// plainASCII reports whether s is ASCII without a byte JSON escapes:
// registry.PlainString, which AppendCanonicalString writes as it is.
func plainASCII(s string) bool { return registry.PlainString(s) }

// appendFloat writes f as the generic path writes a float64
// (registry.AppendCanonicalFloat), or reports errSlowPath for NaN and the
// infinities, so that the generic path says what is wrong.
func appendFloat(dst []byte, f float64) ([]byte, error) {
	out, err := registry.AppendCanonicalFloat(dst, f)
	if err != nil {
		return dst, errSlowPath
	}
	return out, nil
}

// appendTime writes t as time.Time's MarshalJSON does.
func appendTime(dst []byte, t time.Time) ([]byte, error) {
	if t.Location() == time.UTC {
		// Every span's times: written here, without AppendFormat's
		// layout interpretation.
		if y, mo, d := t.Date(); y >= 0 && y <= 9999 {
			h, mi, sec := t.Clock()
			dst = append(dst, '"')
			dst = appendDigits(dst, y, 4)
			dst = append(dst, '-')
			dst = appendDigits(dst, int(mo), 2)
			dst = append(dst, '-')
			dst = appendDigits(dst, d, 2)
			dst = append(dst, 'T')
			dst = appendDigits(dst, h, 2)
			dst = append(dst, ':')
			dst = appendDigits(dst, mi, 2)
			dst = append(dst, ':')
			dst = appendDigits(dst, sec, 2)
			if ns := t.Nanosecond(); ns != 0 {
				// RFC3339Nano's fraction: no trailing zeros.
				n := 9
				for ns%10 == 0 {
					ns /= 10
					n--
				}
				dst = append(dst, '.')
				dst = appendDigits(dst, ns, n)
			}
			return append(dst, 'Z', '"'), nil
		}
	}
	if y := t.Year(); y < 0 || y > 9999 {
		return dst, errSlowPath
	}
	if _, off := t.Zone(); off%60 != 0 || off <= -24*3600 || off >= 24*3600 {
		return dst, errSlowPath
	}
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"'), nil
}

// appendDigits appends v, 0 <= v < 10^n, in n digits.
func appendDigits(dst []byte, v, n int) []byte {
	var buf [9]byte
	for i := n - 1; i >= 0; i-- {
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, buf[:n]...)
}

// appendRaw writes a JSON value held as raw bytes as the generic path
// does: decoded into a generic tree (a repeated member's last value wins)
// and written canonically. The common case takes rawParser, without the
// tree.
func (w *eventWriter) appendRaw(dst []byte, raw []byte) ([]byte, error) {
	if out, ok := w.parseRaw(dst, raw); ok {
		return out, nil
	}
	return appendRawTree(dst, raw)
}

// parseRaw is appendRaw by rawParser alone, false when it cannot.
func (w *eventWriter) parseRaw(dst []byte, raw []byte) ([]byte, bool) {
	p, scr := rawParser{b: raw}, &w.raw
	scr.i = 0
	p.space(scr)
	if out, ok := p.value(dst, 0, scr); ok {
		if p.space(scr); scr.i == len(raw) {
			return out, true
		}
	}
	return dst, false
}

// appendRawTree is appendRaw through encoding/json's generic tree.
func appendRawTree(dst []byte, raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return dst, errSlowPath
	}
	if _, err := dec.Token(); err != io.EOF {
		return dst, errSlowPath
	}
	out, err := registry.AppendCanonicalTree(dst, tree)
	if err != nil {
		return dst, errSlowPath
	}
	return out, nil
}

// rawText writes rawValue(s) as appendRaw would, without computing it: a
// string holding a JSON object or array is that JSON (rawParser accepts
// only valid JSON, so what it reads needs no json.Valid first), any other
// string is a JSON string, written by registry.AppendCanonicalString.
func (w *eventWriter) rawText(dst []byte, s string) ([]byte, error) {
	if t := strings.TrimSpace(s); t != "" && (t[0] == '{' || t[0] == '[') {
		if out, ok := w.parseRaw(dst, []byte(t)); ok {
			return out, nil
		}
		if json.Valid([]byte(t)) {
			return appendRawTree(dst, []byte(t))
		}
	}
	return registry.AppendCanonicalString(dst, s), nil
}

// SealCanonical is the sealed trajectory of events given as their
// canonical bytes (AppendCanonicalEvent), in order, and its digest: the
// same as SealEvents of the events.
func SealCanonical(events [][]byte) ([]byte, string) {
	n := 2
	for _, e := range events {
		n += len(e) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, e := range events {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	out = append(out, ']')
	return out, registry.Digest(out)
}

// rawParser canonicalises the common raw JSON value without building a
// generic tree: strings, numbers, literals, arrays and objects with
// distinct member names without escapes. Anything else (an escape in a
// member name, invalid UTF-8, a repeated name, a number out of range,
// deep nesting, a syntax error) makes value report false, and appendRaw
// takes encoding/json's path, whose result it would otherwise equal. It
// accepts valid JSON only (FuzzRawParser holds it to both).
//
// A rawParser is never written to: the position is in the scratch, a
// parameter. Escape analysis does not tell one field from another, and a
// parser that changes, or holds the scratch, which is on the heap, would
// make b a copy of the string it views (rawText) instead of the string.
type rawParser struct {
	b []byte
}

// rawScratch is rawParser's memory between values: for each depth, the
// canonical member values of the object being read there and the members.
// Member names are offsets into the parsed bytes, so the scratch holds no
// reference to them.
type rawScratch struct {
	i       int // the position in the bytes
	bufs    [][]byte
	members [][]rawMember
	text    []byte // a string value with escapes, decoded
}

// rawMember is an object member: its name, b[nameStart:nameEnd], and its
// canonical value, a range of the object's buffer.
type rawMember struct {
	nameStart, nameEnd int
	start, end         int
}

func (p *rawParser) space(s *rawScratch) {
	for s.i < len(p.b) {
		switch p.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// str scans a string at s.i (its opening quote) and returns the offsets
// of its content.
func (p *rawParser) str(s *rawScratch) (int, int, bool) {
	start := s.i + 1
	ascii := true
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			if !ascii && !utf8.Valid(p.b[start:j]) {
				return 0, 0, false
			}
			s.i = j + 1
			return start, j, true
		case c == '\\' || c < 0x20:
			return 0, 0, false
		case c >= 0x80:
			ascii = false
		}
	}
	return 0, 0, false
}

// strValue appends the string value at s.i (its opening quote) as the
// generic tree writes it: decoded as encoding/json decodes it, escapes
// included (text in LLM messages nearly always has some), then written
// with AppendCanonicalString's escapes. Invalid UTF-8, which encoding/json
// replaces, is left to it.
func (p *rawParser) strValue(dst []byte, s *rawScratch) ([]byte, bool) {
	start := s.i + 1
	j := start
	ascii := true
	for ; j < len(p.b); j++ {
		c := p.b[j]
		if c == '"' || c == '\\' {
			break
		}
		if c < 0x20 {
			return dst, false
		}
		if c >= 0x80 {
			ascii = false
		}
	}
	if j < len(p.b) && p.b[j] == '"' {
		if !ascii && !utf8.Valid(p.b[start:j]) {
			return dst, false
		}
		s.i = j + 1
		return registry.AppendCanonicalBytes(dst, p.b[start:j]), true
	}
	t := append(s.text[:0], p.b[start:j]...)
	for j < len(p.b) {
		switch c := p.b[j]; {
		case c == '"':
			if !ascii && !utf8.Valid(p.b[start:j]) {
				return dst, false
			}
			s.i, s.text = j+1, t[:0]
			return registry.AppendCanonicalBytes(dst, t), true
		case c == '\\':
			if j+1 >= len(p.b) {
				return dst, false
			}
			switch e := p.b[j+1]; e {
			case '"', '\\', '/':
				t = append(t, e)
			case 'b':
				t = append(t, '\b')
			case 'f':
				t = append(t, '\f')
			case 'n':
				t = append(t, '\n')
			case 'r':
				t = append(t, '\r')
			case 't':
				t = append(t, '\t')
			case 'u':
				r := getu4(p.b[j:])
				if r < 0 {
					return dst, false
				}
				j += 6
				if utf16.IsSurrogate(r) {
					// encoding/json's reading of a pair, or of half of one.
					if dec := utf16.DecodeRune(r, getu4(p.b[j:])); dec != unicode.ReplacementChar {
						j += 6
						t = utf8.AppendRune(t, dec)
						continue
					}
					r = unicode.ReplacementChar
				}
				t = utf8.AppendRune(t, r)
				continue
			default:
				return dst, false
			}
			j += 2
		case c < 0x20:
			return dst, false
		default:
			if c >= 0x80 {
				ascii = false
			}
			t = append(t, c)
			j++
		}
	}
	return dst, false
}

// getu4 is the code point of the \uXXXX escape b starts with, or -1.
func getu4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// literal consumes word at s.i.
func (p *rawParser) literal(dst []byte, word string, s *rawScratch) ([]byte, bool) {
	if !bytes.HasPrefix(p.b[s.i:], []byte(word)) {
		return dst, false
	}
	s.i += len(word)
	return append(dst, word...), true
}

// number consumes the number at s.i and appends it in canonical form.
func (p *rawParser) number(dst []byte, s *rawScratch) ([]byte, bool) {
	start := s.i
	for s.i < len(p.b) {
		c := p.b[s.i]
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			break
		}
		s.i++
	}
	return appendNumber(dst, p.b[start:s.i])
}

// appendNumber appends the JSON number lit as
// registry.AppendCanonicalNumber does, false when that is an error.
func appendNumber(dst []byte, lit []byte) ([]byte, bool) {
	out, err := registry.AppendCanonicalNumber(dst, lit)
	return out, err == nil
}

func (p *rawParser) value(dst []byte, depth int, s *rawScratch) ([]byte, bool) {
	if s.i >= len(p.b) || depth > 64 {
		return dst, false
	}
	switch c := p.b[s.i]; {
	case c == '"':
		return p.strValue(dst, s)
	case c == 't':
		return p.literal(dst, "true", s)
	case c == 'f':
		return p.literal(dst, "false", s)
	case c == 'n':
		return p.literal(dst, "null", s)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(dst, s)
	case c == '[':
		s.i++
		dst = append(dst, '[')
		p.space(s)
		if s.i < len(p.b) && p.b[s.i] == ']' {
			s.i++
			return append(dst, ']'), true
		}
		for n := 0; ; n++ {
			if n > 0 {
				dst = append(dst, ',')
			}
			p.space(s)
			var ok bool
			if dst, ok = p.value(dst, depth+1, s); !ok {
				return dst, false
			}
			p.space(s)
			if s.i >= len(p.b) {
				return dst, false
			}
			switch p.b[s.i] {
			case ',':
				s.i++
				continue
			case ']':
				s.i++
				return append(dst, ']'), true
			}
			return dst, false
		}
	case c == '{':
		s.i++
		p.space(s)
		if s.i < len(p.b) && p.b[s.i] == '}' {
			s.i++
			return append(dst, "{}"...), true
		}
		return p.object(dst, depth, s)
	}
	return dst, false
}

// object reads the members of an object whose '{' and first spaces are
// read, and appends the object with its members sorted by name.
func (p *rawParser) object(dst []byte, depth int, s *rawScratch) ([]byte, bool) {
	for len(s.bufs) <= depth {
		s.bufs = append(s.bufs, nil)
		s.members = append(s.members, nil)
	}
	buf, members := s.bufs[depth][:0], s.members[depth][:0]
	defer func() { s.bufs[depth], s.members[depth] = buf[:0], members[:0] }()
	for {
		p.space(s)
		if s.i >= len(p.b) || p.b[s.i] != '"' {
			return dst, false
		}
		nameStart, nameEnd, ok := p.str(s)
		if !ok {
			return dst, false
		}
		p.space(s)
		if s.i >= len(p.b) || p.b[s.i] != ':' {
			return dst, false
		}
		s.i++
		p.space(s)
		start := len(buf)
		if buf, ok = p.value(buf, depth+1, s); !ok {
			return dst, false
		}
		members = append(members, rawMember{nameStart, nameEnd, start, len(buf)})
		p.space(s)
		if s.i >= len(p.b) {
			return dst, false
		}
		if p.b[s.i] == ',' {
			s.i++
			continue
		}
		if p.b[s.i] != '}' {
			return dst, false
		}
		s.i++
		break
	}
	b := p.b
	sortMembers(b, members)
	dst = append(dst, '{')
	for k, m := range members {
		if k > 0 {
			prev := members[k-1]
			if bytes.Equal(b[prev.nameStart:prev.nameEnd], b[m.nameStart:m.nameEnd]) {
				return dst, false // the last one wins: encoding/json's path says which
			}
			dst = append(dst, ',')
		}
		dst = registry.AppendCanonicalBytes(dst, b[m.nameStart:m.nameEnd])
		dst = append(dst, ':')
		dst = append(dst, buf[m.start:m.end]...)
	}
	return append(dst, '}'), true
}

// sortMembers sorts an object's members by name, their names in b: by
// insertion when they are few, by heapsort when not. It is not
// slices.SortFunc: for escape analysis, its comparison function could
// write to b, which then has to be a copy when it views a string
// (rawText).
func sortMembers(b []byte, ms []rawMember) {
	if len(ms) <= 12 {
		for i := 1; i < len(ms); i++ {
			for j := i; j > 0 && memberLess(b, ms[j], ms[j-1]); j-- {
				ms[j], ms[j-1] = ms[j-1], ms[j]
			}
		}
		return
	}
	for i := len(ms)/2 - 1; i >= 0; i-- {
		siftDown(b, ms, i, len(ms))
	}
	for end := len(ms) - 1; end > 0; end-- {
		ms[0], ms[end] = ms[end], ms[0]
		siftDown(b, ms, 0, end)
	}
}

// memberLess is registry.KeyLess of the names (not bytes.Compare,
// which, in assembly, is taken to write to its arguments).
func memberLess(b []byte, x, y rawMember) bool {
	return registry.KeyLess(b[x.nameStart:x.nameEnd], b[y.nameStart:y.nameEnd])
}

// siftDown restores the max-heap ms[:n] below root.
func siftDown(b []byte, ms []rawMember, root, n int) {
	for {
		child := 2*root + 1
		if child >= n {
			return
		}
		if child+1 < n && memberLess(b, ms[child], ms[child+1]) {
			child++
		}
		if !memberLess(b, ms[root], ms[child]) {
			return
		}
		ms[root], ms[child] = ms[child], ms[root]
		root = child
	}
}
