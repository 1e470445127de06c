package imagestore

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// regError is an error answer of the distribution API.
type regError struct {
	status  int
	code    string
	message string
}

func (e *regError) Error() string { return e.code + ": " + e.message }

func fail(status int, code, format string, args ...any) *regError {
	return &regError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, e *regError) {
	body, _ := json.Marshal(map[string]any{"errors": []map[string]string{{"code": e.code, "message": e.message}}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.status)
	w.Write(body)
}

// ServeHTTP answers the OCI distribution API under /v2/.
func (s *Store) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	if !s.authorized(req) {
		w.Header().Set("WWW-Authenticate", `Basic realm="svc image store"`)
		writeError(w, fail(http.StatusUnauthorized, "UNAUTHORIZED", "authentication required: user svc with the password in the data dir's images/credential file"))
		return
	}
	r, err := parseRoute(req.URL.Path)
	if err != nil {
		writeError(w, routeError(err))
		return
	}
	var rerr *regError
	switch r.kind {
	case kindBase:
		rerr = s.serveBase(w, req)
	case kindCatalog:
		rerr = s.serveCatalog(w, req)
	case kindTags:
		rerr = s.serveTags(w, req, r)
	case kindManifest:
		rerr = s.serveManifest(w, req, r)
	case kindBlob:
		rerr = s.serveBlob(w, req, r)
	case kindUploads:
		rerr = s.serveUploads(w, req, r)
	case kindUpload:
		rerr = s.serveUpload(w, req, r)
	}
	if rerr != nil {
		if rerr.status >= 500 {
			s.log.Error("image store: request failed", "method", req.Method, "path", req.URL.Path, "err", rerr.message)
		}
		writeError(w, rerr)
	}
}

func routeError(err error) *regError {
	switch {
	case errors.Is(err, errName):
		return fail(http.StatusBadRequest, "NAME_INVALID", "invalid repository name: lowercase letters and digits, with '.', '_', '__', '-' or '/' between them")
	case errors.Is(err, errReference):
		return fail(http.StatusBadRequest, "MANIFEST_INVALID", "invalid reference: a tag ([A-Za-z0-9_][A-Za-z0-9._-]{0,127}) or a sha256 digest")
	case errors.Is(err, errDigest):
		return fail(http.StatusBadRequest, "DIGEST_INVALID", "%v", err)
	case errors.Is(err, errUpload):
		return fail(http.StatusNotFound, "BLOB_UPLOAD_UNKNOWN", "unknown upload")
	}
	return fail(http.StatusNotFound, "NAME_UNKNOWN", "no such endpoint of the distribution API")
}

func unsupported(req *http.Request) *regError {
	return fail(http.StatusMethodNotAllowed, "UNSUPPORTED", "%s is not supported here", req.Method)
}

func internal(err error) *regError {
	return fail(http.StatusInternalServerError, "UNKNOWN", "%v", err)
}

func (s *Store) serveBase(w http.ResponseWriter, req *http.Request) *regError {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return unsupported(req)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if req.Method == http.MethodGet {
		io.WriteString(w, "{}")
	}
	return nil
}

