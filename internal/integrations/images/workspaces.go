package images

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"sync"
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
