package sandboxes

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"svc/auth"
	"svc/internal/integrations/images"
	"svc/internal/platform/derrors"
)

// Worlds is the request side of worlds (spec §2.9, §4.8): whether this
// deployment can snapshot, where a world session starts, the listing of a
// workspace's worlds and versions, and image imports. A world belongs to
// its workspace: its repository in the store is under the workspace's
// namespace (images.Namespace), so another workspace's world of the same
// id is not found.
type Worlds struct {
	// Store is the image store split by workspace; nil when the
	// deployment has none (SVC_IMAGE_STORE unset outside svc dev).
	Store *images.Workspaces
}

// CanSnapshot is nil when a world session can be created here, else the
// 400 refusal saying why (spec §4.8: a world session is refused at create
// when the deployment cannot snapshot).
func (w *Worlds) CanSnapshot() error {
	if w == nil || w.Store == nil {
		return derrors.Refusef(derrors.ErrInvalid, map[string]any{"setting": images.StoreSetting},
			"this deployment cannot snapshot a world: it has no image store; set %s to an OCI registry (svc dev serves its own)", images.StoreSetting)
	}
	return nil
}

// ParseVersion reads a world version as a caller writes it: "" or
// "latest" (0, the latest), "3" or "v3".
func ParseVersion(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "latest" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(s, "v"))
	if err != nil || n < 1 {
		return 0, derrors.Invalidf("world version %q: want v1, v2, ... or latest", s)
	}
	return n, nil
}

// ResolveWorld is version n (n < 1: the latest) of workspace ws's world
// id, pinned by digest, as a reference relative to the workspace's
// namespace of the image store (world:v<n>@sha256:...), which
// images.Workspaces.Image reads. A world with no such version is not
// found (a world with none yet starts from its session's image: see
// StartImage).
func (w *Worlds) ResolveWorld(ctx context.Context, ws, id string, n int) (string, error) {
	if err := w.CanSnapshot(); err != nil {
		return "", err
	}
	if err := images.ValidWorld(id); err != nil {
		return "", err
	}
	c, err := w.Store.For(ws)
	if err != nil {
		return "", err
	}
	v, err := c.Resolve(ctx, id, n)
	if err != nil {
		return "", err
	}
	return c.Relative(v.Ref), nil
}

// StartImage is the image a session of world id starts from: the world's
// version (the latest when version < 1), or, for a world with no
// version yet and no version named, image (the caller's, which the first
// snapshot builds v1 on). A world with no version and no image is 400.
func (w *Worlds) StartImage(ctx context.Context, ws, id string, version int, image string) (string, error) {
	ref, err := w.ResolveWorld(ctx, ws, id, version)
	if err == nil || !errors.Is(err, derrors.ErrNotFound) || version > 0 {
		return ref, err
	}
	if image == "" {
		return "", derrors.Invalidf("world %s has no version yet: give the image its first session starts from", id)
	}
	return image, nil
}

func worldVersion(id string, v images.Version) WorldVersion {
	return WorldVersion{Version: v.Number, Tag: v.Tag, Digest: v.Digest, Ref: id + ":" + v.Tag + "@" + v.Digest,
		PublishedBy: v.PublishedBy, Created: v.Created}
}

// ListWorlds is GET /worlds: the worlds of p's workspace with their
// latest version (no version list).
func (w *Worlds) ListWorlds(ctx context.Context, p auth.Principal) ([]World, error) {
	if w == nil || w.Store == nil {
		return []World{}, nil
	}
	c, err := w.Store.For(p.Workspace)
	if err != nil {
		return nil, err
	}
	ids, err := c.Worlds(ctx)
	if err != nil {
		return nil, err
	}
	out := []World{}
	for _, id := range ids {
		vs, err := c.Versions(ctx, id)
		if err != nil {
			return nil, err
		}
		if len(vs) == 0 {
			continue // every version pruned, or an image repository
		}
		latest := worldVersion(id, vs[len(vs)-1])
		out = append(out, World{ID: id, Latest: &latest, Versions: []WorldVersion{}})
	}
	return out, nil
}

// GetWorld is GET /worlds/:id: the world's versions, oldest first; a
// world with no version (or another workspace's) is 404.
func (w *Worlds) GetWorld(ctx context.Context, p auth.Principal, id string) (World, error) {
	if err := images.ValidWorld(id); err != nil {
		return World{}, err
	}
	if w == nil || w.Store == nil {
		return World{}, derrors.NotFoundf("world %s: this deployment has no image store (%s)", id, images.StoreSetting)
	}
	c, err := w.Store.For(p.Workspace)
	if err != nil {
		return World{}, err
	}
	vs, err := c.Versions(ctx, id)
	if err != nil {
		return World{}, err
	}
	if len(vs) == 0 {
		return World{}, derrors.NotFoundf("world %s has no version in this workspace", id)
	}
	out := World{ID: id, Versions: make([]WorldVersion, 0, len(vs))}
	for _, v := range vs {
		out.Versions = append(out.Versions, worldVersion(id, v))
	}
	latest := out.Versions[len(out.Versions)-1]
	out.Latest = &latest
	return out, nil
}

// ImportImage pushes the image at src (an OCI layout directory or a tar,
// see images.Client.Import) into p's workspace's namespace as target
// (repo:tag).
func (w *Worlds) ImportImage(ctx context.Context, p auth.Principal, src, target string) (Imported, error) {
	if w == nil || w.Store == nil {
		return Imported{}, derrors.Refusef(derrors.ErrInvalid, map[string]any{"setting": images.StoreSetting},
			"this deployment has no image store to import into; set %s", images.StoreSetting)
	}
	c, err := w.Store.For(p.Workspace)
	if err != nil {
		return Imported{}, err
	}
	im, err := c.Import(ctx, src, target)
	if err != nil {
		return Imported{}, err
	}
	return Imported{Ref: c.Relative(im.Ref), Digest: im.Digest, As: target}, nil
}
