package traces

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"svc/eval"
	"svc/registry"
)

// The ledger's digests are over registry.CanonicalJSON of the events
// array, which marshals the events with encoding/json, decodes the result
// into a generic tree and writes the tree canonically. The canonical form
// of an array is '[' + its elements' canonical forms joined by ',' + ']',
// so a trajectory can be sealed from each event's canonical bytes, computed
// once when the span arrives. eventWriter writes those bytes straight from
// a TraceEvent, byte for byte what the generic path writes for it (a
// differential fuzz test holds it to that); for anything it does not
// handle it reports errSlowPath and the caller takes the generic path.

// errSlowPath says the fast writer cannot write an event itself.
var errSlowPath = errors.New("traces: event needs the generic canonical path")

// float53 bounds the integers a float64 holds exactly.
const float53 = 1 << 53

// eventWriter writes one event's canonical bytes. stored selects what the
// bytes are the canonical form of: the event itself (false), or the event
// after a trip through its stored JSON, json.Marshal then json.Unmarshal
// into a TraceEvent (true), where every number among the attributes comes
// back a float64. The pending-span ledger sealed events after that trip,
// so its digests are of the second form.
type eventWriter struct {
	stored bool
	keys   []string // scratch for sorting map keys
}

// AppendCanonicalEvent appends the canonical JSON of e, as it is an
// element of registry.CanonicalJSON([]eval.TraceEvent{..., e, ...}).
func AppendCanonicalEvent(dst []byte, e *eval.TraceEvent) ([]byte, error) {
	w := eventWriter{}
	return w.event(dst, e)
}

// AppendCanonicalStoredEvent appends the canonical JSON of e as a
// pending span's event: that of e after json.Marshal and json.Unmarshal
// into a TraceEvent, which is how spans stored by earlier versions are
// read back when their trajectory is sealed.
func AppendCanonicalStoredEvent(dst []byte, e *eval.TraceEvent) ([]byte, error) {
	w := eventWriter{stored: true}
	return w.event(dst, e)
}

