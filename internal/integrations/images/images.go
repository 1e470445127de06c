// Package images is the client of the image store: the managed registry
// `svc dev` serves on loopback, or any OCI registry (SVC_IMAGE_STORE) in
// production. Every dial goes through the address guard.
//
// Worlds are repositories of the store whose versions are the tags v1, v2,
// ...; a version is pinned by digest (repo:v<n>@sha256:...). Each version's
// manifest carries who published it (svc.publishedBy) and its number
// (svc.version), so two versions never share a digest and retention can
// skip another member's versions.
package images

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/stream"

	"svc/internal/platform/derrors"
	"svc/internal/platform/netguard"
)

// Settings the client answers to, named in its refusals.
const (
	// Setting is the allow list of the guard the client dials through:
	// the webhook guard's, as trace pulls and model calls use, so one list
	// admits the service's private outbound targets.
	Setting = "SVC_WEBHOOK_ALLOW"
	// StoreSetting names the registry in production.
	StoreSetting = "SVC_IMAGE_STORE"
	// CaptureSetting bounds a world version's new layer.
	CaptureSetting = "SVC_WORLD_MAX_CAPTURE_BYTES"
	// KeepSetting is how many versions of a world retention keeps.
	KeepSetting = "SVC_WORLD_KEEP_VERSIONS"
)

// DefaultMaxCaptureBytes is SVC_WORLD_MAX_CAPTURE_BYTES's default: 2 GiB.
const DefaultMaxCaptureBytes int64 = 2 << 30

// Manifest annotations of a world version.
const (
	AnnotationPublishedBy = "svc.publishedBy"
	AnnotationVersion     = "svc.version"
	annotationCreated     = "org.opencontainers.image.created"
)

// NewGuard builds the address guard the client dials through from allow
// (the value of SVC_WEBHOOK_ALLOW). `svc dev` adds its own store's
// loopback address to the list.
func NewGuard(allow string) (*netguard.Guard, error) {
	return netguard.New(allow, netguard.Names{Setting: Setting, Field: StoreSetting, Target: "image store",
		UserinfoHint: "put the registry's credential in a secret and name it instead"})
}

// Config is where the store is and how to reach it.
type Config struct {
	// Store is SVC_IMAGE_STORE: [http://|https://]host[:port][/prefix];
	// https when no scheme is given. World and image repositories are
	// under prefix.
	Store string
	// Credential is the opened secret of the store: "user:password" for
	// basic authentication (exchanged for a token where the registry asks),
	// any other text a registry token; "" is anonymous.
	Credential string
	// Guard is the address guard every dial goes through (required).
	Guard *netguard.Guard
	// MaxCaptureBytes bounds a published layer's compressed size;
	// 0 means DefaultMaxCaptureBytes.
	MaxCaptureBytes int64
}

// Client talks to one image store. It is safe for concurrent use.
type Client struct {
	host     string // registry host[:port]
	prefix   string // repository prefix, "" or "a/b"
	insecure bool
	auth     authn.Authenticator
	tr       http.RoundTripper
	maxBytes int64

	mu    sync.Mutex
	locks map[string]*sync.Mutex // per repository: this process publishes one version at a time
}

// New returns a client of cfg.Store.
func New(cfg Config) (*Client, error) {
	if cfg.Guard == nil {
		return nil, errors.New("images: a client needs the address guard")
	}
	store := strings.TrimRight(strings.TrimSpace(cfg.Store), "/")
	if store == "" {
		return nil, derrors.Invalidf("%s is not set: name the OCI registry worlds and images are kept in (registry.example.com/svc)", StoreSetting)
	}
	c := &Client{tr: cfg.Guard.Transport(), maxBytes: cfg.MaxCaptureBytes, locks: map[string]*sync.Mutex{}}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultMaxCaptureBytes
	}
	switch {
	case strings.HasPrefix(store, "http://"):
		c.insecure, store = true, strings.TrimPrefix(store, "http://")
	case strings.HasPrefix(store, "https://"):
		store = strings.TrimPrefix(store, "https://")
	case strings.Contains(store, "://"):
		return nil, derrors.Invalidf("%s %q: the scheme is http or https", StoreSetting, cfg.Store)
	}
	c.host, c.prefix, _ = strings.Cut(store, "/")
	if c.host == "" {
		return nil, derrors.Invalidf("%s %q names no host", StoreSetting, cfg.Store)
	}
	if strings.Contains(c.host, ":") && !(strings.HasPrefix(c.host, "[") && strings.HasSuffix(c.host, "]")) {
		h, port, err := net.SplitHostPort(c.host)
		if _, perr := strconv.ParseUint(port, 10, 16); err != nil || h == "" || perr != nil {
			return nil, derrors.Invalidf("%s %q: want host[:port]", StoreSetting, cfg.Store)
		}
	}
	if strings.Contains(c.host, "@") {
		return nil, derrors.Invalidf("%s %q: no credentials in the address; put them in a secret", StoreSetting, cfg.Store)
	}
	if _, err := name.NewRegistry(c.host, name.StrictValidation); err != nil {
		return nil, derrors.Invalidf("%s %q: %v", StoreSetting, cfg.Store, err)
	}
	if c.prefix != "" && !repoRE.MatchString(c.prefix) {
		return nil, derrors.Invalidf("%s %q: the path after the host must be a repository prefix (lowercase, a/b)", StoreSetting, cfg.Store)
	}
	c.auth = authn.Anonymous
	if cfg.Credential != "" {
		if user, pass, ok := strings.Cut(cfg.Credential, ":"); ok {
			c.auth = &authn.Basic{Username: user, Password: pass}
		} else {
			c.auth = authn.FromConfig(authn.AuthConfig{RegistryToken: cfg.Credential})
		}
	}
	return c, nil
}

