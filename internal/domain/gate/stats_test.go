package gate

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"svc/internal/domain/eval"
	"testing"
)

// The references are written by testdata/gen_refs.py, which computes them
// in exact rational arithmetic with Python's standard library.

type fisherRef struct {
	Table     [4]int             `json:"table"`
	Source    string             `json:"source"`
	TwoSided  float64            `json:"twoSided"`
	Less      float64            `json:"less"`
	Greater   float64            `json:"greater"`
	Published map[string]float64 `json:"published"`
}

type bhRef struct {
	P      []float64 `json:"p"`
	Source string    `json:"source"`
	Q      []float64 `json:"q"`
	// Published is what the source reports: at level Alpha the procedure
	// rejects Rejected hypotheses.
	Published *struct {
		Alpha    float64 `json:"alpha"`
		Rejected int     `json:"rejected"`
	} `json:"published"`
}

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// near reports whether got is within a relative tol of want (absolute
// near zero).
func near(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*math.Max(math.Abs(want), 1e-300) || math.Abs(got-want) < 1e-300
}

// published reports whether got rounds to a published value given to as
// many significant digits as it is written with.
func matchesPublished(got, published float64) bool {
	digits := 0
	for s := published; digits < 12 && math.Abs(s-math.Round(s)) > 1e-9*math.Max(1, math.Abs(s)); s *= 10 {
		digits++
	}
	scale := math.Pow(10, float64(digits))
	return math.Round(got*scale) == math.Round(published*scale)
}

func TestFisherExactMatchesReferences(t *testing.T) {
	var refs []fisherRef
	readJSON(t, "fisher.json", &refs)
	if len(refs) < 50 {
		t.Fatalf("fisher.json holds %d tables; regenerate it with gen_refs.py", len(refs))
	}
	for _, r := range refs {
		a, b, c, d := r.Table[0], r.Table[1], r.Table[2], r.Table[3]
		two, less, greater := FisherExact(a, b, c, d)
		for _, v := range []struct {
			name      string
			got, want float64
		}{{"twoSided", two, r.TwoSided}, {"less", less, r.Less}, {"greater", greater, r.Greater}} {
			if !near(v.got, v.want, 1e-9) {
				t.Errorf("FisherExact%v (%s) %s = %.17g, want %.17g", r.Table, r.Source, v.name, v.got, v.want)
			}
		}
		for name, want := range r.Published {
			got := map[string]float64{"twoSided": two, "less": less, "greater": greater}[name]
			if !matchesPublished(got, want) {
				t.Errorf("FisherExact%v (%s) %s = %.10g, published %v", r.Table, r.Source, name, got, want)
			}
		}
	}
}

func TestFisherExactPublishedValues(t *testing.T) {
	// Written out here too, so the published values do not depend on the
	// generator: Fisher's tea tasting (R ?fisher.test), 17/35 and 17/70.
	two, less, greater := FisherExact(3, 1, 1, 3)
	if !near(two, 17.0/35, 1e-12) || !near(greater, 17.0/70, 1e-12) || !near(less, 69.0/70, 1e-12) {
		t.Errorf("tea tasting: got (%.10f, %.10f, %.10f), want (0.4857142857, 0.9857142857, 0.2428571429)", two, less, greater)
	}
	// R: fisher.test(Convictions, alternative = "less") p-value = 0.0004652.
	if _, less, _ := FisherExact(2, 10, 15, 3); !matchesPublished(less, 0.0004652) {
		t.Errorf("Convictions less = %.7g, want 0.0004652", less)
	}
}

func TestFisherExactEdges(t *testing.T) {
	tests := []struct {
		name       string
		table      [4]int
		two, l, gr float64
	}{
		{"empty", [4]int{0, 0, 0, 0}, 1, 1, 1},
		{"one column", [4]int{3, 0, 5, 0}, 1, 1, 1},
		{"one row", [4]int{3, 2, 0, 0}, 1, 1, 1},
		{"one trial a side, broke", [4]int{1, 0, 0, 1}, 1, 1, 0.5},
		{"three trials a side, broke", [4]int{3, 0, 0, 3}, 0.1, 1, 0.05},
	}
	for _, tt := range tests {
		two, l, gr := FisherExact(tt.table[0], tt.table[1], tt.table[2], tt.table[3])
		if !near(two, tt.two, 1e-12) || !near(l, tt.l, 1e-12) || !near(gr, tt.gr, 1e-12) {
			t.Errorf("%s: FisherExact%v = (%v, %v, %v), want (%v, %v, %v)", tt.name, tt.table, two, l, gr, tt.two, tt.l, tt.gr)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("FisherExact with a negative count did not panic")
		}
	}()
	FisherExact(-1, 0, 0, 0)
}

