package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Workspaces is the image store as each workspace sees it: the worlds of
// workspace ws are the repositories under Namespace(ws) of the store, so
// a world id is one segment to its workspace and another workspace's
// world of the same id is another repository (never found from here).
type Workspaces struct {
	cfg Config
	// Keep is SVC_WORLD_KEEP_VERSIONS.
	Keep int

	mu      sync.Mutex
	clients map[string]*Client
}

// NewWorkspaces returns the store of cfg split by workspace; it checks
// cfg as New does.
func NewWorkspaces(cfg Config, keep int) (*Workspaces, error) {
	if _, err := New(cfg); err != nil {
		return nil, err
	}
	return &Workspaces{cfg: cfg, Keep: keep, clients: map[string]*Client{}}, nil
}

// For is the client of workspace ws's worlds.
func (w *Workspaces) For(ws string) (*Client, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.clients[ws]; ok {
		return c, nil
	}
	cfg := w.cfg
	cfg.Store = strings.TrimRight(strings.TrimSpace(cfg.Store), "/") + "/" + Namespace(ws)
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	w.clients[ws] = c
	return c, nil
}

// Root is the client of the whole store (image imports name their
// repository themselves).
func (w *Workspaces) Root() (*Client, error) { return New(w.cfg) }

var nsInvalid = regexp.MustCompile(`[^a-z0-9]+`)

// Namespace is workspace ws's repository prefix in the store:
// "ws/<ws lowercased, other characters as '-'>-<10 hex of its digest>",
// the digest telling apart workspaces whose ids differ only in case.
func Namespace(ws string) string {
	s := strings.Trim(nsInvalid.ReplaceAllString(strings.ToLower(ws), "-"), "-")
	if len(s) > 60 {
		s = strings.Trim(s[:60], "-")
	}
	sum := sha256.Sum256([]byte(ws))
	if s == "" {
		return "ws/" + hex.EncodeToString(sum[:5])
	}
	return "ws/" + s + "-" + hex.EncodeToString(sum[:5])
}

// Worlds lists the worlds of the client's prefix (a workspace's
// namespace): the single-segment repositories right under it, from the
// registry's catalog, sorted. A registry without a catalog answers
// unavailable.
func (c *Client) Worlds(ctx context.Context) ([]string, error) {
	reg, err := name.NewRegistry(c.host, c.nameOptions()...)
	if err != nil {
		return nil, err
	}
	repos, err := remote.Catalog(ctx, reg, c.options(ctx)...)
	if err != nil {
		return nil, c.storeError("listing the worlds", err)
	}
	prefix := ""
	if c.prefix != "" {
		prefix = c.prefix + "/"
	}
	var out []string
	for _, r := range repos {
		rest, ok := strings.CutPrefix(r, prefix)
		if !ok || strings.Contains(rest, "/") || ValidWorld(rest) != nil {
			continue
		}
		out = append(out, rest)
	}
	sort.Strings(out)
	return out, nil
}

// Relative is ref (a reference into c's store, with or without the
// store's address and prefix) relative to c's prefix: "repo:tag@sha256:..."
// as rows and answers keep it, so that a change of the store's address
// (svc dev's loopback port) keeps every reference good.
func (c *Client) Relative(ref string) string {
	full := c.host + "/"
	if c.prefix != "" {
		full += c.prefix + "/"
	}
	if rest, ok := strings.CutPrefix(ref, full); ok {
		return rest
	}
	return ref
}

// Image reads the image ref names in workspace ws's namespace: ref is
// relative to it (repo:tag, repo@sha256:..., repo:tag@sha256:...), as
// ResolveWorld, snapshots and imports answer it.
func (w *Workspaces) Image(ctx context.Context, ws, ref string) (v1.Image, error) {
	c, err := w.For(ws)
	if err != nil {
		return nil, err
	}
	return c.Image(ctx, c.absolute(ref))
}

// absolute is a relative reference under c's host and prefix.
func (c *Client) absolute(ref string) string {
	rel := c.Relative(ref)
	if strings.HasPrefix(rel, c.host+"/") {
		return rel
	}
	full := c.host + "/"
	if c.prefix != "" {
		full += c.prefix + "/"
	}
	return full + rel
}