// String names the store without its credential.
func (c *Client) String() string {
	scheme := "https://"
	if c.insecure {
		scheme = "http://"
	}
	return "image store at " + scheme + c.host + "/" + c.prefix
}

// GoString is String, so %#v cannot print the credential either.
func (c *Client) GoString() string { return c.String() }

var (
	// worldRE is a world id: one repository path component.
	worldRE = regexp.MustCompile(`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*$`)
	// repoRE is a repository name.
	repoRE = regexp.MustCompile(`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$`)
	// versionRE is a version's tag.
	versionRE = regexp.MustCompile(`^v([1-9][0-9]{0,8})$`)
)

// ValidWorld says what is wrong with a world id, or nil.
func ValidWorld(id string) error {
	if len(id) > 128 || !worldRE.MatchString(id) {
		return derrors.Invalidf("world id %q: lowercase letters and digits, with '.', '_', '__' or '-' between them, one segment (no '/'), at most 128 characters", id)
	}
	return nil
}

func (c *Client) options(ctx context.Context) []remote.Option {
	return []remote.Option{remote.WithContext(ctx), remote.WithTransport(c.tr), remote.WithAuth(c.auth),
		remote.WithUserAgent("svc")}
}

func (c *Client) nameOptions() []name.Option {
	opts := []name.Option{name.StrictValidation}
	if c.insecure {
		opts = append(opts, name.Insecure)
	}
	return opts
}

// repository is repo under the store's prefix.
func (c *Client) repository(repo string) (name.Repository, error) {
	full := repo
	if c.prefix != "" {
		full = c.prefix + "/" + repo
	}
	return name.NewRepository(c.host+"/"+full, c.nameOptions()...)
}

func (c *Client) world(id string) (name.Repository, error) {
	if err := ValidWorld(id); err != nil {
		return name.Repository{}, err
	}
	return c.repository(id)
}

// Version is one version of a world.
type Version struct {
	Number      int       `json:"version"`
	Tag         string    `json:"tag"`
	Digest      string    `json:"digest"`
	PublishedBy string    `json:"publishedBy,omitempty"`
	Created     time.Time `json:"created,omitzero"`
	// Ref is the pinned reference: host/repo:v<n>@sha256:...
	Ref string `json:"ref"`
}

// storeError words an error of the registry for the caller: a refused
// address is the guard's refusal; a missing world or version is not
// found; anything else is unavailable, without the registry's URL.
func (c *Client) storeError(what string, err error) error {
	var refused *netguard.RefusedError
	if errors.As(err, &refused) {
		return refused
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusNotFound:
			return derrors.NotFoundf("%s: not in the image store", what)
		case http.StatusUnauthorized, http.StatusForbidden:
			return derrors.Unavailablef("%s: the image store refused the credential (%d); check the secret of %s", what, te.StatusCode, StoreSetting)
		}
	}
	return fmt.Errorf("%w: %s: image store: %v", derrors.ErrUnavailable, what, netguard.UnwrapURLError(err))
}

func notFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}

