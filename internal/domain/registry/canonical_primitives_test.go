package registry

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"testing"
)

// The primitives other writers of the canonical form call
// (AppendCanonicalString, AppendCanonicalBytes, PlainString,
// AppendCanonicalNumber, AppendCanonicalFloat, CompareKeys, KeyLess) are
// held here to CanonicalJSON and to the reference normalizeNumber.

// canonicalStringCases are strings whose canonical form is easy to get
// wrong: escapes, U+2028 and U+2029 (not escaped), HTML characters (not
// escaped), invalid UTF-8 (one U+FFFD a byte), a surrogate written in
// UTF-8, a truncated sequence, long plain runs (PlainString's words).
var canonicalStringCases = []string{
	"", "plain", "a\"b\\c", "\x00\x01\x1f\b\t\n\f\r\x7f", "é\u2028\u2029<>&", "end\\", "日本語 🙂",
	"\xff", "a\xffb\xfe", "\xe2\x82", "\xe2\x82\xac\xe2", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80",
	"0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcde\"", "01234567\x80", "0123456\n",
	"\u0080\u07ff\u0800\uffff\U00010000\U0010ffff",
}

func TestAppendCanonicalStringIsCanonicalJSON(t *testing.T) {
	check := func(s string) {
		t.Helper()
		whole, err := CanonicalJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendCanonicalString([]byte("x"), s); string(got) != "x"+string(whole) {
			t.Fatalf("AppendCanonicalString(%q) = %s, want x%s", s, got, whole)
		}
		if got := AppendCanonicalBytes([]byte("x"), []byte(s)); string(got) != "x"+string(whole) {
			t.Fatalf("AppendCanonicalBytes(%q) = %s, want x%s", s, got, whole)
		}
		plain := true
		for _, c := range []byte(s) {
			plain = plain && c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
		}
		if PlainString(s) != plain {
			t.Fatalf("PlainString(%q) = %v, want %v", s, !plain, plain)
		}
		if plain && string(whole) != `"`+s+`"` {
			t.Fatalf("plain %q written as %s", s, whole)
		}
	}
	for _, s := range canonicalStringCases {
		check(s)
	}
	r := rand.New(rand.NewPCG(31, 31))
	alphabet := []string{"a", "Z", " ", "\"", "\\", "\n", "\x00", "\x1f", "\x7f", "\x80", "\xff", "é", "\u2028", "🙂", "\xe2\x82"}
	for range 20000 {
		var b []byte
		for range r.IntN(24) {
			b = append(b, alphabet[r.IntN(len(alphabet))]...)
		}
		check(string(b))
	}
}

