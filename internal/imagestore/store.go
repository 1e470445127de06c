// Package imagestore is the managed image store: an OCI distribution
// registry (an http.Handler) kept on disk under one directory, which
// `svc dev` serves on loopback for worlds and imported images.
//
// Layout under the directory:
//
//	blobs/sha256/<hex>                    every blob and manifest, content-addressed
//	uploads/<id>                          blob uploads in progress
//	repos/<name>/_manifests/sha256/<hex>  a manifest is in the repository; the file holds its media type
//	repos/<name>/_tags/<tag>              the digest the tag names
//
// Every file that is read as a whole (a blob, a manifest's link, a tag) is
// written to a temporary file and renamed into place after fsync, so a
// crash leaves the previous state or the new one, never half of one. A
// push writes its blobs, then its manifest, then (with the manifest or
// after it) its tag: a crash mid-push leaves the previous tag, and the
// blobs it had uploaded are orphans that GC removes.
package imagestore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultGrace is how long GC leaves an unreferenced blob, an untagged
// manifest or an upload alone: the time a push may take between its
// first blob and its tag.
const DefaultGrace = 15 * time.Minute

// maxManifestBytes bounds a manifest body (distribution's own limit is 4 MiB).
const maxManifestBytes = 4 << 20

// Options tune a Store.
type Options struct {
	// Grace is how long GC leaves an unreferenced blob, untagged manifest
	// or idle upload; 0 means DefaultGrace, negative means none (tests).
	Grace time.Duration
	// Logger receives GC's removals and internal errors; nil discards.
	Logger *slog.Logger
	// Password, when set, is the credential every request must carry
	// (HTTP basic auth as user "svc", or a bearer token): on loopback the
	// store is reachable by whatever shares the host's network, a job
	// that reaches the host's loopback included, and must not serve them.
	Password string
}

// Store is a disk-backed OCI registry. It is an http.Handler serving the
// distribution API at /v2/. It is safe for concurrent use; one directory
// must be served by one Store at a time.
type Store struct {
	password string
	dir      string
	grace    time.Duration
	log      *slog.Logger

	// mu orders what changes which blobs are referenced: manifest and tag
	// writes and deletes, a blob's arrival, and GC.
	mu sync.Mutex
	// seen is when a blob was last uploaded or found present by a HEAD:
	// a push in flight may be about to reference it, so a manifest
	// delete's sweep leaves it to GC, which waits out the grace.
	seen map[string]time.Time

	upMu    sync.Mutex
	uploads map[string]*upload
}

// Open opens (creating) the store under dir and collects garbage with no
// grace: nothing can be in flight before the store serves.
func Open(dir string, o Options) (*Store, error) {
	for _, d := range []string{"blobs/sha256", "uploads", "repos"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("image store: %w", err)
		}
	}
	grace := o.Grace
	switch {
	case grace == 0:
		grace = DefaultGrace
	case grace < 0:
		grace = 0
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{password: o.Password, dir: dir, grace: grace, log: log, seen: map[string]time.Time{}, uploads: map[string]*upload{}}
	if _, err := s.gc(0); err != nil {
		return nil, fmt.Errorf("image store: collecting garbage at open: %w", err)
	}
	return s, nil
}

// Dir is the directory the store keeps its files in.
func (s *Store) Dir() string { return s.dir }

