package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// Worlds (spec §2.9; docs/worlds.md): a world is a repository of the
// workspace's image store whose versions are tagged v1, v2, ... The
// types mirror the service's (sandboxes.World, sandboxes.WorldVersion):
// that package reaches the store, which the CLI may not (internal/layering).

// World is one world with its versions, oldest first (GET /worlds lists
// only the latest).
type World struct {
	ID       string         `json:"id"`
	Latest   *WorldVersion  `json:"latest,omitempty"`
	Versions []WorldVersion `json:"versions"`
}

// WorldVersion is one version: Ref is pinned by digest, relative to the
// workspace's namespace of the store (world:v<n>@sha256:...).
type WorldVersion struct {
	Version     int       `json:"version"`
	Tag         string    `json:"tag"`
	Digest      string    `json:"digest"`
	Ref         string    `json:"ref"`
	PublishedBy string    `json:"publishedBy,omitempty"`
	Created     time.Time `json:"created"`
}

// ListWorlds is GET /worlds: the workspace's worlds with their latest
// version.
func (c *Client) ListWorlds(ctx context.Context) ([]World, json.RawMessage, error) {
	return call[[]World](ctx, c, http.MethodGet, "/worlds", nil)
}

// World is GET /worlds/:id: the world's versions, oldest first.
func (c *Client) World(ctx context.Context, id string) (World, json.RawMessage, error) {
	return call[World](ctx, c, http.MethodGet, "/worlds/"+url.PathEscape(id), nil)
}
