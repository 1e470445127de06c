package drivers

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Capture keeps what a driver reports of one output stream of a job: its
// head, up to Max bytes when Max > 0 (Result.Stdout), and its last
// TailBytes (Result.StdoutTail, StderrTail). The zero value keeps the tail
// only.
type Capture struct {
	Max  int
	head []byte
	tail []byte
}

// Add records p, the stream's next bytes.
func (c *Capture) Add(p []byte) {
	if c.Max > 0 && len(c.head) < c.Max {
		c.head = append(c.head, p[:min(len(p), c.Max-len(c.head))]...)
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*TailBytes {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-TailBytes:]...)
	}
}

// Head returns the head, without a rune cut in half at its end.
func (c *Capture) Head() string {
	h := c.head
	if c.Max > 0 && len(h) == c.Max {
		h = TrimPartialEnd(h)
	}
	return string(h)
}

// Tail returns the last TailBytes, without a rune cut in half at its
// start.
func (c *Capture) Tail() string {
	t := c.tail
	if len(t) > TailBytes {
		t = t[len(t)-TailBytes:]
		for i := 0; i < utf8.UTFMax-1 && len(t) > 0 && !utf8.RuneStart(t[0]); i++ {
			t = t[1:]
		}
	}
	return string(t)
}

// TrimPartialEnd drops an incomplete UTF-8 sequence at the end of b.
func TrimPartialEnd(b []byte) []byte {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

// PercentEncode encodes a resource attribute value as the OpenTelemetry
// environment variable format requires (',', '=' and the like escaped),
// for OTEL_RESOURCE_ATTRIBUTES=svc.run_id=<id>.
func PercentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
