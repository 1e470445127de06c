package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// maxDepth bounds the nesting of a spec document. Specs are shallow; the
// free-form members (expected, meta, pins) get ample room, and the bound
// keeps a hostile body from driving deep recursion.
const maxDepth = 64

// treeError is a refusal found while reading a document, with its path.
type treeError struct {
	path string
	msg  string
}

// Error renders the refusal as "path: message".
func (e *treeError) Error() string { return Problem{Path: e.path, Message: e.msg}.String() }

// parseTree reads raw as exactly one JSON value into a generic tree: objects
// as map[string]any, arrays as []any, numbers as json.Number. Unlike
// encoding/json it refuses, naming the path: invalid UTF-8, duplicate object
// members (encoding/json silently keeps the last, so two readers could see
// two different specs behind one digest), NUL characters (PostgreSQL cannot
// store them in jsonb), numbers too long to normalise, nesting deeper than
// maxDepth, and data after the value.
func parseTree(raw []byte) (any, error) {
	if !utf8.Valid(raw) {
		return nil, &treeError{msg: "the document is not valid UTF-8"}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := parseValue(dec, "", 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &treeError{msg: fmt.Sprintf("unexpected data after the JSON value at byte offset %d; send exactly one JSON value", dec.InputOffset())}
	}
	return v, nil
}

// parseValue reads the next value of dec; path names it.
func parseValue(dec *json.Decoder, path string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, &treeError{path: path, msg: fmt.Sprintf("nested deeper than %d levels", maxDepth)}
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(err, dec)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := map[string]any{}
			for dec.More() {
				ktok, err := dec.Token()
				if err != nil {
					return nil, syntaxError(err, dec)
				}
				key, ok := ktok.(string)
				if !ok { // the decoder checks syntax; a non-string key cannot pass
					return nil, &treeError{path: path, msg: "object member names must be strings"}
				}
				kpath := field(path, key)
				if strings.IndexByte(key, 0) >= 0 {
					return nil, &treeError{path: kpath, msg: "member names must not contain NUL characters"}
				}
				if _, dup := obj[key]; dup {
					return nil, &treeError{path: kpath, msg: "duplicate member; send each member once"}
				}
				v, err := parseValue(dec, kpath, depth+1)
				if err != nil {
					return nil, err
				}
				obj[key] = v
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, syntaxError(err, dec)
			}
			return obj, nil
		case '[':
			arr := []any{}
			for i := 0; dec.More(); i++ {
				v, err := parseValue(dec, index(path, i), depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, syntaxError(err, dec)
			}
			return arr, nil
		}
		return nil, &treeError{path: path, msg: fmt.Sprintf("unexpected %q", t)}
	case string:
		if strings.IndexByte(t, 0) >= 0 {
			return nil, &treeError{path: path, msg: "must not contain NUL characters"}
		}
		return t, nil
	case json.Number:
		if _, err := normalizeNumber(string(t)); err != nil {
			return nil, &treeError{path: path, msg: err.Error()}
		}
		return t, nil
	default: // bool, nil
		return t, nil
	}
}

// syntaxError words a tokenizer failure with its byte offset.
func syntaxError(err error, dec *json.Decoder) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &treeError{msg: fmt.Sprintf("malformed JSON at byte offset %d: %v; send valid JSON", se.Offset, se)}
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return &treeError{msg: fmt.Sprintf("malformed JSON: the document ends at byte offset %d before the value is complete", dec.InputOffset())}
	}
	return &treeError{msg: fmt.Sprintf("malformed JSON: %v", err)}
}

// shaper is implemented by spec types with a custom JSON form (a union, a
// string-or-object): they check a generic tree against their own shape.
type shaper interface {
	checkShape(v any, path string, p *problems)
}

var (
	shaperType     = reflect.TypeFor[shaper]()
	numberType     = reflect.TypeFor[json.Number]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
)

