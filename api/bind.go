package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"svc/internal/platform/derrors"
)

// Validator is implemented by request types that check themselves once
// decoded. Bind calls Validate; an error that wraps no derrors sentinel is
// answered as 400 with its text, so write it for the client.
type Validator interface {
	Validate() error
}

// jsonSpace is JSON's whitespace (RFC 8259 §2), narrower than unicode.IsSpace.
const jsonSpace = " \t\r\n"

// Bind decodes the request body strictly into v, a pointer to the typed
// request. Every refusal tells the client what to fix:
//   - an empty body, a literal null, JSON nested deeper than MaxJSONDepth
//     (checked before anything decodes it), malformed JSON (with the byte
//     offset), a value of the wrong type (naming the field), an unknown
//     field (naming it), or data after the JSON value: 400 BAD_REQUEST;
//   - a body past the server's limit: 413 PAYLOAD_TOO_LARGE;
//   - a Content-Type other than JSON: 415.
//
// When v implements Validator, Bind also calls Validate.
func Bind(c echo.Context, v any) error {
	if err := requireJSON(c.Request()); err != nil {
		return err
	}
	body, err := readBody(c.Request())
	if err != nil {
		return err
	}
	trimmed := bytes.Trim(body, jsonSpace)
	if len(trimmed) == 0 {
		return publicError(derrors.ErrInvalid, nil, "the request body is empty; send a JSON object")
	}
	if string(trimmed) == "null" {
		return publicError(derrors.ErrInvalid, nil, "the request body is null; send a JSON object")
	}

	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, len(body))
	}
	end := int(dec.InputOffset())
	if rest := bytes.TrimLeft(body[end:], jsonSpace); len(rest) > 0 {
		off := len(body) - len(rest)
		return publicError(derrors.ErrInvalid, map[string]any{"offset": off},
			"unexpected data after the JSON value at byte offset %d; send exactly one JSON value", off)
	}

	if val, ok := v.(Validator); ok {
		if err := val.Validate(); err != nil {
			if hasSentinel(err) {
				return err
			}
			return fmt.Errorf("%w: %w", derrors.ErrInvalid, err)
		}
	}
	return nil
}

// requireJSON refuses bodies declared as anything but JSON. Browsers send
// text/plain, form and multipart bodies cross-site without a CORS preflight;
// refusing them means a web page cannot drive the API (notably the dev
// principal on 127.0.0.1) with a forged request. A missing Content-Type is
// accepted: browsers always set one on such requests.
func requireJSON(req *http.Request) error {
	ct := req.Header.Get(echo.HeaderContentType)
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))) {
		return nil
	}
	return echo.NewHTTPError(http.StatusUnsupportedMediaType,
		fmt.Sprintf("Content-Type %q is not JSON; send the body with Content-Type: application/json", ct))
}

// maxPreallocate bounds the buffer readBody allocates on a request's
// Content-Length before reading it.
const maxPreallocate = 4 << 20

// readBody reads the whole of a JSON body (limitBody has already capped
// it) and refuses one nested deeper than MaxJSONDepth. Bind and the routes
// that decode their JSON body themselves (registrations, the web view's
// token exchange) read through it.
func readBody(req *http.Request) ([]byte, error) {
	body, err := readBodyInto(req, nil)
	if err != nil {
		return nil, err
	}
	if err := checkDepth(body); err != nil {
		return nil, err
	}
	return body, nil
}

// MaxJSONDepth is the deepest nesting of objects and arrays a JSON body
// may have, the bound registry specs have (registry/decode.go). Real
// bodies are a few levels deep; a body nested a thousand levels would
// reach limits further in (the store's JSON functions, canonical forms)
// and fail there as a server error.
const MaxJSONDepth = 64

// checkDepth refuses body when its objects and arrays nest deeper than
// MaxJSONDepth, naming the byte offset where the limit is passed. It skips
// strings and leaves every other fault to the decoder.
func checkDepth(body []byte) error {
	depth := 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '"':
			for i++; i < len(body) && body[i] != '"'; i++ {
				if body[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			if depth++; depth > MaxJSONDepth {
				return publicError(derrors.ErrInvalid, map[string]any{"offset": i, "maxDepth": MaxJSONDepth},
					"the JSON body is nested deeper than %d levels (objects and arrays) at byte offset %d; send a flatter document", MaxJSONDepth, i)
			}
		case ']', '}':
			depth--
		}
	}
	return nil
}

