package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"svc/internal/domain/sandboxwire"
)

// Worlds (spec §2.9; docs/sandboxes.md, "Worlds"): a world is a
// repository of the workspace's image store whose versions are tagged v1,
// v2, ... (sandboxwire.World; GET /worlds lists only the latest version).

// ListWorlds is GET /worlds: the workspace's worlds with their latest
// version.
func (c *Client) ListWorlds(ctx context.Context) ([]sandboxwire.World, json.RawMessage, error) {
	return call[[]sandboxwire.World](ctx, c, http.MethodGet, "/worlds", nil)
}

// World is GET /worlds/:id: the world's versions, oldest first.
func (c *Client) World(ctx context.Context, id string) (sandboxwire.World, json.RawMessage, error) {
	return call[sandboxwire.World](ctx, c, http.MethodGet, "/worlds/"+url.PathEscape(id), nil)
}
