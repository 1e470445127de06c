package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"svc/internal/imagestore"
	"svc/internal/integrations/images"
	"svc/internal/platform/config"
	"svc/internal/platform/derrors"
	"svc/internal/platform/netguard"
	"svc/internal/platform/secrets"
	"svc/store"
)

// ManagedImages is the image store `svc dev` serves itself: an OCI
// registry on disk under the data dir (internal/imagestore), on a
// loopback port chosen at start.
type ManagedImages struct {
	Store *imagestore.Store
	// Addr is the host:port it listens on.
	Addr string
	// Password is the credential it requires (user imagestore.User),
	// new at each start and written to dataDir/images/credential (0600)
	// for an operator's registry client.
	Password string
}

// GC collects the store's garbage, logging what fails.
func (m *ManagedImages) GC(log *slog.Logger) {
	st, err := m.Store.GC()
	if err != nil {
		log.Warn("image store: collecting garbage", "err", err)
		return
	}
	if st.Blobs+st.UntaggedManifest+st.Uploads > 0 {
		log.Info("image store: garbage collected", "blobs", st.Blobs, "bytes", st.Bytes,
			"untaggedManifests", st.UntaggedManifest, "uploads", st.Uploads)
	}
}

// ServeManagedImages opens the managed image store under
// dataDir/images (collecting garbage at open: a snapshot that died
// before its tag leaves nothing behind) and serves it on a loopback port
// until ctx ends; stop closes it sooner.
func ServeManagedImages(ctx context.Context, dataDir string, log *slog.Logger) (m *ManagedImages, stop func(context.Context) error, err error) {
	var pw [24]byte
	if _, err := rand.Read(pw[:]); err != nil {
		return nil, nil, fmt.Errorf("image store: %v", err)
	}
	password := hex.EncodeToString(pw[:])
	dir := filepath.Join(dataDir, "images")
	st, err := imagestore.Open(dir, imagestore.Options{Logger: log, Password: password})
	if err != nil {
		return nil, nil, fmt.Errorf("SVC_DATA_DIR: %v", err)
	}
	// The credential file is the data dir's (which jobs cannot read),
	// written whole before the store serves.
	cred := filepath.Join(dir, "credential")
	if err := os.WriteFile(cred+".tmp", []byte(imagestore.User+":"+password+"\n"), 0o600); err != nil {
		return nil, nil, fmt.Errorf("image store: writing its credential: %v", err)
	}
	if err := os.Rename(cred+".tmp", cred); err != nil {
		return nil, nil, fmt.Errorf("image store: writing its credential: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("image store: cannot listen on loopback: %v", err)
	}
	srv := &http.Server{Handler: st, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("image store stopped", "err", err)
		}
	}()
	log.Info("image store listening", "addr", ln.Addr().String(), "dir", st.Dir())
	return &ManagedImages{Store: st, Addr: ln.Addr().String(), Password: password}, srv.Shutdown, nil
}

// Worlds opens the image store worlds and imports use: the registry
// SVC_IMAGE_STORE names, else the managed store m (svc dev), else none
// (nil: world sessions are refused at create). Every dial goes through
// the guard of SVC_WEBHOOK_ALLOW; the managed store's own loopback
// address is added to it, and nothing else of loopback.
func Worlds(ctx context.Context, cfg config.Config, m *ManagedImages, st SecretReader, sealer *secrets.Sealer) (*images.Workspaces, error) {
	store, allow := cfg.ImageStore, cfg.WebhookAllow
	cred, err := imageStoreCredential(ctx, cfg, st, sealer)
	if err != nil {
		return nil, err
	}
	if store == "" {
		if m == nil {
			return nil, nil
		}
		store = "http://" + m.Addr
		cred = imagestore.User + ":" + m.Password
		allow = strings.TrimSuffix(allow, ",") + "," + m.Addr
	}
	guard, err := images.NewGuard(allow)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", images.Setting, err)
	}
	w, err := images.NewWorkspaces(images.Config{Store: store, Guard: guard, MaxCaptureBytes: cfg.WorldMaxCaptureBytes, Credential: cred}, cfg.WorldKeepVersions)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", images.StoreSetting, err)
	}
	return w, nil
}

// SecretReader reads a workspace secret's sealed row.
type SecretReader interface {
	GetSecret(ctx context.Context, workspace, name string) (store.Secret, error)
}

// imageStoreCredential opens the secret SVC_IMAGE_STORE_SECRET names
// ("workspace/name"), the registry's credential, once at start: the
// secret's allowedHosts must admit the store's host, as a trace source's
// credential must admit its endpoint, so a credential is never sent to a
// host its owner did not name. Every failure says what to fix.
func imageStoreCredential(ctx context.Context, cfg config.Config, st SecretReader, sealer *secrets.Sealer) (string, error) {
	ref := cfg.ImageStoreSecret
	if ref == "" {
		return "", nil
	}
	if cfg.ImageStore == "" {
		return "", fmt.Errorf("SVC_IMAGE_STORE_SECRET is set but SVC_IMAGE_STORE is not: the managed store of svc dev takes no credential; unset it or name the registry")
	}
	ws, name, ok := strings.Cut(ref, "/")
	if !ok || ws == "" || name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("SVC_IMAGE_STORE_SECRET %q: want workspace/name of a workspace secret", ref)
	}
	if sealer == nil {
		return "", fmt.Errorf("SVC_IMAGE_STORE_SECRET %q cannot be opened: SVC_SECRET_KEY is not set", ref)
	}
	sec, err := st.GetSecret(ctx, ws, name)
	if errors.Is(err, derrors.ErrNotFound) {
		return "", fmt.Errorf("SVC_IMAGE_STORE_SECRET %q: workspace %s has no secret %s; PUT /secrets/%s in that workspace with the registry's credential first", ref, ws, name, name)
	}
	if err != nil {
		return "", fmt.Errorf("SVC_IMAGE_STORE_SECRET %q: %w", ref, err)
	}
	target := cfg.ImageStore
	if !strings.Contains(target, "://") {
		target = "https://" + target
	}
	if err := netguard.CheckBound(sec.AllowedHosts, target); err != nil {
		return "", fmt.Errorf("SVC_IMAGE_STORE_SECRET %q: %v", ref, err)
	}
	v, err := sealer.Open(ws, name, sec.Ciphertext)
	if err != nil {
		return "", fmt.Errorf("SVC_IMAGE_STORE_SECRET %q cannot be opened with the current SVC_SECRET_KEY; store it again", ref)
	}
	return string(v), nil
}