// page applies the n and last query parameters to sorted items and sets
// the Link header of the next page.
func page(w http.ResponseWriter, req *http.Request, items []string) ([]string, *regError) {
	q := req.URL.Query()
	if last := q.Get("last"); last != "" {
		i := sort.SearchStrings(items, last)
		for i < len(items) && items[i] <= last {
			i++
		}
		items = items[i:]
	}
	if ns := q.Get("n"); ns != "" {
		n, err := strconv.Atoi(ns)
		if err != nil || n < 0 {
			return nil, fail(http.StatusBadRequest, "PAGINATION_NUMBER_INVALID", "n must be a whole number, got %q", ns)
		}
		if n < len(items) {
			items = items[:n]
			if n > 0 {
				w.Header().Set("Link", fmt.Sprintf(`<%s?n=%d&last=%s>; rel="next"`, req.URL.Path, n, items[n-1]))
			}
		}
	}
	if items == nil {
		items = []string{}
	}
	return items, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	body, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

func (s *Store) serveCatalog(w http.ResponseWriter, req *http.Request) *regError {
	if req.Method != http.MethodGet {
		return unsupported(req)
	}
	names, err := s.repos()
	if err != nil {
		return internal(err)
	}
	names, rerr := page(w, req, names)
	if rerr != nil {
		return rerr
	}
	writeJSON(w, map[string]any{"repositories": names})
	return nil
}

func (s *Store) repoExists(name string) bool {
	_, err := os.Stat(s.repoPath(name) + "/_manifests")
	return err == nil
}

func nameUnknown(name string) *regError {
	return fail(http.StatusNotFound, "NAME_UNKNOWN", "repository %s is not known", name)
}

func (s *Store) serveTags(w http.ResponseWriter, req *http.Request, r route) *regError {
	if req.Method != http.MethodGet {
		return unsupported(req)
	}
	if !s.repoExists(r.name) {
		return nameUnknown(r.name)
	}
	tags, err := s.tags(r.name)
	if err != nil {
		return internal(err)
	}
	list := make([]string, 0, len(tags))
	for t := range tags {
		list = append(list, t)
	}
	sort.Strings(list)
	list, rerr := page(w, req, list)
	if rerr != nil {
		return rerr
	}
	writeJSON(w, map[string]any{"name": r.name, "tags": list})
	return nil
}

// resolve turns a manifest reference (a tag or digest) of repository name
// into its digest and media type.
func (s *Store) resolve(name, ref string) (digest, mediaType string, rerr *regError) {
	digest = ref
	if !digestRE.MatchString(ref) {
		b, err := os.ReadFile(s.tagPath(name, ref))
		if errors.Is(err, fs.ErrNotExist) {
			if !s.repoExists(name) {
				return "", "", nameUnknown(name)
			}
			return "", "", fail(http.StatusNotFound, "MANIFEST_UNKNOWN", "%s has no tag %s", name, ref)
		}
		if err != nil {
			return "", "", internal(err)
		}
		digest = strings.TrimSpace(string(b))
	}
	mt, err := os.ReadFile(s.linkPath(name, digest))
	if errors.Is(err, fs.ErrNotExist) {
		if !s.repoExists(name) {
			return "", "", nameUnknown(name)
		}
		return "", "", fail(http.StatusNotFound, "MANIFEST_UNKNOWN", "%s has no manifest %s", name, digest)
	}
	if err != nil {
		return "", "", internal(err)
	}
	return digest, string(mt), nil
}

func (s *Store) serveManifest(w http.ResponseWriter, req *http.Request, r route) *regError {
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		digest, mt, rerr := s.resolve(r.name, r.ref)
		if rerr != nil {
			return rerr
		}
		body, err := os.ReadFile(s.blobPath(digest))
		if errors.Is(err, fs.ErrNotExist) {
			return fail(http.StatusNotFound, "MANIFEST_UNKNOWN", "%s has no manifest %s", r.name, digest)
		}
		if err != nil {
			return internal(err)
		}
		w.Header().Set("Content-Type", mt)
		w.Header().Set("Docker-Content-Digest", digest)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		if req.Method == http.MethodGet {
			w.Write(body)
		}
		return nil
	case http.MethodPut:
		return s.putManifest(w, req, r)
	case http.MethodDelete:
		return s.deleteManifest(w, r)
	}
	return unsupported(req)
}

