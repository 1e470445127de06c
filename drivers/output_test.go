package drivers

import (
	"strings"
	"testing"
)

func TestCapture(t *testing.T) {
	c := Capture{Max: 10}
	for range 3 {
		c.Add([]byte(strings.Repeat("a", 2*TailBytes)))
	}
	c.Add([]byte("é-end"))
	if got := c.Head(); got != strings.Repeat("a", 10) {
		t.Errorf("head = %q, want 10 a", got)
	}
	tail := c.Tail()
	if len(tail) != TailBytes || !strings.HasSuffix(tail, "é-end") {
		t.Errorf("tail has %d bytes ending %q, want %d ending %q", len(tail), tail[max(0, len(tail)-10):], TailBytes, "é-end")
	}

	// A rune cut by the head cap or the tail window is dropped, not halved.
	h := Capture{Max: 2}
	h.Add([]byte("aéb"))
	if got := h.Head(); got != "a" {
		t.Errorf("head = %q, want %q", got, "a")
	}
	w := Capture{}
	w.Add([]byte("é" + strings.Repeat("b", TailBytes-1)))
	if got := w.Tail(); got != strings.Repeat("b", TailBytes-1) {
		t.Errorf("tail starts %q, want the half rune dropped", got[:4])
	}
}
