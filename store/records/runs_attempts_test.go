package records

import (
	"encoding/json"
	"testing"

	"svc/store"
)

func TestAttemptsOfReadsWhatFromRowReads(t *testing.T) {
	for _, doc := range []string{
		`{"id":"r","attempts":3,"case":{"id":"c","attempts":9},"result":{"attempts":7}}`,
		`{"id":"r"}`,
		`{"result":{"trace":[{"kind":"span","attempts":5}]},"attempts":2}`,
	} {
		row := store.Run{ID: "r", Doc: json.RawMessage(doc)}
		full, err := FromRow(row)
		if err != nil {
			t.Fatal(err)
		}
		n, err := AttemptsOf(row)
		if err != nil {
			t.Fatal(err)
		}
		if n != full.Attempts {
			t.Errorf("%s: AttemptsOf = %d, FromRow's Attempts = %d", doc, n, full.Attempts)
		}
	}
	for _, bad := range []string{`[]`, `{"attempts":"x"}`, `{`} {
		if _, err := AttemptsOf(store.Run{ID: "r", Doc: json.RawMessage(bad)}); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