func (s *Store) putManifest(w http.ResponseWriter, req *http.Request, r route) *regError {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxManifestBytes+1))
	if err != nil {
		return fail(http.StatusBadRequest, "MANIFEST_INVALID", "reading the manifest: %v", err)
	}
	if len(body) > maxManifestBytes {
		return fail(http.StatusRequestEntityTooLarge, "SIZE_INVALID", "a manifest is at most %d bytes", maxManifestBytes)
	}
	sum := sha256.Sum256(body)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	isTag := !digestRE.MatchString(r.ref)
	if !isTag && r.ref != digest {
		return fail(http.StatusBadRequest, "DIGEST_INVALID", "the manifest's digest is %s, not %s", digest, r.ref)
	}
	mt := req.Header.Get("Content-Type")
	var head struct {
		MediaType string `json:"mediaType"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return fail(http.StatusBadRequest, "MANIFEST_INVALID", "the manifest is not JSON: %v", err)
	}
	if mt == "" {
		mt = head.MediaType
	}
	if mt == "" || strings.ContainsAny(mt, "\r\n") {
		return fail(http.StatusBadRequest, "MANIFEST_INVALID", "the manifest's media type is missing: send it as Content-Type")
	}
	refs, err := manifestRefs(body)
	if err != nil {
		return fail(http.StatusBadRequest, "MANIFEST_INVALID", "%v", err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range refs {
		if _, err := os.Stat(s.blobPath(d)); err != nil {
			return fail(http.StatusBadRequest, "MANIFEST_BLOB_UNKNOWN", "the manifest references %s, which is not in the store: push it first", d)
		}
	}
	if isTag && req.Header.Get("If-None-Match") == "*" {
		if b, err := os.ReadFile(s.tagPath(r.name, r.ref)); err == nil && strings.TrimSpace(string(b)) != digest {
			return fail(http.StatusPreconditionFailed, "DENIED", "tag %s of %s exists already (If-None-Match: *)", r.ref, r.name)
		}
	}
	if _, err := os.Stat(s.blobPath(digest)); err != nil {
		if err := writeAtomic(s.blobPath(digest), body); err != nil {
			return internal(err)
		}
	}
	if err := writeAtomic(s.linkPath(r.name, digest), []byte(mt)); err != nil {
		return internal(err)
	}
	if isTag {
		if err := writeAtomic(s.tagPath(r.name, r.ref), []byte(digest+"\n")); err != nil {
			return internal(err)
		}
	}
	w.Header().Set("Location", "/v2/"+r.name+"/manifests/"+digest)
	w.Header().Set("Docker-Content-Digest", digest)
	w.WriteHeader(http.StatusCreated)
	return nil
}

// deleteManifest deletes a tag, or a manifest by digest with every tag
// naming it; the blobs only it referenced go at once, unless a push in
// flight may be about to use them (GC takes those later).
func (s *Store) deleteManifest(w http.ResponseWriter, r route) *regError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !digestRE.MatchString(r.ref) {
		err := os.Remove(s.tagPath(r.name, r.ref))
		if errors.Is(err, fs.ErrNotExist) {
			return fail(http.StatusNotFound, "MANIFEST_UNKNOWN", "%s has no tag %s", r.name, r.ref)
		}
		if err != nil {
			return internal(err)
		}
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	link := s.linkPath(r.name, r.ref)
	info, err := os.Stat(link)
	if errors.Is(err, fs.ErrNotExist) {
		return fail(http.StatusNotFound, "MANIFEST_UNKNOWN", "%s has no manifest %s", r.name, r.ref)
	}
	if err != nil {
		return internal(err)
	}
	tags, err := s.tags(r.name)
	if err != nil {
		return internal(err)
	}
	for t, d := range tags {
		if d == r.ref {
			if err := os.Remove(s.tagPath(r.name, t)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return internal(err)
			}
		}
	}
	if err := os.Remove(link); err != nil {
		return internal(err)
	}
	candidates := []string{r.ref}
	if body, err := os.ReadFile(s.blobPath(r.ref)); err == nil {
		if refs, err := manifestRefs(body); err == nil {
			candidates = append(candidates, refs...)
		}
	}
	if err := s.sweepLocked(candidates, info.ModTime()); err != nil {
		s.log.Error("image store: sweeping a deleted manifest's blobs (GC will retry)", "manifest", r.ref, "err", err)
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

func (s *Store) serveBlob(w http.ResponseWriter, req *http.Request, r route) *regError {
	switch req.Method {
	case http.MethodHead, http.MethodGet:
	case http.MethodDelete:
		return fail(http.StatusMethodNotAllowed, "UNSUPPORTED", "blobs are removed by garbage collection once no manifest references them; delete the manifest")
	default:
		return unsupported(req)
	}
	f, err := os.Open(s.blobPath(r.ref))
	if errors.Is(err, fs.ErrNotExist) {
		return fail(http.StatusNotFound, "BLOB_UNKNOWN", "blob %s is not in the store", r.ref)
	}
	if err != nil {
		return internal(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return internal(err)
	}
	w.Header().Set("Docker-Content-Digest", r.ref)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Etag", `"`+r.ref+`"`)
	if req.Method == http.MethodHead {
		// A push asks whether a blob is here before it skips uploading
		// it: keep it from a manifest delete's sweep for the grace.
		s.markSeen(r.ref)
		w.Header().Set("Content-Length", strconv.FormatInt(info.Size(), 10))
		w.WriteHeader(http.StatusOK)
		return nil
	}
	http.ServeContent(w, req, "", time.Time{}, f)
	return nil
}

func (s *Store) uploadLocation(w http.ResponseWriter, name, id string, size int64) {
	end := size - 1
	if end < 0 {
		end = 0
	}
	w.Header().Set("Location", "/v2/"+name+"/blobs/uploads/"+id)
	w.Header().Set("Docker-Upload-UUID", id)
	w.Header().Set("Range", fmt.Sprintf("0-%d", end))
}

func (s *Store) blobCreated(w http.ResponseWriter, name, digest string) {
	w.Header().Set("Location", "/v2/"+name+"/blobs/"+digest)
	w.Header().Set("Docker-Content-Digest", digest)
	w.WriteHeader(http.StatusCreated)
}

func (s *Store) serveUploads(w http.ResponseWriter, req *http.Request, r route) *regError {
	if req.Method != http.MethodPost {
		return unsupported(req)
	}
	q := req.URL.Query()
	if mount := q.Get("mount"); mount != "" && digestRE.MatchString(mount) {
		if _, err := s.blobSize(mount); err == nil {
			s.markSeen(mount)
			s.blobCreated(w, r.name, mount)
			return nil
		}
		// Not here: answer with an upload session, as the spec says.
	}
	digest := q.Get("digest")
	if digest != "" && !digestRE.MatchString(digest) {
		return fail(http.StatusBadRequest, "DIGEST_INVALID", "%v", errDigest)
	}
	id, u, err := s.newUpload()
	if err != nil {
		return internal(err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if digest == "" {
		s.uploadLocation(w, r.name, id, 0)
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	// A monolithic upload: the body is the blob.
	defer s.dropUpload(id)
	if err := u.appendLocked(req.Body); err != nil {
		return fail(http.StatusBadRequest, "BLOB_UPLOAD_INVALID", "reading the blob: %v", err)
	}
	if err := s.finishLocked(u, digest); err != nil {
		return finishError(err)
	}
	s.blobCreated(w, r.name, digest)
	return nil
}

func finishError(err error) *regError {
	if errors.Is(err, errDigestMismatch) {
		return fail(http.StatusBadRequest, "DIGEST_INVALID", "%v", err)
	}
	return internal(err)
}

func (s *Store) serveUpload(w http.ResponseWriter, req *http.Request, r route) *regError {
	u := s.getUpload(r.ref)
	if u == nil {
		return fail(http.StatusNotFound, "BLOB_UPLOAD_UNKNOWN", "upload %s is not in progress (finished, cancelled, or lost in a restart): start again", r.ref)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done {
		return fail(http.StatusNotFound, "BLOB_UPLOAD_UNKNOWN", "upload %s is over: start again", r.ref)
	}
	switch req.Method {
	case http.MethodGet:
		s.uploadLocation(w, r.name, r.ref, u.size)
		w.WriteHeader(http.StatusNoContent)
		return nil
	case http.MethodPatch:
		if cr := req.Header.Get("Content-Range"); cr != "" {
			var start, end int64
			if _, err := fmt.Sscanf(cr, "%d-%d", &start, &end); err != nil || start != u.size {
				return fail(http.StatusRequestedRangeNotSatisfiable, "BLOB_UPLOAD_INVALID", "Content-Range %q does not continue the %d bytes uploaded", cr, u.size)
			}
		}
		if err := u.appendLocked(req.Body); err != nil {
			s.dropUpload(r.ref)
			return fail(http.StatusBadRequest, "BLOB_UPLOAD_INVALID", "reading the chunk: %v", err)
		}
		s.uploadLocation(w, r.name, r.ref, u.size)
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusAccepted)
		return nil
	case http.MethodPut:
		digest := req.URL.Query().Get("digest")
		if !digestRE.MatchString(digest) {
			return fail(http.StatusBadRequest, "DIGEST_INVALID", "%v", errDigest)
		}
		defer s.dropUpload(r.ref)
		if err := u.appendLocked(req.Body); err != nil {
			return fail(http.StatusBadRequest, "BLOB_UPLOAD_INVALID", "reading the chunk: %v", err)
		}
		if err := s.finishLocked(u, digest); err != nil {
			return finishError(err)
		}
		s.blobCreated(w, r.name, digest)
		return nil
	case http.MethodDelete:
		u.abortLocked()
		s.dropUpload(r.ref)
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return unsupported(req)
}

// User is the user name of the store's basic-auth credential.
const User = "svc"

// authorized reports whether req carries the store's password (basic auth
// as User, or a bearer token), compared in constant time; a store without
// a password serves everyone.
func (s *Store) authorized(req *http.Request) bool {
	if s.password == "" {
		return true
	}
	got := ""
	if user, pass, ok := req.BasicAuth(); ok && user == User {
		got = pass
	} else if tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer "); ok {
		got = tok
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.password)) == 1
}
