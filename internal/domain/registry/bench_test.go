package registry

import (
	"fmt"
	"strings"
	"testing"
)

// bigDataset returns a dataset of n cases of about 400 bytes each.
func bigDataset(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"id":"big","version":"1.0.0","cases":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"case-%d","task":"Fix the failing test number %d in the repository and explain the change","env":{"kind":"repo","source":{"files":{"main.py":"print(%d)\n"}}},"graders":[{"id":"tests","kind":"command","cmd":"pytest -q"}],"timeoutSec":300,"tags":["t%d"],"expected":{"exit":0,"score":0.75}}`, i, i, i, i%10)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// BenchmarkParseDataset10k measures registering a 10,000-case dataset
// (about 4 MB): strict decode, validation, canonical JSON and digest.
func BenchmarkParseDataset10k(b *testing.B) {
	raw := bigDataset(10000)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Parse(Dataset, raw, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParts10k measures splitting a parsed 10,000-case dataset into
// its header and canonical case documents (records.VersionRecord's work
// before it copies them into store rows).
func BenchmarkParts10k(b *testing.B) {
	s, err := Parse(Dataset, bigDataset(10000), true)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Parts(); err != nil {
			b.Fatal(err)
		}
	}
}