func TestBenjaminiHochbergMatchesReferences(t *testing.T) {
	var refs []bhRef
	readJSON(t, "bh.json", &refs)
	if len(refs) < 5 {
		t.Fatalf("bh.json holds %d vectors; regenerate it with gen_refs.py", len(refs))
	}
	for _, r := range refs {
		got := BenjaminiHochberg(r.P)
		if len(got) != len(r.Q) {
			t.Fatalf("%s: %d q-values for %d p-values", r.Source, len(got), len(r.P))
		}
		for i := range got {
			if !near(got[i], r.Q[i], 1e-12) {
				t.Errorf("%s: q[%d] = %.17g, want %.17g", r.Source, i, got[i], r.Q[i])
			}
		}
		if pub := r.Published; pub != nil {
			rejected := 0
			for _, q := range got {
				if q <= pub.Alpha {
					rejected++
				}
			}
			if rejected != pub.Rejected {
				t.Errorf("%s: %d q-values <= %v, published %d rejections", r.Source, rejected, pub.Alpha, pub.Rejected)
			}
		}
	}
}

func TestBenjaminiHochbergProperties(t *testing.T) {
	if got := BenjaminiHochberg(nil); got != nil {
		t.Errorf("BenjaminiHochberg(nil) = %v, want nil", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		p := make([]float64, 1+rng.IntN(40))
		for i := range p {
			p[i] = rng.Float64()
			if rng.IntN(5) == 0 {
				p[i] = p[rng.IntN(i+1)] // ties
			}
		}
		q := BenjaminiHochberg(p)
		for i := range p {
			if q[i] < p[i] || q[i] > 1 {
				t.Fatalf("q[%d] = %v for p = %v: want p <= q <= 1", i, q[i], p[i])
			}
			for j := range p {
				if p[i] <= p[j] && q[i] > q[j] {
					t.Fatalf("not monotone: p %v <= %v but q %v > %v", p[i], p[j], q[i], q[j])
				}
			}
		}
	}
}

func TestPairedBootstrapDeterministic(t *testing.T) {
	deltas := []float64{-1, 0, 0, 0.5, 1, -0.25, 0, 0, 1, -1}
	a := PairedBootstrap(deltas, 1000, 0.95, 42)
	b := PairedBootstrap(deltas, 1000, 0.95, 42)
	if a != b {
		t.Errorf("same seed, different intervals: %+v and %+v", a, b)
	}
	if c := PairedBootstrap(deltas, 1000, 0.95, 43); c == a {
		t.Errorf("seeds 42 and 43 gave the same interval %+v; the seed is not used", a)
	}
	if a.Lo > a.Hi || a.Level != 0.95 || a.Resamples != 1000 {
		t.Errorf("interval %+v: want Lo <= Hi, level 0.95, 1000 resamples", a)
	}
	if got := PairedBootstrap([]float64{0.25, 0.25, 0.25}, 100, 0.9, 1); got.Lo != 0.25 || got.Hi != 0.25 {
		t.Errorf("constant deltas: interval %+v, want [0.25, 0.25]", got)
	}
	if got := PairedBootstrap(nil, 100, 0.9, 1); got != (Interval{Level: 0.9}) {
		t.Errorf("no deltas: interval %+v, want zero with level 0.9", got)
	}
}

// The percentile interval should cover the true mean about level of the
// time; a loose band keeps the check from being flaky while still catching
// a wrong quantile or a biased resampler. The samples are seeded, so the
// result is the same on every run.
func TestPairedBootstrapCoverage(t *testing.T) {
	const trueMean, n, runs = 0.3, 60, 300
	rng := rand.New(rand.NewPCG(7, 11))
	covered := 0
	for run := range runs {
		deltas := make([]float64, n)
		for i := range deltas {
			deltas[i] = trueMean + rng.NormFloat64()
		}
		iv := PairedBootstrap(deltas, 1000, 0.95, uint64(run))
		if iv.Lo <= trueMean && trueMean <= iv.Hi {
			covered++
		}
	}
	if rate := float64(covered) / runs; rate < 0.89 || rate > 0.99 {
		t.Errorf("coverage %.3f of a 95%% interval over %d runs, want about 0.95", rate, runs)
	}
}

// BenchmarkDiff measures a diff of two 2,000-case batches of three trials
// with three metrics: the bootstrap dominates.
func BenchmarkDiff(b *testing.B) {
	cases := map[string]string{}
	for i := range 2000 {
		cases[fmt.Sprintf("case-%04d", i)] = []string{"PPP", "PPF", "FFF"}[i%3]
	}
	base := card("b", cases, func(sc *eval.Scorecard) { addScore(sc, "usd", 0.01, nil) })
	cand := card("c", cases, harness2, func(sc *eval.Scorecard) { addScore(sc, "usd", 0.02, nil) })
	b.ResetTimer()
	for b.Loop() {
		if _, err := Diff(base, cand); err != nil {
			b.Fatal(err)
		}
	}
}
