package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"svc/internal/domain/eventwire"
)

// Events is GET /events: one page of the workspace's event log, newest
// first, and the cursor of the next page (empty on the last).
func (c *Client) Events(ctx context.Context, q eventwire.Query) (list []eventwire.Event, raw json.RawMessage, next string, err error) {
	v := url.Values{}
	for k, s := range map[string]string{"type": q.Type, "since": q.Since, "cursor": q.Cursor} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	path := "/events"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	raw, h, err := c.DoHeader(ctx, http.MethodGet, path, nil, &list)
	if err != nil {
		return nil, nil, "", err
	}
	return list, raw, h.Get(eventwire.NextCursorHeader), nil
}
