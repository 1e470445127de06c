package gate

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/combin"
)

// relErr is the relative tolerance under which two probabilities count as
// equal: R's fisher.test and scipy use 1 + 1e-7 so that tables of equal
// probability are not lost to rounding, and a p-value of exactly alpha
// (3 of 3 trials broken gives 1/20) is not lost either.
const relErr = 1 + 1e-7

// FisherExact returns the p-values of Fisher's exact test on the 2x2 table
// [[a, b], [c, d]]: twoSided sums the probability of every table with the
// observed margins that is no more probable than the observed one (within
// a relative 1e-7, as R and scipy do); less is P(X <= a) and greater is
// P(X >= a), X being the top-left cell under the hypergeometric null.
// greater is the test of R's alternative = "greater" (odds ratio > 1):
// for a gate's table [[baseline passes, baseline fails], [candidate passes,
// candidate fails]] it is the p-value of "the candidate passes less often".
// Each value is at most 1; an empty table gives 1, 1, 1. Negative counts
// are a programming error and panic.
func FisherExact(a, b, c, d int) (twoSided, less, greater float64) {
	if a < 0 || b < 0 || c < 0 || d < 0 {
		panic(fmt.Sprintf("gate.FisherExact: negative count in [[%d, %d], [%d, %d]]", a, b, c, d))
	}
	r1, r2, c1 := a+b, c+d, a+c
	lo, hi := max(0, c1-r2), min(r1, c1)
	if lo == hi {
		return 1, 1, 1
	}
	// Probabilities up to the common factor 1/C(n, c1), scaled by the
	// largest so that no term underflows, then normalised by their sum.
	logs := make([]float64, hi-lo+1)
	top := math.Inf(-1)
	for x := lo; x <= hi; x++ {
		l := combin.LogGeneralizedBinomial(float64(r1), float64(x)) +
			combin.LogGeneralizedBinomial(float64(r2), float64(c1-x))
		logs[x-lo] = l
		top = max(top, l)
	}
	probs := make([]float64, len(logs))
	var total float64
	for i, l := range logs {
		probs[i] = math.Exp(l - top)
		total += probs[i]
	}
	observed := probs[a-lo] * relErr
	for i, p := range probs {
		x := lo + i
		if x <= a {
			less += p
		}
		if x >= a {
			greater += p
		}
		if p <= observed {
			twoSided += p
		}
	}
	return min(1, twoSided/total), min(1, less/total), min(1, greater/total)
}

// BenjaminiHochberg returns the Benjamini-Hochberg adjusted p-values
// (q-values) of p, in p's order, as R's p.adjust(p, "BH") does:
// q_(i) = min over j >= i of min(1, m p_(j) / j), p_(1) <= ... <= p_(m).
// Rejecting every hypothesis with q <= f controls the false discovery rate
// at f. The result is monotone in p and capped at 1; nil for no p-values.
func BenjaminiHochberg(p []float64) []float64 {
	m := len(p)
	if m == 0 {
		return nil
	}
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	// A stable sort keeps ties in input order, so the output is
	// deterministic; ties get equal q-values either way.
	slices.SortStableFunc(order, func(i, j int) int {
		switch {
		case p[i] < p[j]:
			return -1
		case p[i] > p[j]:
			return 1
		}
		return 0
	})
	q := make([]float64, m)
	running := 1.0
	for rank := m; rank >= 1; rank-- {
		i := order[rank-1]
		// (m/rank)*p as R writes it: at rank m the factor is exactly 1,
		// so the largest p-value is its own q-value, never rounded below.
		running = min(running, float64(m)/float64(rank)*p[i])
		q[i] = running
	}
	return q
}

// PairedBootstrap returns the percentile bootstrap interval at level (for
// example 0.95) of the mean of deltas, the per-case differences candidate
// minus baseline of cases present on both sides: resamples resamplings of
// the cases with replacement, each one's mean, and the empirical (1-level)/2
// and (1+level)/2 quantiles of those means (gonum's stat.Quantile). The
// generator is math/rand/v2's PCG seeded with seed, so equal inputs give
// equal intervals. With no deltas or no resamples the interval is zero
// with Resamples 0. A level outside (0, 1) is a programming error and
// panics.
func PairedBootstrap(deltas []float64, resamples int, level float64, seed uint64) Interval {
	if !(level > 0 && level < 1) {
		panic(fmt.Sprintf("gate.PairedBootstrap: level %v is not in (0, 1)", level))
	}
	if len(deltas) == 0 || resamples <= 0 {
		return Interval{Level: level}
	}
	pcg := rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)
	n := len(deltas)
	means := make([]float64, resamples)
	for r := range means {
		var sum float64
		for range n {
			// Lemire's multiply-shift maps 64 random bits onto [0, n); its
			// bias, at most n/2^64, is far below the bootstrap's own noise,
			// and it avoids rand.IntN's rejection loop in the hot path.
			i, _ := bits.Mul64(pcg.Uint64(), uint64(n))
			sum += deltas[i]
		}
		means[r] = sum / float64(n)
	}
	slices.Sort(means)
	tail := (1 - level) / 2
	return Interval{
		Lo:        stat.Quantile(tail, stat.Empirical, means, nil),
		Hi:        stat.Quantile(1-tail, stat.Empirical, means, nil),
		Level:     level,
		Resamples: resamples,
	}
}
