package trace

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// referenceCanonical is the element of registry.CanonicalJSON of a
// one-event array: what a sealed trajectory held for e before issue 16.
// stored applies the pending ledger's trip through JSON first.
func referenceCanonical(t *testing.T, e eval.TraceEvent, stored bool) ([]byte, error) {
	t.Helper()
	if stored {
		raw, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		e = eval.TraceEvent{}
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("Unmarshal(%s): %v", raw, err)
		}
	}
	c, err := registry.CanonicalJSON([]eval.TraceEvent{e})
	if err != nil {
		return nil, err
	}
	return c[1 : len(c)-1], nil
}

// checkSame holds the fast writer to the reference, in both forms, and
// SealEvents to registry.CanonicalJSON.
func checkSame(t *testing.T, e eval.TraceEvent) {
	t.Helper()
	for _, stored := range []bool{false, true} {
		want, wantErr := referenceCanonical(t, e, stored)
		var got []byte
		var err error
		if stored {
			got, err = AppendCanonicalStoredEvent(nil, &e)
		} else {
			got, err = AppendCanonicalEvent(nil, &e)
		}
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("stored=%v: error %v, reference error %v (event %#v)", stored, err, wantErr, e)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("stored=%v:\n got %s\nwant %s\n(event %#v)", stored, got, want, e)
		}
		if wantErr == nil && !stored {
			sealed, _, err := SealEvents([]eval.TraceEvent{e, e})
			ref, _ := registry.CanonicalJSON([]eval.TraceEvent{e, e})
			if err != nil || !bytes.Equal(sealed, ref) {
				t.Fatalf("SealEvents = %s, %v; want %s", sealed, err, ref)
			}
		}
	}
}

func TestCanonicalEventCases(t *testing.T) {
	ts := time.Date(2026, 5, 1, 10, 0, 0, 123456000, time.UTC)
	zone := time.Date(2026, 5, 1, 10, 0, 0, 0, time.FixedZone("x", 3600+30*60))
	for _, e := range []eval.TraceEvent{
		{},
		{Kind: "span", Name: "x"},
		{Kind: eval.EventLLMCall, TS: &ts, Model: "gpt-4o", InputTokens: 812, OutputTokens: -3, CostUSD: 0.0031, DurationMs: 1e-7,
			Input: json.RawMessage(` [ {"b" : 1.50, "a": 15e-1, "a": -0, "c": "<&>\u2028"} ] `), Output: json.RawMessage(`null`)},
		{Kind: "span", StartTime: &ts, EndTime: &zone, Attributes: map[string]any{
			"big": int64(math.MaxInt64), "b53": int64(1<<53 + 1), "neg": int64(-1<<53 - 3), "f": 1.5e300, "g": -1e-9, "h": 1e21, "i": 123456789.125,
			"s": "a\"b\\c\x00\x1f\u2028<>&é", "bad\xffkey": 1.0, "nest": map[string]any{"z": []any{nil, true, false, []any{}, map[string]any{}}},
			"nils": []any(nil), "nilm": map[string]any(nil), "n": json.Number("1.50"), "int": 7,
		}},
		{Kind: "message", Role: "user", Content: "bad \xff\xfe utf8 \xe2\x82", Message: "m", Code: "C", Ref: "r", MediaType: "t"},
		{Kind: "x", CostUSD: math.NaN()},
		{Kind: "x", Input: json.RawMessage(`{"a":1} trailing`)},
		{Kind: "x", Input: json.RawMessage(`"\ud800 lone \u00e9"`)},
		{Kind: "x", Input: json.RawMessage(`{"b":{"d":1E2,"c":[true,false,null, -0.0e5]},"a":"é","":{ }, "e":[ ]}`), Output: json.RawMessage(`"a\"b"`)},
		{Kind: "x", Input: json.RawMessage("{\"a\":\"\xff\"}"), Output: json.RawMessage(`1e999`)},
		{Kind: "x", Input: json.RawMessage(`[1,]`)},
		{Kind: "x", Attributes: map[string]any{"a": math.Inf(1)}},
		{Kind: "x", Attributes: map[string]any{"k\xff": 1.0, "k\xfe": 2.0, "k\xf0z": 3.0, "k\xefz": 4.0, "k\uFFFD\uFFFD": 5.0, "k\xff\xff": 6.0}},
		{Kind: "x", TS: func() *time.Time { t := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC); return &t }()},
	} {
		checkSame(t, e)
	}
}

// TestCanonicalEventRandom compares the fast writer with the reference on
// many random events of the shapes Normalize and ParseTrace produce.
func TestCanonicalEventRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 16))
	for range 3000 {
		checkSame(t, randomEvent(r, nil))
	}
}

