package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"svc/internal/platform/derrors"
)

// UserAgent identifies the service's deliveries to receivers.
const UserAgent = "svc-webhooks/1"

// maxDrain is how much of a response body Deliver reads: enough to let the
// connection be reused for the common small reply, not so much that a hostile
// receiver can make a worker read forever.
const maxDrain = 64 << 10

// Message is one webhook delivery. Retries of the same event keep ID so the
// receiver can deduplicate; Timestamp is the signing time and should be the
// time of the attempt so the receiver's replay window accepts it.
type Message struct {
	ID        string
	Timestamp time.Time
	Body      []byte
}

// Deliver POSTs m.Body as JSON to url with the Standard Webhooks headers,
// using c (normally Guard.Client, which enforces the SSRF guard). A 2xx status
// is success; any other status is returned with an error naming it so the
// caller can decide whether to retry. Errors never repeat the URL, whose path
// or query may carry a receiver's token.
func Deliver(ctx context.Context, c *http.Client, url, secret string, m Message) (status int, err error) {
	defer derrors.Wrap(&err, "webhooks.Deliver(message %q)", m.ID)
	if c == nil {
		return 0, errors.New("nil http.Client; use Guard.Client")
	}
	if m.Timestamp.IsZero() {
		return 0, derrors.Invalidf("message timestamp is zero")
	}
	sig, err := Sign(secret, m.ID, m.Timestamp, m.Body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(m.Body))
	if err != nil {
		return 0, derrors.Invalidf("webhook URL: %v", unwrapURLError(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(HeaderID, m.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(m.Timestamp.Unix(), 10))
	req.Header.Set(HeaderSignature, sig)

	resp, err := c.Do(req)
	if err != nil {
		return 0, fmt.Errorf("POST to %s: %w", req.URL.Host, unwrapURLError(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("POST to %s: receiver answered %s", req.URL.Host, resp.Status)
	}
	return resp.StatusCode, nil
}
