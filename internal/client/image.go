package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"svc/internal/domain/sandboxwire"
)

// ImportImage is POST /images?as=target (its answer is sandboxwire.Imported:
// the Ref a session names as its image): body is an image's tar (docker
// save, or an OCI image layout; gzip or not), streamed as it is read;
// size is its length, or -1 when unknown (the body is then sent chunked).
// The request has no time bound but ctx's: a large image takes as long
// as its upload and its push into the store.
func (c *Client) ImportImage(ctx context.Context, target string, body io.Reader, size int64) (sandboxwire.Imported, json.RawMessage, error) {
	path := "/images?" + url.Values{"as": {target}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+path, body)
	if err != nil {
		return sandboxwire.Imported{}, nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	req.ContentLength = size
	if size == 0 {
		req.Body = http.NoBody
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/x-tar")
	// The service refuses some imports before reading a byte (no image
	// store, a bad target, no credential): with 100-continue it says so
	// before the tar is sent, rather than after gigabytes.
	req.Header.Set("Expect", "100-continue")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if c.Workspace != "" {
		req.Header.Set(WorkspaceHeader, c.Workspace)
	}
	resp, err := c.within(0).HTTP.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return sandboxwire.Imported{}, nil, &TransportError{URL: c.Base, Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return sandboxwire.Imported{}, nil, &TransportError{URL: c.Base, Err: fmt.Errorf("reading the answer to POST /images: %w", err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return sandboxwire.Imported{}, nil, c.errorOf(resp, raw)
	}
	var im sandboxwire.Imported
	if err := json.Unmarshal(raw, &im); err != nil {
		return sandboxwire.Imported{}, nil, fmt.Errorf("POST /images answered %d with a body that is not the expected JSON: %v", resp.StatusCode, err)
	}
	return im, raw, nil
}