// Versions lists the versions of world id, oldest first; none when the
// world has no version yet.
func (c *Client) Versions(ctx context.Context, id string) ([]Version, error) {
	repo, err := c.world(id)
	if err != nil {
		return nil, err
	}
	tags, err := remote.List(repo, c.options(ctx)...)
	if notFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, c.storeError("listing the versions of world "+id, err)
	}
	var out []Version
	for _, t := range tags {
		m := versionRE.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		v, err := c.version(ctx, repo, t)
		if errors.Is(err, derrors.ErrNotFound) {
			continue // pruned between the listing and now
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out, nil
}

// version reads the tag of repo.
func (c *Client) version(ctx context.Context, repo name.Repository, tag string) (Version, error) {
	m := versionRE.FindStringSubmatch(tag)
	if m == nil {
		return Version{}, derrors.Invalidf("version %q: want v1, v2, ...", tag)
	}
	n, _ := strconv.Atoi(m[1])
	desc, err := remote.Get(repo.Tag(tag), c.options(ctx)...)
	if err != nil {
		return Version{}, c.storeError(fmt.Sprintf("world %s version %s", repo.RepositoryStr(), tag), err)
	}
	v := Version{Number: n, Tag: tag, Digest: desc.Digest.String(),
		Ref: repo.Name() + ":" + tag + "@" + desc.Digest.String()}
	if mf, err := v1.ParseManifest(bytes.NewReader(desc.Manifest)); err == nil {
		v.PublishedBy = mf.Annotations[AnnotationPublishedBy]
		if t, err := time.Parse(time.RFC3339, mf.Annotations[annotationCreated]); err == nil {
			v.Created = t
		}
	}
	return v, nil
}

// Latest is the newest version of world id; not found when it has none.
func (c *Client) Latest(ctx context.Context, id string) (Version, error) {
	vs, err := c.Versions(ctx, id)
	if err != nil {
		return Version{}, err
	}
	if len(vs) == 0 {
		return Version{}, derrors.NotFoundf("world %s has no version yet: snapshot a session of it first", id)
	}
	return vs[len(vs)-1], nil
}

// Resolve is version n of world id, pinned by digest (n < 1: the latest).
func (c *Client) Resolve(ctx context.Context, id string, n int) (Version, error) {
	if n < 1 {
		return c.Latest(ctx, id)
	}
	repo, err := c.world(id)
	if err != nil {
		return Version{}, err
	}
	v, err := c.version(ctx, repo, "v"+strconv.Itoa(n))
	if errors.Is(err, derrors.ErrNotFound) {
		return Version{}, derrors.NotFoundf("world %s has no version v%d", id, n)
	}
	return v, err
}

// Image is the image ref names (a Version's Ref, or any reference into
// the store), read lazily from the store.
func (c *Client) Image(ctx context.Context, ref string) (v1.Image, error) {
	r, err := name.ParseReference(ref, c.nameOptions()...)
	if err != nil {
		return nil, derrors.Invalidf("image reference %q: %v", ref, err)
	}
	if r.Context().RegistryStr() != c.host {
		return nil, derrors.Invalidf("image reference %q is not in the image store (%s)", ref, c.host)
	}
	img, err := remote.Image(r, c.options(ctx)...)
	if err != nil {
		return nil, c.storeError("image "+ref, err)
	}
	return img, nil
}

func (c *Client) lock(repo string) func() {
	c.mu.Lock()
	l, ok := c.locks[repo]
	if !ok {
		l = &sync.Mutex{}
		c.locks[repo] = l
	}
	c.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// captureRefusal names the limit a layer of size bytes passes.
func (c *Client) captureRefusal(id string, size int64) error {
	return derrors.Refusef(derrors.ErrInvalid, map[string]any{"captureBytes": size, "maxCaptureBytes": c.maxBytes, "setting": CaptureSetting},
		"world %s: the change set is %d bytes compressed, past %s (%d bytes); remove what need not be kept (caches, build output) or raise the limit",
		id, size, CaptureSetting, c.maxBytes)
}

// Publish appends layer to base and pushes the result as the next version
// of world id, published by publishedBy. The blobs and the manifest go
// first, by digest; the tag is written last and only if no one wrote it
// meanwhile, so a crash leaves the previous version as the latest (and
// orphans the store collects), and a concurrent publisher gets a conflict
// rather than losing a version. A layer whose compressed size passes the
// capture limit is refused by name, before anything is pushed where its
// size is known beforehand, else before the tag.
func (c *Client) Publish(ctx context.Context, id string, base v1.Image, layer v1.Layer, publishedBy string) (Version, error) {
	repo, err := c.world(id)
	if err != nil {
		return Version{}, err
	}
	if publishedBy == "" {
		return Version{}, errors.New("images: Publish needs who publishes")
	}
	size, err := layer.Size()
	sized := err == nil
	if err != nil && !errors.Is(err, stream.ErrNotComputed) {
		return Version{}, fmt.Errorf("world %s: reading the change set: %w", id, err)
	}
	if sized && size > c.maxBytes {
		return Version{}, c.captureRefusal(id, size)
	}

	defer c.lock(repo.Name())()
	vs, err := c.Versions(ctx, id)
	if err != nil {
		return Version{}, err
	}
	n := 1
	if len(vs) > 0 {
		n = vs[len(vs)-1].Number + 1
	}
	tag := "v" + strconv.Itoa(n)
	now := time.Now().UTC()
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer,
		History: v1.History{Created: v1.Time{Time: now}, CreatedBy: "svc world snapshot " + tag, Author: publishedBy}})
	if err != nil {
		return Version{}, fmt.Errorf("world %s: appending the change set: %w", id, err)
	}
	img, ok := mutate.Annotations(img, map[string]string{
		AnnotationPublishedBy: publishedBy,
		AnnotationVersion:     strconv.Itoa(n),
		annotationCreated:     now.Format(time.RFC3339),
	}).(v1.Image)
	if !ok {
		return Version{}, errors.New("images: annotating the version's manifest")
	}
	if !sized {
		// A streamed layer's digest and size are known once it is read:
		// upload it first, then judge its size.
		if err := remote.WriteLayer(repo, layer, c.options(ctx)...); err != nil {
			return Version{}, c.storeError("pushing world "+id+" "+tag, err)
		}
		if size, err = layer.Size(); err != nil {
			return Version{}, fmt.Errorf("world %s: sizing the change set: %w", id, err)
		}
		if size > c.maxBytes {
			return Version{}, c.captureRefusal(id, size) // an orphan blob: the store collects it
		}
	}
	digest, err := img.Digest()
	if err != nil {
		return Version{}, fmt.Errorf("world %s: %w", id, err)
	}
	if err := remote.Write(repo.Digest(digest.String()), img, c.options(ctx)...); err != nil {
		return Version{}, c.storeError("pushing world "+id+" "+tag, err)
	}
	if err := c.tagIfAbsent(ctx, repo, tag, img); err != nil {
		return Version{}, err
	}
	return Version{Number: n, Tag: tag, Digest: digest.String(), PublishedBy: publishedBy, Created: now.Truncate(time.Second),
		Ref: repo.Name() + ":" + tag + "@" + digest.String()}, nil
}

