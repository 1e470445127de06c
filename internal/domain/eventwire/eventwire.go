// Package eventwire is GET /events' wire format (docs/agents.md; issue 33):
// one entry of the workspace's platform event log as the route answers it
// (the store's event, which the events service answers), the name of the
// header carrying the next page's cursor, and the page bounds. It is pure,
// so the API client and the CLI read the log without linking a service or
// the store.
package eventwire

import (
	"encoding/json"
	"time"
)

// NextCursorHeader carries the cursor of the next page ("" or absent on
// the last).
const NextCursorHeader = "X-Svc-Next-Cursor"

// Event is one entry of the log.
type Event struct {
	Seq       int64           `json:"seq"`
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Subject   string          `json:"subject,omitempty"`
	Actor     string          `json:"actor,omitempty"`
	CausedBy  string          `json:"causedBy,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
}

// Query is GET /events' query.
type Query struct {
	Type   string // an exact type or a glob with *
	Since  string // an RFC 3339 instant
	Cursor string
	Limit  int // 0: the service's default
}