// FuzzCanonicalEvent is the differential fuzz test of the fast writer
// against registry.CanonicalJSON, on events built from the fuzzer's input.
// Its committed corpus (testdata/fuzz/FuzzCanonicalEvent, written by
// TestWriteCanonicalEventCorpus) runs with every go test; make test fuzzes
// it for a bounded time (make fuzz-canonical):
//
//	go test -run '^$' -fuzz '^FuzzCanonicalEvent$' -fuzztime 30s ./internal/domain/trace
func FuzzCanonicalEvent(f *testing.F) {
	f.Add(uint64(1), "chat", `{"a":[1,2.50,"x"]}`, int64(1<<60), 0.1)
	f.Add(uint64(2), "\xff\u2028", `"\ud83d\ude00"`, int64(-7), 1e-300)
	f.Add(uint64(3), "", `[1e400]`, int64(0), math.Copysign(0, -1))
	f.Add(uint64(4), "a", `{"z":{"b":1,"a":[{"y":2,"x":"é"}]},"b":2,"b":3}`, int64(1<<53+1), 1e21)
	f.Fuzz(func(t *testing.T, seed uint64, s, raw string, n int64, x float64) {
		r := rand.New(rand.NewPCG(seed, seed>>7))
		e := randomEvent(r, &fuzzInput{s, raw, n, x})
		checkSame(t, e)
	})
}

type fuzzInput struct {
	s, raw string
	n      int64
	x      float64
}

func randomEvent(r *rand.Rand, in *fuzzInput) eval.TraceEvent {
	str := func() string {
		if in != nil && r.IntN(2) == 0 {
			return in.s
		}
		return []string{"", "chat", "tool <x>", "é\u2028\"\\\n", "\x01", "span"}[r.IntN(6)]
	}
	num := func() any {
		switch r.IntN(6) {
		case 0:
			if in != nil {
				return in.n
			}
			return r.Int64()
		case 1:
			if in != nil {
				return in.x
			}
			return r.NormFloat64() * math.Pow(10, float64(r.IntN(60)-30))
		case 2:
			return int64(r.IntN(2000) - 1000)
		case 3:
			return float64(r.IntN(1000)) / 8
		case 4:
			return r.Int64N(1<<54) - 1<<53
		}
		return math.Float64frombits(r.Uint64())
	}
	var value func(depth int) any
	value = func(depth int) any {
		switch k := r.IntN(8); {
		case k < 3 || depth > 3:
			if r.IntN(2) == 0 {
				return str()
			}
			return num()
		case k == 3:
			return r.IntN(2) == 0
		case k == 4:
			return nil
		case k == 5:
			a := []any{}
			for range r.IntN(4) {
				a = append(a, value(depth+1))
			}
			return a
		default:
			m := map[string]any{}
			for range r.IntN(4) {
				m[str()] = value(depth + 1)
			}
			return m
		}
	}
	raws := []string{`{"role":"user","content":"what is the OTLP door?"}`, `[1, 2.50, {"b":1,"a":2}]`, `"text"`, `null`, `12e3`,
		`{"a":1,"a":2}`, ` { "k" : [ -1.5E-3 , "é" ] } `, `"esc\"aped"`, `[{"x":{}},[]]`}
	rawv := func() json.RawMessage {
		if in != nil && r.IntN(2) == 0 {
			return json.RawMessage(in.raw)
		}
		if r.IntN(3) == 0 {
			return nil
		}
		return json.RawMessage(raws[r.IntN(len(raws))])
	}
	tm := func() *time.Time {
		if r.IntN(3) == 0 {
			return nil
		}
		t := time.Unix(0, r.Int64N(1<<62)).UTC()
		return &t
	}
	e := eval.TraceEvent{Kind: str(), Name: str(), Role: str(), Content: str(), Model: str(), Message: str(), Code: str(),
		Input: rawv(), Output: rawv(), TS: tm(), StartTime: tm(), EndTime: tm()}
	if r.IntN(2) == 0 {
		e.InputTokens, e.OutputTokens = r.Int64N(100000), r.Int64N(100)
	}
	if r.IntN(2) == 0 {
		e.CostUSD, e.DurationMs = float64(r.IntN(100000))/1e5, r.Float64()*1000
	}
	if r.IntN(4) != 0 {
		e.Attributes = map[string]any{}
		for range r.IntN(10) {
			e.Attributes[str()+str()] = value(0)
		}
		if r.IntN(16) == 0 {
			// Names that collide once encoding/json has replaced their
			// invalid bytes, and sort differently before and after: the
			// writer leaves such an event to the generic path.
			e.Attributes["k\xff\uFFFD"], e.Attributes["k\xfe\xf0"], e.Attributes["k\xefz"] = value(0), value(0), value(0)
		}
	}
	return e
}