// tagIfAbsent writes tag for img's manifest unless the tag exists: it
// checks first, asks the registry to refuse an existing tag (If-None-Match,
// which the managed store honours), and reads the tag back.
func (c *Client) tagIfAbsent(ctx context.Context, repo name.Repository, tag string, img v1.Image) error {
	conflict := func() error {
		return derrors.Conflictf("world %s: version %s was published by someone else at the same time; publish again", repo.RepositoryStr(), tag)
	}
	if _, err := remote.Head(repo.Tag(tag), c.options(ctx)...); err == nil {
		return conflict()
	} else if !notFound(err) {
		return c.storeError("world "+repo.RepositoryStr()+" "+tag, err)
	}
	raw, err := img.RawManifest()
	if err != nil {
		return err
	}
	mt, err := img.MediaType()
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	rt, err := transport.NewWithContext(ctx, repo.Registry, c.auth, c.tr, []string{repo.Scope(transport.PushScope)})
	if err != nil {
		return c.storeError("world "+repo.RepositoryStr()+" "+tag, err)
	}
	u := fmt.Sprintf("%s://%s/v2/%s/manifests/%s", repo.Scheme(), repo.RegistryStr(), repo.RepositoryStr(), tag)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", string(mt))
	req.Header.Set("If-None-Match", "*")
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return c.storeError("world "+repo.RepositoryStr()+" "+tag, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusPreconditionFailed {
		return conflict()
	}
	if err := transport.CheckError(resp, http.StatusOK, http.StatusCreated, http.StatusAccepted); err != nil {
		return c.storeError("world "+repo.RepositoryStr()+" "+tag, err)
	}
	// A registry that ignores If-None-Match: the tag is ours only if it
	// still names our manifest.
	desc, err := remote.Head(repo.Tag(tag), c.options(ctx)...)
	if err != nil {
		return c.storeError("world "+repo.RepositoryStr()+" "+tag, err)
	}
	if desc.Digest != digest {
		return conflict()
	}
	return nil
}

// Prune deletes the versions of world id past the newest keep, oldest
// first, with their manifests (the store removes blobs no other manifest
// uses), skipping versions another member than member published; keep
// below 1 prunes nothing. It answers the versions it deleted, also with
// an error when it stopped partway: a prune failure is reported and never
// undoes a publish.
func (c *Client) Prune(ctx context.Context, id string, keep int, member string) ([]Version, error) {
	if keep < 1 {
		return nil, nil
	}
	repo, err := c.world(id)
	if err != nil {
		return nil, err
	}
	defer c.lock(repo.Name())()
	vs, err := c.Versions(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(vs) <= keep {
		return nil, nil
	}
	var pruned []Version
	for _, v := range vs[:len(vs)-keep] {
		if v.PublishedBy != member {
			continue
		}
		err := remote.Delete(repo.Digest(v.Digest), c.options(ctx)...)
		if err != nil && !notFound(err) {
			return pruned, c.storeError(fmt.Sprintf("pruning world %s %s", id, v.Tag), err)
		}
		pruned = append(pruned, v)
	}
	return pruned, nil
}
