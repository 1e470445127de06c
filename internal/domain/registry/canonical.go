package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"svc/internal/platform/derrors"
)

// CanonicalJSON encodes v deterministically, so that equal content always
// yields equal bytes and hence equal digests:
//   - object members sorted by name (byte order of UTF-8), each once;
//   - no insignificant whitespace;
//   - strings with only the escapes JSON requires (", \ and control
//     characters; \b \t \n \f \r short, others \u00xx), no HTML escaping;
//   - numbers in exact decimal normal form: no exponent, no leading zeros,
//     no trailing fractional zeros, "-0" as "0" (1.50, 15e-1 and 1.5 are
//     all 1.5). Never through float64, so no digit is lost; and a
//     PostgreSQL jsonb round trip of the document does not change it.
//
// v may be raw JSON ([]byte or json.RawMessage), which is parsed strictly
// (duplicate members are refused), or any value encoding/json marshals.
// Applying CanonicalJSON to its own output returns the same bytes.
func CanonicalJSON(v any) ([]byte, error) {
	var tree any
	switch x := v.(type) {
	case json.RawMessage:
		return canonicalRaw(x)
	case []byte:
		return canonicalRaw(x)
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("registry.CanonicalJSON: %w", err)
		}
		// encoding/json's own output is well formed and has unique
		// members, so the fast generic decoder is enough here.
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&tree); err != nil {
			return nil, fmt.Errorf("registry.CanonicalJSON: %w", err)
		}
	}
	var b bytes.Buffer
	if err := writeCanonical(&b, tree); err != nil {
		return nil, fmt.Errorf("registry.CanonicalJSON: %w", err)
	}
	return b.Bytes(), nil
}

// canonicalRaw canonicalises a raw JSON document.
func canonicalRaw(raw []byte) ([]byte, error) {
	tree, err := parseTree(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: canonical JSON: %v", derrors.ErrInvalid, err)
	}
	var b bytes.Buffer
	if err := writeCanonical(&b, tree); err != nil {
		return nil, fmt.Errorf("%w: canonical JSON: %v", derrors.ErrInvalid, err)
	}
	return b.Bytes(), nil
}

// writeCanonical writes a generic tree in canonical form.
func writeCanonical(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		writeString(b, x)
	case json.Number:
		n, err := normalizeNumber(string(x))
		if err != nil {
			return err
		}
		b.WriteString(n)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			if err := writeCanonical(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("unexpected %T in a JSON tree", v)
	}
	return nil
}

// writeString writes s as a JSON string with the minimal escapes.
func writeString(b *bytes.Buffer, s string) {
	b.Write(AppendCanonicalString(b.AvailableBuffer(), s))
}

// AppendCanonicalString appends s to dst as CanonicalJSON writes a string:
// quoted, with only the escapes JSON requires. s must be valid UTF-8 (as
// every string of a decoded document is); invalid bytes are copied as
// they are.
func AppendCanonicalString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		start = i + 1
		switch c {
		case '"':
			dst = append(dst, `\"`...)
		case '\\':
			dst = append(dst, `\\`...)
		case '\b':
			dst = append(dst, `\b`...)
		case '\t':
			dst = append(dst, `\t`...)
		case '\n':
			dst = append(dst, `\n`...)
		case '\f':
			dst = append(dst, `\f`...)
		case '\r':
			dst = append(dst, `\r`...)
		default:
			dst = append(dst, `\u00`...)
			dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
		}
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// CanonicalNumber is the JSON number literal s in the exact decimal
// normal form CanonicalJSON writes (1.50, 15e-1 and 1.5 are all 1.5).
func CanonicalNumber(s string) (string, error) { return normalizeNumber(s) }

// AppendCanonicalTree appends, as CanonicalJSON would write it, a tree
// decoded by encoding/json into an interface{} with UseNumber (nil, bool,
// string, json.Number, []any, map[string]any).
func AppendCanonicalTree(dst []byte, tree any) ([]byte, error) {
	b := bytes.NewBuffer(dst)
	if err := writeCanonical(b, tree); err != nil {
		return dst, fmt.Errorf("registry.AppendCanonicalTree: %w", err)
	}
	return b.Bytes(), nil
}

