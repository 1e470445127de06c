package gate

import "hash/fnv"

// The bootstrap behind every MetricDelta.CI.
const (
	BootstrapResamples = 2000
	BootstrapLevel     = 0.95
)

// bootstrapSeed derives a metric's bootstrap seed from the pair of
// scorecards, so the same comparison always reports the same interval.
func bootstrapSeed(baseID, candID, metric string) uint64 {
	h := fnv.New64a()
	for _, s := range []string{baseID, candID, metric} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}