// checkShape compares the generic tree v with the Go type t the document
// decodes into, recording every unknown member and every value of the wrong
// JSON type with its path. encoding/json's DisallowUnknownFields names
// neither the path nor more than the first problem, and matches member
// names case-insensitively; this check is exact. A null is accepted
// anywhere and means absent.
func checkShape(v any, t reflect.Type, path string, p *problems) {
	if v == nil {
		return
	}
	if reflect.PointerTo(t).Implements(shaperType) {
		reflect.New(t).Interface().(shaper).checkShape(v, path, p)
		return
	}
	switch t {
	case numberType:
		if _, ok := v.(json.Number); !ok {
			p.add(path, "must be a number, not %s", describe(v))
		}
		return
	case rawMessageType:
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		checkShape(v, t.Elem(), path, p)
	case reflect.Interface:
		// Free-form JSON (expected, meta, pins): anything goes.
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			p.add(path, "must be a JSON object, not %s", describe(v))
			return
		}
		fields := jsonFields(t)
		for _, k := range sortedKeys(obj) {
			ft, known := fields[k]
			if !known {
				p.add(field(path, k), "unknown field; remove it (accepted here: %s)", strings.Join(sortedKeys(fields), ", "))
				continue
			}
			checkShape(obj[k], ft, field(path, k), p)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			p.add(path, "must be a JSON object, not %s", describe(v))
			return
		}
		for _, k := range sortedKeys(obj) {
			checkShape(obj[k], t.Elem(), field(path, k), p)
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			p.add(path, "must be a JSON array, not %s", describe(v))
			return
		}
		for i, e := range arr {
			checkShape(e, t.Elem(), index(path, i), p)
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			p.add(path, "must be a string, not %s", describe(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			p.add(path, "must be true or false, not %s", describe(v))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			p.add(path, "must be an integer, not %s", describe(v))
			return
		}
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			p.add(path, "must be an integer between %d and %d, not %s", int64(-1)<<(t.Bits()-1), int64(1)<<(t.Bits()-1)-1, n)
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			p.add(path, "must be a number, not %s", describe(v))
			return
		}
		if f, err := strconv.ParseFloat(string(n), t.Bits()); err != nil || math.IsInf(f, 0) {
			p.add(path, "must be a number within the range of a double, not %s", n)
		}
	default:
		p.add(path, "cannot be decoded here") // a spec type this walk does not know: a bug
	}
}

// describe names the JSON type of a generic value, for messages.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// fieldCache memoises jsonFields per struct type.
var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields returns the JSON member names of struct type t with the Go
// type each decodes into, following encoding/json's rules for tags, "-",
// unexported fields and embedded structs.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range jsonFields(et) {
					if _, shadowed := fields[k]; !shadowed {
						fields[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	fieldCache.Store(t, fields)
	return fields
}

// sortedKeys returns the keys of m in byte order, so problems come out in
// a stable order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// decodeStrict decodes raw into v (a pointer to a spec type) after checking
// its shape, recording every problem in p. It reports whether v was filled.
func decodeStrict(raw []byte, v any, p *problems) bool {
	tree, err := parseTree(raw)
	if err != nil {
		var te *treeError
		if errors.As(err, &te) {
			p.add(te.path, "%s", te.msg)
		} else {
			p.add("", "%v", err)
		}
		return false
	}
	return decodeTree(raw, tree, v, p)
}

// decodeTree is decodeStrict for a document already parsed into tree.
func decodeTree(raw []byte, tree any, v any, p *problems) bool {
	if _, isObj := tree.(map[string]any); !isObj {
		p.add("", "the spec must be a JSON object, not %s", describe(tree))
		return false
	}
	checkShape(tree, reflect.TypeOf(v).Elem(), "", p)
	if !p.ok() {
		return false
	}
	if err := unmarshalStrict(raw, v); err != nil {
		// The shape check passed, so this is a custom type's own refusal.
		p.add("", "%v", err)
		return false
	}
	return true
}

// unmarshalStrict is json.Unmarshal with numbers kept as json.Number and
// unknown members refused.
func unmarshalStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