func (s *Store) blobPath(digest string) string {
	return filepath.Join(s.dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
}

func (s *Store) repoPath(name string) string {
	return filepath.Join(s.dir, "repos", filepath.FromSlash(name))
}

func (s *Store) linkPath(name, digest string) string {
	return filepath.Join(s.repoPath(name), "_manifests", "sha256", strings.TrimPrefix(digest, "sha256:"))
}

func (s *Store) tagPath(name, tag string) string {
	return filepath.Join(s.repoPath(name), "_tags", tag)
}

// writeAtomic writes data to path through a synced temporary file in the
// same directory and a rename, then syncs the directory.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func newID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// blobSize is the size of a stored blob, or an fs.ErrNotExist error.
func (s *Store) blobSize(digest string) (int64, error) {
	fi, err := os.Stat(s.blobPath(digest))
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// markSeen notes that a push may be about to reference digest.
func (s *Store) markSeen(digest string) {
	s.mu.Lock()
	s.seen[digest] = time.Now()
	s.mu.Unlock()
}

// manifestRefs are the digests a manifest references: an image's config
// and layers, an index's manifests, and a subject.
func manifestRefs(body []byte) ([]string, error) {
	var m struct {
		Config *struct {
			Digest string `json:"digest"`
		} `json:"config"`
		Layers []struct {
			Digest string `json:"digest"`
		} `json:"layers"`
		Manifests []struct {
			Digest string `json:"digest"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	var out []string
	if m.Config != nil {
		out = append(out, m.Config.Digest)
	}
	for _, l := range m.Layers {
		out = append(out, l.Digest)
	}
	for _, c := range m.Manifests {
		out = append(out, c.Digest)
	}
	for _, d := range out {
		if !digestRE.MatchString(d) {
			return nil, fmt.Errorf("reference %q is not a sha256 digest", d)
		}
	}
	return out, nil
}

// repos lists the repository names that hold a manifest, sorted.
func (s *Store) repos() ([]string, error) {
	root := filepath.Join(s.dir, "repos")
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if d.Name() == "_tags" {
			return fs.SkipDir
		}
		if d.Name() == "_manifests" {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			out = append(out, filepath.ToSlash(rel))
			return fs.SkipDir
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// links lists the manifest digests in repository name, with their link
// files' modification times.
func (s *Store) links(name string) (map[string]time.Time, error) {
	dir := filepath.Join(s.repoPath(name), "_manifests", "sha256")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Time, len(ents))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out["sha256:"+e.Name()] = info.ModTime()
	}
	return out, nil
}

// tags maps each tag of repository name to its digest.
func (s *Store) tags(name string) (map[string]string, error) {
	dir := filepath.Join(s.repoPath(name), "_tags")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ents))
	for _, e := range ents {
		if !tagRE.MatchString(e.Name()) {
			continue // a temporary file of a write in progress or interrupted
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if d := strings.TrimSpace(string(b)); digestRE.MatchString(d) {
			out[e.Name()] = d
		}
	}
	return out, nil
}

// GCStats says what a collection removed.
type GCStats struct {
	Blobs            int   // unreferenced blobs removed
	Bytes            int64 // their size
	UntaggedManifest int   // untagged manifests removed
	Uploads          int   // abandoned uploads removed
}

// GC removes what no tag reaches: untagged manifests, blobs no kept
// manifest references, and abandoned uploads, each once older than the
// grace (a push in flight is left alone). Run it at start (Open does) and
// after prunes.
func (s *Store) GC() (GCStats, error) { return s.gc(s.grace) }

func (s *Store) gc(grace time.Duration) (GCStats, error) {
	var st GCStats
	cutoff := time.Now().Add(-grace)

	// Abandoned uploads: those no live upload holds, past the grace.
	// An upload busy with a request is live whatever its age; upMu is
	// never held while taking an upload's lock (requests take them the
	// other way round).
	s.upMu.Lock()
	all := make(map[string]*upload, len(s.uploads))
	for id, u := range s.uploads {
		all[id] = u
	}
	s.upMu.Unlock()
	live := make(map[string]bool, len(all))
	for id, u := range all {
		if u.last().Before(cutoff) && u.mu.TryLock() {
			u.abortLocked()
			u.mu.Unlock()
			s.dropUpload(id)
		} else {
			live[id] = true
		}
	}
	ups, err := os.ReadDir(filepath.Join(s.dir, "uploads"))
	if err != nil {
		return st, err
	}
	for _, e := range ups {
		if live[e.Name()] {
			continue
		}
		if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
			if os.Remove(filepath.Join(s.dir, "uploads", e.Name())) == nil {
				st.Uploads++
			}
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for d, t := range s.seen {
		if t.Before(cutoff) {
			delete(s.seen, d)
		}
	}
	marked, removed, err := s.markLocked(cutoff)
	if err != nil {
		return st, err
	}
	st.UntaggedManifest = removed
	ents, err := os.ReadDir(filepath.Join(s.dir, "blobs", "sha256"))
	if err != nil {
		return st, err
	}
	for _, e := range ents {
		d := "sha256:" + e.Name()
		if marked[d] {
			continue
		}
		if _, ok := s.seen[d]; ok {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		if os.Remove(filepath.Join(s.dir, "blobs", "sha256", e.Name())) == nil {
			st.Blobs++
			st.Bytes += info.Size()
		}
	}
	if st != (GCStats{}) {
		s.log.Info("image store: garbage collected", "blobs", st.Blobs, "bytes", st.Bytes,
			"untaggedManifests", st.UntaggedManifest, "uploads", st.Uploads)
	}
	return st, nil
}

// markLocked returns every digest a kept manifest reaches (the manifests
// themselves included). A manifest is kept when a tag names it, when a
// kept index lists it, or when its link is newer than cutoff; the links
// of the others are removed (their number is the second result). s.mu is
// held.
func (s *Store) markLocked(cutoff time.Time) (map[string]bool, int, error) {
	marked := map[string]bool{}
	names, err := s.repos()
	if err != nil {
		return nil, 0, err
	}
	removed := 0
	for _, name := range names {
		links, err := s.links(name)
		if err != nil {
			return nil, 0, err
		}
		tags, err := s.tags(name)
		if err != nil {
			return nil, 0, err
		}
		keep := map[string]bool{}
		var queue []string
		for d, t := range links {
			if t.After(cutoff) {
				queue = append(queue, d)
			}
		}
		for _, d := range tags {
			queue = append(queue, d)
		}
		for len(queue) > 0 {
			d := queue[0]
			queue = queue[1:]
			if keep[d] {
				continue
			}
			keep[d] = true
			marked[d] = true
			body, err := os.ReadFile(s.blobPath(d))
			if err != nil {
				continue // a dangling link; the manifest reads as unknown
			}
			refs, err := manifestRefs(body)
			if err != nil {
				continue
			}
			for _, r := range refs {
				marked[r] = true
				if _, isManifest := links[r]; isManifest {
					queue = append(queue, r)
				}
			}
		}
		for d := range links {
			if !keep[d] {
				if os.Remove(s.linkPath(name, d)) == nil {
					removed++
				}
			}
		}
	}
	return marked, removed, nil
}

// sweepLocked removes those of candidates no manifest reaches any more
// and no push in flight may be about to use (seen after since). s.mu is
// held.
func (s *Store) sweepLocked(candidates []string, since time.Time) error {
	marked, _, err := s.markLocked(time.Time{})
	if err != nil {
		return err
	}
	for _, d := range candidates {
		if marked[d] {
			continue
		}
		if t, ok := s.seen[d]; ok && t.After(since) {
			continue
		}
		if err := os.Remove(s.blobPath(d)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// upload is a blob upload in progress: the file it appends to and the
// running digest of what was appended.
type upload struct {
	mu      sync.Mutex
	f       *os.File
	h       hash.Hash
	size    int64
	touched atomic.Int64 // unix nanoseconds of the last append's start or end
	done    bool
}

func (u *upload) last() time.Time { return time.Unix(0, u.touched.Load()) }

func (u *upload) touch() { u.touched.Store(time.Now().UnixNano()) }

func (u *upload) abortLocked() {
	if !u.done {
		u.done = true
		u.f.Close()
		os.Remove(u.f.Name())
	}
}

// appendLocked appends r to the upload. A failed append aborts it: the
// file and the digest may hold different prefixes. u.mu is held.
func (u *upload) appendLocked(r io.Reader) error {
	u.touch()
	n, err := io.Copy(io.MultiWriter(u.f, u.h), r)
	u.size += n
	u.touch()
	if err != nil {
		u.abortLocked()
	}
	return err
}

func (s *Store) newUpload() (string, *upload, error) {
	id := newID()
	f, err := os.OpenFile(filepath.Join(s.dir, "uploads", id), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", nil, err
	}
	u := &upload{f: f, h: sha256.New()}
	u.touch()
	s.upMu.Lock()
	s.uploads[id] = u
	s.upMu.Unlock()
	return id, u, nil
}

func (s *Store) getUpload(id string) *upload {
	s.upMu.Lock()
	defer s.upMu.Unlock()
	return s.uploads[id]
}

func (s *Store) dropUpload(id string) {
	s.upMu.Lock()
	delete(s.uploads, id)
	s.upMu.Unlock()
}

// errDigestMismatch is a finished upload whose content is not the digest
// the client named.
var errDigestMismatch = errors.New("digest mismatch")

// finishLocked checks the upload's content against digest and moves it
// into the blob store; the upload is over either way. u.mu is held.
func (s *Store) finishLocked(u *upload, digest string) error {
	if got := "sha256:" + hex.EncodeToString(u.h.Sum(nil)); got != digest {
		u.abortLocked()
		return fmt.Errorf("%w: the content uploaded is %s, not %s", errDigestMismatch, got, digest)
	}
	err := u.f.Sync()
	if cerr := u.f.Close(); err == nil {
		err = cerr
	}
	u.done = true
	if err != nil {
		os.Remove(u.f.Name())
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[digest] = time.Now()
	if err := os.Rename(u.f.Name(), s.blobPath(digest)); err != nil {
		os.Remove(u.f.Name())
		return err
	}
	return syncDir(filepath.Dir(s.blobPath(digest)))
}
