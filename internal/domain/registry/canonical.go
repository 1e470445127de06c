package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

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
		slices.SortFunc(keys, CompareKeys)
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

// The pieces below are the canonical form's one definition: CanonicalJSON
// writes through them, and so does every writer that writes the same bytes
// without a generic tree (trace's event writer, which the differential
// fuzz test FuzzCanonicalEvent and its committed corpus hold to
// CanonicalJSON).

// AppendCanonicalString appends s to dst as CanonicalJSON writes a string:
// quoted, with only the escapes JSON requires (", \ and the control
// characters; \b \t \n \f \r short, the others \u00xx), nothing else
// escaped (not <, >, &, U+2028 or U+2029). Each byte of s that is not part
// of valid UTF-8 is written as U+FFFD, as encoding/json writes it, so that
// the string is CanonicalJSON(s) whatever s holds.
func AppendCanonicalString(dst []byte, s string) []byte {
	if PlainString(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	if !utf8.ValidString(s) {
		return AppendCanonicalString(dst, validUTF8(s))
	}
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

// validUTF8 is s with each byte that is not part of valid UTF-8 replaced
// by U+FFFD, one for each byte, as encoding/json replaces them (not
// strings.ToValidUTF8, which replaces a run with one).
func validUTF8(s string) string {
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

// AppendCanonicalBytes is AppendCanonicalString of string(b), without
// copying b: b is only read, and no reference to it is kept. b and dst
// must not overlap.
func AppendCanonicalBytes(dst, b []byte) []byte {
	if len(b) == 0 {
		return append(dst, '"', '"')
	}
	return AppendCanonicalString(dst, unsafe.String(&b[0], len(b)))
}

// Bytes repeated in a word, for PlainString.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// PlainString reports whether s is ASCII without a byte JSON escapes
// (control characters, '"' and '\\'): AppendCanonicalString writes such
// a string as it is, between quotes. It tests eight bytes at a time.
func PlainString(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// With every byte below 0x80, (v - ones*n) & ^v & highs is
		// nonzero exactly when some byte of v is below n.
		quote, backslash := x^(ones*'"'), x^(ones*'\\')
		if x&highs != 0 || (x-ones*0x20)&^x&highs != 0 ||
			(quote-ones)&^quote&highs != 0 || (backslash-ones)&^backslash&highs != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// CompareKeys is the order of an object's members in canonical JSON: by
// name, byte by byte of their UTF-8 (strings.Compare).
func CompareKeys(a, b string) int { return strings.Compare(a, b) }

// KeyLess reports whether a member named a comes before one named b in
// CompareKeys's order, for names held as strings or byte slices.
func KeyLess[S string | []byte](a, b S) bool { return string(a) < string(b) }

// CanonicalNumber is the JSON number literal s in the exact decimal
// normal form CanonicalJSON writes (1.50, 15e-1 and 1.5 are all 1.5).
func CanonicalNumber(s string) (string, error) { return normalizeNumber(s) }

// AppendCanonicalNumber appends the JSON number literal lit in
// CanonicalNumber's form, or returns CanonicalNumber's error with dst as
// it was. An integer or a decimal without exponent, short enough to be
// within a double's range and the normal form's length, is written here,
// without the string and the checks normalizeNumber makes (FuzzCanonicalNumber
// holds the two equal).
func AppendCanonicalNumber(dst, lit []byte) ([]byte, error) {
	// JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
	i := 0
	if i < len(lit) && lit[i] == '-' {
		i++
	}
	intStart := i
	for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
		i++
	}
	intEnd, fracEnd := i, i
	if i < len(lit) && lit[i] == '.' {
		i++
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
		}
		fracEnd = i
	}
	if i != len(lit) || len(lit) > 300 || intEnd == intStart || (lit[intStart] == '0' && intEnd-intStart > 1) ||
		fracEnd == intEnd+1 {
		// An exponent, a long or a malformed literal: the reference says.
		n, err := normalizeNumber(string(lit))
		if err != nil {
			return dst, err
		}
		return append(dst, n...), nil
	}
	// Trailing fractional zeros go, and the point with them when no
	// digit is left; zero, whatever its sign, is "0".
	end := fracEnd
	for end > intEnd+1 && lit[end-1] == '0' {
		end--
	}
	if end == intEnd+1 {
		end = intEnd
	}
	if lit[intStart] == '0' && end == intEnd {
		return append(dst, '0'), nil
	}
	return append(dst, lit[:end]...), nil
}

// AppendCanonicalFloat appends f as CanonicalJSON writes a float64: the
// literal encoding/json writes for it, in CanonicalNumber's form. NaN and
// the infinities, which encoding/json refuses, are an error.
func AppendCanonicalFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, fmt.Errorf("unsupported value: %v", f)
	}
	if f == 0 {
		return append(dst, '0'), nil // "-0" too
	}
	if abs := math.Abs(f); abs >= 1e-6 && abs < 1e21 {
		// encoding/json's 'f' with the shortest digits has no exponent,
		// no leading zeros and no trailing fractional zeros: already
		// the normal form.
		return strconv.AppendFloat(dst, f, 'f', -1, 64), nil
	}
	var buf [32]byte
	return AppendCanonicalNumber(dst, strconv.AppendFloat(buf[:0], f, 'e', -1, 64))
}

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
	bad := func() error { return fmt.Errorf("%q is not a JSON number", s) }
	neg := strings.HasPrefix(s, "-")
	rest := strings.TrimPrefix(s, "-")
	mant, expPart, hasExp := strings.Cut(strings.ToLower(rest), "e")
	intPart, frac, hasFrac := strings.Cut(mant, ".")
	if intPart == "" || !allDigits(intPart) || (hasFrac && (frac == "" || !allDigits(frac))) ||
		(len(intPart) > 1 && intPart[0] == '0') {
		return "", bad()
	}
	if hasExp && !validExponent(expPart) {
		return "", bad()
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