// maxNumberLen bounds a normalised number: enough for every float64 written
// out in full (about 330 characters), small enough that "1e999999" cannot
// turn a short document into a huge one.
const maxNumberLen = 400

// normalizeNumber rewrites a JSON number literal in exact decimal normal
// form (see CanonicalJSON).
func normalizeNumber(s string) (string, error) {
	bad := fmt.Errorf("%q is not a JSON number", s)
	neg := strings.HasPrefix(s, "-")
	rest := strings.TrimPrefix(s, "-")
	mant, expPart, hasExp := strings.Cut(strings.ToLower(rest), "e")
	intPart, frac, hasFrac := strings.Cut(mant, ".")
	if intPart == "" || !allDigits(intPart) || (hasFrac && (frac == "" || !allDigits(frac))) ||
		(len(intPart) > 1 && intPart[0] == '0') {
		return "", bad
	}
	if hasExp && !validExponent(expPart) {
		return "", bad
	}
	// Interoperable JSON (RFC 7493) keeps numbers within a double's range;
	// beyond it most readers see infinity.
	if f, err := strconv.ParseFloat(s, 64); err != nil && math.IsInf(f, 0) {
		return "", fmt.Errorf("number %q is out of range: beyond the range of a double", s)
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return "0", nil // zero, whatever its sign or exponent
	}
	exp := -len(frac)
	if hasExp {
		e, err := strconv.Atoi(expPart)
		if err != nil || e > maxNumberLen || e < -maxNumberLen {
			return "", fmt.Errorf("number %q is out of range; write it with at most %d digits", s, maxNumberLen)
		}
		exp += e
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	digits = trimmed

	var out string
	switch point := len(digits) + exp; {
	case exp >= 0:
		if len(digits)+exp > maxNumberLen {
			return "", fmt.Errorf("number %q is out of range; write it with at most %d digits", s, maxNumberLen)
		}
		out = digits + strings.Repeat("0", exp)
	case point > 0:
		out = digits[:point] + "." + digits[point:]
	default:
		if len(digits)-point > maxNumberLen {
			return "", fmt.Errorf("number %q is out of range; write it with at most %d digits", s, maxNumberLen)
		}
		out = "0." + strings.Repeat("0", -point) + digits
	}
	if neg {
		out = "-" + out
	}
	return out, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// validExponent reports whether e is the exponent of a JSON number
// (after the 'e'): an optional sign and at least one digit.
func validExponent(e string) bool {
	e = strings.TrimPrefix(strings.TrimPrefix(e, "+"), "-")
	return e != "" && allDigits(e)
}

// DigestPrefix starts every digest this package writes.
const DigestPrefix = "sha256:"

// Digest returns "sha256:<64 lowercase hex>" of canonical, the content
// identity kept on each version (store.EntityVersion.Digest).
func Digest(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return DigestPrefix + hex.EncodeToString(sum[:])
}

// CaseDigest returns the digest of one dataset case's canonical JSON, the
// per-case digest of store.DatasetCase and of a scorecard manifest's cases.
func CaseDigest(c EvalCase) (string, error) {
	canon, err := CanonicalJSON(c)
	if err != nil {
		return "", err
	}
	return Digest(canon), nil
}

// VerifyDigest reports whether stamp is the digest of canonical. The
// algorithm is read from the stamp (spec §2.8, §9.5): "sha256:<64 hex>", or
// a legacy bare 16-hex stamp, the first 16 hex digits of the sha256. Hex is
// compared without regard to case. A stamp of neither form is ErrInvalid.
func VerifyDigest(stamp string, canonical []byte) (bool, error) {
	sum := sha256.Sum256(canonical)
	full := hex.EncodeToString(sum[:])
	if h, ok := strings.CutPrefix(stamp, DigestPrefix); ok {
		if len(h) != 64 || !isHex(h) {
			return false, derrors.Invalidf("digest %q: want sha256: and 64 hex digits", stamp)
		}
		return strings.EqualFold(h, full), nil
	}
	if len(stamp) == 16 && isHex(stamp) {
		return strings.EqualFold(stamp, full[:16]), nil
	}
	return false, derrors.Invalidf("digest %q: want \"sha256:<64 hex>\" or a legacy 16-hex stamp", stamp)
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && len(s)%2 == 0
}