// readBodyInto is readBody reading into dst's storage when it is large
// enough.
func readBodyInto(req *http.Request, dst []byte) ([]byte, error) {
	if req.Body == nil {
		return nil, nil
	}
	// A body that says its length is read into one buffer of that size
	// (up to maxPreallocate: the length is the client's word) rather
	// than one that doubles as it fills.
	if need := int(min(max(req.ContentLength, 0), maxPreallocate)) + bytes.MinRead; cap(dst) < need {
		dst = make([]byte, 0, need)
	}
	buf := bytes.NewBuffer(dst[:0])
	_, err := buf.ReadFrom(req.Body)
	body := buf.Bytes()
	var maxBytes *http.MaxBytesError
	switch {
	case err == nil:
		return body, nil
	case errors.As(err, &maxBytes):
		return nil, tooLarge(maxBytes.Limit)
	case errors.Is(err, io.ErrUnexpectedEOF):
		// A chunked body cut off by the client.
		return nil, publicError(derrors.ErrInvalid, nil, "the request body ended early; send the complete body")
	default:
		return nil, fmt.Errorf("api.Bind: reading the request body: %w", err)
	}
}

// decodeError words a decoding failure of a body of n bytes.
func decodeError(err error, n int) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var invalid *json.InvalidUnmarshalError
	switch {
	case errors.As(err, &syntax):
		return publicError(derrors.ErrInvalid, map[string]any{"offset": syntax.Offset},
			"malformed JSON at byte offset %d: %s; send valid JSON", syntax.Offset, syntax.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return publicError(derrors.ErrInvalid, map[string]any{"offset": n},
			"malformed JSON: the body ends at byte offset %d before the JSON value is complete; send valid JSON", n)
	case errors.As(err, &typ):
		want := jsonKind(typ.Type)
		if typ.Field == "" {
			return publicError(derrors.ErrInvalid, map[string]any{"offset": typ.Offset},
				"the request body must be a JSON %s, not %s", want, typ.Value)
		}
		if typ.Offset == 0 {
			// No field starts the body: a field type's own UnmarshalJSON
			// reported it and could not know where its value began.
			return publicError(derrors.ErrInvalid, map[string]any{"field": typ.Field},
				"field %q must be a JSON %s, not %s", typ.Field, want, typ.Value)
		}
		return publicError(derrors.ErrInvalid, map[string]any{"field": typ.Field, "offset": typ.Offset},
			"field %q must be a JSON %s, not %s (byte offset %d)", typ.Field, want, typ.Value, typ.Offset)
	case errors.As(err, &invalid):
		// v is not a pointer: the handler's bug, not the client's.
		return fmt.Errorf("api.Bind: %w", err)
	}
	// encoding/json reports an unknown field only as text ("json: unknown
	// field \"x\""), with no type to match; its wording has been stable since
	// Go 1.10 and a change would only lose the field name, not the 400.
	if rest, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field, uerr := strconv.Unquote(rest)
		if uerr != nil {
			field = rest
		}
		return publicError(derrors.ErrInvalid, map[string]any{"field": field},
			"unknown field %q; remove it (the accepted fields are in /openapi.json)", field)
	}
	if hasSentinel(err) {
		// A field type's own UnmarshalJSON that already said what is wrong.
		return err
	}
	// Any other failure comes from a field type's UnmarshalJSON (a time that
	// does not parse, say): still the body's fault.
	return publicError(derrors.ErrInvalid, nil, "invalid value in the request body: %v", err)
}

// hasSentinel reports whether err already maps to a status of its own.
func hasSentinel(err error) bool {
	for _, k := range errorKinds {
		if k.sentinel != nil && errors.Is(err, k.sentinel) {
			return true
		}
	}
	return false
}

// jsonKind names a Go type by the JSON type a client must send for it.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return "value"
}