// TestPlainStringEveryByte: every byte at every position of a word and
// its tail.
func TestPlainStringEveryByte(t *testing.T) {
	for n := range 20 {
		for pos := range n {
			for c := range 256 {
				b := bytes.Repeat([]byte{'a'}, n)
				b[pos] = byte(c)
				want := c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
				if got := PlainString(string(b)); got != want {
					t.Fatalf("PlainString(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
}

// canonicalNumberCases are number literals and near misses.
var canonicalNumberCases = []string{
	"0", "-0", "0.0", "-0.0", "1", "-1", "1.50", "15e-1", "1E+3", "0.000120", "1e21", "1e-7", "100", "10.010",
	"123456789012345678901234567890.5", "1e400", "-1e400", "0.1e+400", "1e-400", "1e-401", "0e999999",
	"5e-324", "1.7976931348623157e308", "9007199254740993", "-9223372036854775808",
	"01", "1.", ".5", "-", "+1", "1e", "1e+", "--1", "1.5.5", "0x10", "1_000", "", " 1", "NaN", "Infinity",
}

func TestAppendCanonicalNumberIsCanonicalNumber(t *testing.T) {
	for _, n := range canonicalNumberCases {
		checkNumber(t, n)
	}
	// Every length around the fast path's bound of 300 characters.
	for n := 295; n <= 312; n++ {
		checkNumber(t, "9"+string(bytes.Repeat([]byte{'0'}, n-1)))
		checkNumber(t, "-0."+string(bytes.Repeat([]byte{'0'}, n-4))+"1")
	}
}

func checkNumber(t *testing.T, lit string) {
	t.Helper()
	want, wantErr := normalizeNumber(lit)
	got, err := AppendCanonicalNumber([]byte("x"), []byte(lit))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("AppendCanonicalNumber(%q): error %v, normalizeNumber's %v", lit, err, wantErr)
	}
	if err != nil {
		if string(got) != "x" || err.Error() != wantErr.Error() {
			t.Fatalf("AppendCanonicalNumber(%q) = %q, %v; want x and %v", lit, got, err, wantErr)
		}
		return
	}
	if string(got) != "x"+want {
		t.Fatalf("AppendCanonicalNumber(%q) = %s, want x%s", lit, got, want)
	}
}

func TestAppendCanonicalFloatIsCanonicalJSON(t *testing.T) {
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 0.1 + 0.2, 1e21, 1e20, 999999999999999900000, 1e-6, 1e-7,
		9.999999e-7, 5e-324, -5e-324, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 1 << 53, 1<<53 + 2,
		123456789.125, 1.5e300, -1e-9}
	r := rand.New(rand.NewPCG(7, 7))
	for range 20000 {
		floats = append(floats, math.Float64frombits(r.Uint64()), r.NormFloat64()*math.Pow(10, float64(r.IntN(80)-40)))
	}
	for _, f := range floats {
		got, err := AppendCanonicalFloat([]byte("x"), f)
		whole, wantErr := CanonicalJSON(f)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("AppendCanonicalFloat(%v): error %v, CanonicalJSON's %v", f, err, wantErr)
		}
		if err == nil && string(got) != "x"+string(whole) {
			t.Fatalf("AppendCanonicalFloat(%v) = %s, want x%s", f, got, whole)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got, err := AppendCanonicalFloat([]byte("x"), f); err == nil || string(got) != "x" {
			t.Errorf("AppendCanonicalFloat(%v) = %s, %v; want an error", f, got, err)
		}
	}
}

// TestCompareKeysIsTheMemberOrder: CanonicalJSON writes an object's members
// in CompareKeys's order, and KeyLess is that order for strings and bytes.
func TestCompareKeysIsTheMemberOrder(t *testing.T) {
	keys := []string{"", "a", "A", "_", "z", "Z", "é", "e", "\u2028", "🙂", "ab", "a\u0000", "\u007f", "\u0080", "10", "9"}
	m := map[string]any{}
	for i, k := range keys {
		m[k] = i
	}
	c, err := CanonicalJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	sorted := slices.Clone(keys)
	slices.SortFunc(sorted, CompareKeys)
	var want []byte
	want = append(want, '{')
	for i, k := range sorted {
		if i > 0 {
			want = append(want, ',')
		}
		want = AppendCanonicalString(want, k)
		want = append(want, ':')
		want = strconv.AppendInt(want, int64(m[k].(int)), 10)
	}
	want = append(want, '}')
	if !bytes.Equal(c, want) {
		t.Fatalf("CanonicalJSON = %s\nwant in CompareKeys's order %s", c, want)
	}
	if !sort.StringsAreSorted(sorted) {
		t.Fatalf("CompareKeys's order is not byte order: %q", sorted)
	}
	for _, a := range keys {
		for _, b := range keys {
			if KeyLess(a, b) != (CompareKeys(a, b) < 0) || KeyLess([]byte(a), []byte(b)) != (CompareKeys(a, b) < 0) {
				t.Fatalf("KeyLess(%q, %q) disagrees with CompareKeys", a, b)
			}
		}
	}
}

// FuzzCanonicalPrimitives holds the primitives to CanonicalJSON and to
// normalizeNumber on the fuzzer's strings and floats; make fuzz-canonical
// runs it for a bounded time.
func FuzzCanonicalPrimitives(f *testing.F) {
	for _, s := range canonicalStringCases {
		f.Add(s, 0.0)
	}
	for _, n := range canonicalNumberCases {
		x, _ := strconv.ParseFloat(n, 64)
		f.Add(n, x)
	}
	f.Add("1e21", 1e21)
	f.Add("-0", math.Copysign(0, -1))
	f.Fuzz(func(t *testing.T, s string, x float64) {
		whole, err := CanonicalJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendCanonicalString(nil, s); !bytes.Equal(got, whole) {
			t.Fatalf("AppendCanonicalString(%q) = %s, want %s", s, got, whole)
		}
		if got := AppendCanonicalBytes(nil, []byte(s)); !bytes.Equal(got, whole) {
			t.Fatalf("AppendCanonicalBytes(%q) = %s, want %s", s, got, whole)
		}
		if !json.Valid(whole) {
			t.Fatalf("canonical string %q is not JSON", whole)
		}
		checkNumber(t, s)
		got, err := AppendCanonicalFloat(nil, x)
		want, wantErr := CanonicalJSON(x)
		if (err != nil) != (wantErr != nil) || (err == nil && !bytes.Equal(got, want)) {
			t.Fatalf("AppendCanonicalFloat(%v) = %s, %v; CanonicalJSON %s, %v", x, got, err, want, wantErr)
		}
	})
}
