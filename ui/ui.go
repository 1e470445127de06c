// Package ui is the web view at /ui/: hand-written HTML, CSS and ES
// modules embedded in the binary (no build step, no Node at run time).
// The assets are public; every datum the pages show comes from the JSON
// API, called by the browser with the bearer the user signed in with, so
// the pages see exactly what the API lets that credential see.
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// Prefix is where the web view is served.
const Prefix = "/ui/"

//go:embed static
var static embed.FS

// ContentSecurityPolicy is sent with every asset: scripts, styles and
// requests from this origin only, no inline code, no framing, images
// from this origin or data: URLs (the favicon). OIDC sign-in needs no
// exception: going to the issuer is a top-level navigation, and the code
// comes back to /ui/ and is exchanged through the service (oidc.go).
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// asset is one embedded file, ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// Handler serves the web view: Prefix+name answers the embedded file,
// any other path under Prefix without a file extension answers
// index.html (the pages route on the URL's fragment, and a path-shaped
// link still lands on the app), and /ui answers a redirect to /ui/.
type Handler struct {
	assets map[string]asset // by path below Prefix, "" for index.html
}

// contentTypes are the types of the files the view ships.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".json": "application/json",
	".txt":  "text/plain; charset=utf-8",
}

// New reads the embedded assets once.
func New() *Handler {
	h := &Handler{assets: map[string]asset{}}
	root, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embed directive guarantees the folder
	}
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			ct = "application/octet-stream"
		}
		sum := sha256.Sum256(b)
		h.assets[p] = asset{body: b, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic(err)
	}
	h.assets[""] = h.assets["index.html"]
	return h
}

// ServeHTTP answers GET and HEAD under /ui.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", ContentSecurityPolicy)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("X-Frame-Options", "DENY")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	a, found := h.assets[name]
	if !found {
		if path.Ext(name) != "" {
			// A missing script or stylesheet is a 404, never the page: the
			// browser would otherwise run HTML as a module and fail
			// obscurely.
			http.NotFound(w, r)
			return
		}
		a = h.assets[""]
	}
	hdr.Set("Content-Type", a.contentType)
	// No build step means no content-hashed file names, so assets are
	// revalidated on every load; the ETag makes that a 304.
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", a.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}