// event appends e's canonical bytes, or falls back to the generic path.
func (w *eventWriter) event(dst []byte, e *eval.TraceEvent) ([]byte, error) {
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
func (w *eventWriter) slow(dst []byte, e *eval.TraceEvent) ([]byte, error) {
	x := *e
	if w.stored {
		raw, err := json.Marshal(e)
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
func (w *eventWriter) fast(dst []byte, e *eval.TraceEvent) ([]byte, error) {
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
			dst = appendString(dst, v)
		}
	}
	if len(e.Attributes) > 0 {
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
	if e.EndTime != nil {
		member("endTime")
		if dst, err = appendTime(dst, *e.EndTime); err != nil {
			return dst, err
		}
	}
	if len(e.Input) > 0 {
		member("input")
		if dst, err = appendRaw(dst, e.Input); err != nil {
			return dst, err
		}
	}
	if e.InputTokens != 0 {
		member("inputTokens")
		dst = strconv.AppendInt(dst, e.InputTokens, 10)
	}
	member("kind")
	dst = appendString(dst, e.Kind)
	str("mediaType", e.MediaType)
	str("message", e.Message)
	str("model", e.Model)
	str("name", e.Name)
	if len(e.Output) > 0 {
		member("output")
		if dst, err = appendRaw(dst, e.Output); err != nil {
			return dst, err
		}
	}
	if e.OutputTokens != 0 {
		member("outputTokens")
		dst = strconv.AppendInt(dst, e.OutputTokens, 10)
	}
	str("ref", e.Ref)
	str("role", e.Role)
	if e.StartTime != nil {
		member("startTime")
		if dst, err = appendTime(dst, *e.StartTime); err != nil {
			return dst, err
		}
	}
	if e.TS != nil {
		member("ts")
		if dst, err = appendTime(dst, *e.TS); err != nil {
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
		return appendString(dst, x), nil
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

// object appends a map with its members sorted by name.
func (w *eventWriter) object(dst []byte, m map[string]any, depth int) ([]byte, error) {
	mark := len(w.keys)
	for k := range m {
		if !utf8.ValidString(k) {
			// encoding/json would replace the invalid bytes, and two
			// names could then collide.
			w.keys = w.keys[:mark]
			return dst, errSlowPath
		}
		w.keys = append(w.keys, k)
	}
	keys := w.keys[mark:]
	slices.Sort(keys)
	dst = append(dst, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = registry.AppendCanonicalString(dst, k)
		dst = append(dst, ':')
		if dst, err = w.value(dst, m[k], depth+1); err != nil {
			break
		}
	}
	w.keys = w.keys[:mark]
	if err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// appendString writes s as encoding/json then the canonical writer do:
// each byte of invalid UTF-8 becomes U+FFFD.
func appendString(dst []byte, s string) []byte {
	if !utf8.ValidString(s) {
		var b []byte
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
		}
		s = string(b)
	}
	return registry.AppendCanonicalString(dst, s)
}

// appendFloat writes f as encoding/json writes a float64, normalised.
func appendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, errSlowPath // encoding/json refuses them; let it say so
	}
	if f == 0 {
		return append(dst, '0'), nil // "-0" too
	}
	if abs := math.Abs(f); abs >= 1e-6 && abs < 1e21 {
		// 'f' with the shortest digits has no exponent, no leading
		// zeros and no trailing fractional zeros: already normal.
		return strconv.AppendFloat(dst, f, 'f', -1, 64), nil
	}
	var buf [32]byte
	lit := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	n, err := registry.CanonicalNumber(string(lit))
	if err != nil {
		return dst, errSlowPath
	}
	return append(dst, n...), nil
}

// appendTime writes t as time.Time's MarshalJSON does.
func appendTime(dst []byte, t time.Time) ([]byte, error) {
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

// appendRaw writes a JSON value held as raw bytes as the generic path
// does: decoded into a generic tree (a repeated member's last value wins)
// and written canonically. The common case takes rawParser, without the
// tree.
func appendRaw(dst []byte, raw json.RawMessage) ([]byte, error) {
	p := rawParser{b: raw}
	p.space()
	if out, ok := p.value(dst, 0); ok {
		if p.space(); p.i == len(raw) {
			return out, nil
		}
	}
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
// generic tree: strings without escapes, numbers, literals, arrays and
// objects with distinct member names. Anything else (an escape, invalid
// UTF-8, a repeated name, a number out of range, deep nesting, a syntax
// error) makes value report false, and appendRaw takes encoding/json's
// path, whose result it would otherwise equal.
type rawParser struct {
	b []byte
	i int
}

func (p *rawParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// str scans a string at p.i (its opening quote) and returns its content.
func (p *rawParser) str() ([]byte, bool) {
	start := p.i + 1
	ascii := true
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			s := p.b[start:j]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			p.i = j + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// literal consumes word at p.i.
func (p *rawParser) literal(dst []byte, word string) ([]byte, bool) {
	if !bytes.HasPrefix(p.b[p.i:], []byte(word)) {
		return dst, false
	}
	p.i += len(word)
	return append(dst, word...), true
}

// rawMember is an object member: its name and canonical value, a range
// of the object's buffer.
type rawMember struct {
	name       []byte
	start, end int
}

func (p *rawParser) value(dst []byte, depth int) ([]byte, bool) {
	if p.i >= len(p.b) || depth > 64 {
		return dst, false
	}
	switch c := p.b[p.i]; {
	case c == '"':
		s, ok := p.str()
		if !ok {
			return dst, false
		}
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"'), true
	case c == 't':
		return p.literal(dst, "true")
	case c == 'f':
		return p.literal(dst, "false")
	case c == 'n':
		return p.literal(dst, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.i
		for p.i < len(p.b) {
			c := p.b[p.i]
			if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
				break
			}
			p.i++
		}
		n, err := registry.CanonicalNumber(string(p.b[start:p.i]))
		if err != nil {
			return dst, false
		}
		return append(dst, n...), true
	case c == '[':
		p.i++
		dst = append(dst, '[')
		p.space()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return append(dst, ']'), true
		}
		for n := 0; ; n++ {
			if n > 0 {
				dst = append(dst, ',')
			}
			p.space()
			var ok bool
			if dst, ok = p.value(dst, depth+1); !ok {
				return dst, false
			}
			p.space()
			if p.i >= len(p.b) {
				return dst, false
			}
			switch p.b[p.i] {
			case ',':
				p.i++
				continue
			case ']':
				p.i++
				return append(dst, ']'), true
			}
			return dst, false
		}
	case c == '{':
		p.i++
		p.space()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return append(dst, "{}"...), true
		}
		var members []rawMember
		var buf []byte
		for {
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != '"' {
				return dst, false
			}
			name, ok := p.str()
			if !ok {
				return dst, false
			}
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return dst, false
			}
			p.i++
			p.space()
			start := len(buf)
			if buf, ok = p.value(buf, depth+1); !ok {
				return dst, false
			}
			members = append(members, rawMember{name, start, len(buf)})
			p.space()
			if p.i >= len(p.b) {
				return dst, false
			}
			if p.b[p.i] == ',' {
				p.i++
				continue
			}
			if p.b[p.i] != '}' {
				return dst, false
			}
			p.i++
			break
		}
		slices.SortFunc(members, func(a, b rawMember) int { return bytes.Compare(a.name, b.name) })
		dst = append(dst, '{')
		for k, m := range members {
			if k > 0 {
				if bytes.Equal(members[k-1].name, m.name) {
					return dst, false // the last one wins: encoding/json's path says which
				}
				dst = append(dst, ',')
			}
			dst = append(dst, '"')
			dst = append(dst, m.name...)
			dst = append(dst, '"', ':')
			dst = append(dst, buf[m.start:m.end]...)
		}
		return append(dst, '}'), true
	}
	return dst, false
}
