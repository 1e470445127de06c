package registry

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Paths name a value inside a JSON document: object members joined with
// ".", array elements as "[i]", and a member whose name is not a plain word
// (letters, digits, '_', '-') as ["name"] with the name JSON-quoted:
//
//	services.web.image   command[0]   env["A.B"]   meta["a b"][2]
//
// The same syntax names problems, diff changes and template pins.

// isPlain reports whether a member name is written bare in a path:
// [A-Za-z0-9_-]+. (A loop rather than a regexp: paths are built for every
// value of a document.)
func isPlain(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// field returns the path of member name of the value at parent.
func field(parent, name string) string {
	if isPlain(name) {
		if parent == "" {
			return name
		}
		return parent + "." + name
	}
	q, _ := json.Marshal(name) // a string always marshals
	return parent + "[" + string(q) + "]"
}

// index returns the path of element i of the array at parent.
func index(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// segment is one step of a parsed path: a member name or an array index.
type segment struct {
	key     string
	index   int
	isIndex bool
}

// parsePath splits a path written in the syntax above into its segments.
func parsePath(p string) ([]segment, error) {
	if p == "" {
		return nil, fmt.Errorf("empty path")
	}
	var segs []segment
	rest := p
	for rest != "" {
		if rest[0] == '[' {
			seg, n, err := parseBracket(rest, p)
			if err != nil {
				return nil, err
			}
			segs = append(segs, seg)
			rest = rest[n:]
			continue
		}
		if len(segs) > 0 {
			if rest[0] != '.' {
				return nil, fmt.Errorf("expected '.' or '[' at %q in path %q", rest, p)
			}
			rest = rest[1:]
		}
		end := strings.IndexAny(rest, ".[")
		if end < 0 {
			end = len(rest)
		}
		name := rest[:end]
		if !isPlain(name) {
			return nil, fmt.Errorf("bad member name %q in path %q; write it quoted as [\"...\"]", name, p)
		}
		segs = append(segs, segment{key: name})
		rest = rest[end:]
	}
	return segs, nil
}

// parseBracket reads one "[i]" or `["name"]` at the start of rest and
// returns it with the number of bytes it spans.
func parseBracket(rest, p string) (segment, int, error) {
	if strings.HasPrefix(rest, `["`) {
		// A quoted name may itself contain ']': decode the JSON string to
		// find its true end.
		dec := json.NewDecoder(strings.NewReader(rest[1:]))
		var name string
		if err := dec.Decode(&name); err != nil {
			return segment{}, 0, fmt.Errorf("bad quoted name in path %q", p)
		}
		n := int(dec.InputOffset()) + 1
		if n >= len(rest) || rest[n] != ']' {
			return segment{}, 0, fmt.Errorf("bad quoted name in path %q", p)
		}
		return segment{key: name}, n + 1, nil
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return segment{}, 0, fmt.Errorf("unclosed '[' in path %q", p)
	}
	inner := rest[1:end]
	i, err := strconv.Atoi(inner)
	if err != nil || i < 0 || strconv.Itoa(i) != inner {
		return segment{}, 0, fmt.Errorf("bad array index %q in path %q", inner, p)
	}
	return segment{index: i, isIndex: true}, end + 1, nil
}

// formatPath writes segments back in canonical path syntax.
func formatPath(segs []segment) string {
	p := ""
	for _, s := range segs {
		if s.isIndex {
			p = index(p, s.index)
		} else {
			p = field(p, s.key)
		}
	}
	return p
}
