package records

import (
	"testing"
	"time"

	"svc/store"
)

func TestDecodeCache(t *testing.T) {
	at := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	row := func(id, status string, updated time.Time) store.Run {
		return store.Run{ID: id, Doc: []byte(`{"id":"` + id + `","status":"` + status + `"}`), UpdatedAt: updated}
	}
	c := NewDecodeCache(2)
	for _, tc := range []struct {
		name string
		row  store.Run
		want string
	}{
		{"first read decodes", row("r1", "running", at), "running"},
		{"unchanged row", row("r1", "running", at), "running"},
		{"new document, same update time", row("r1", "failed", at), "failed"},
		{"newer row", row("r1", "succeeded", at.Add(time.Microsecond)), "succeeded"},
		{"a second run", row("r2", "queued", at), "queued"},
		{"a third run starts the cache afresh", row("r3", "running", at), "running"},
		{"r1 after the reset", row("r1", "succeeded", at.Add(time.Microsecond)), "succeeded"},
	} {
		got, err := c.FromRow(tc.row)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got.Status) != tc.want || got.ID != tc.row.ID {
			t.Errorf("%s: got %s %s, want %s %s", tc.name, got.ID, got.Status, tc.row.ID, tc.want)
		}
	}
	if _, err := c.FromRow(store.Run{ID: "bad", Doc: []byte("{")}); err == nil {
		t.Error("a document that does not decode: no error")
	}
}
