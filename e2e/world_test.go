package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"svc/internal/integrations/images"
	"svc/internal/testing/testimage"
	"svc/internal/testing/testwait"
	"svc/store"
	"svc/store/sqlite"
)

// The world tests (spec §2.9, §4.8, §6; issue 32 items 4 and 6) drive
// svc dev: sessions from an image built here (testimage), snapshots into
// the managed image store svc dev serves, read back with
// go-containerregistry's remote client as any registry client would.

// worldSession is what the world tests read of a session.
type worldSession struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Session struct {
		ClosedReason string `json:"closedReason"`
		Image        string `json:"image"`
		ImageDigest  string `json:"imageDigest"`
		ComputeID    string `json:"computeId"`
		World        *struct {
			ID      string `json:"id"`
			Version int    `json:"version"`
		} `json:"world"`
		Hibernate bool `json:"hibernate"`
		Snapshots []struct {
			Version int    `json:"version"`
			Ref     string `json:"ref"`
			Reason  string `json:"reason"`
		} `json:"snapshots"`
	} `json:"session"`
}

// snapshotAnswer is POST /sandboxes/:id/snapshot's answer.
type snapshotAnswer struct {
	World          string   `json:"world"`
	Version        int      `json:"version"`
	Tag            string   `json:"tag"`
	Digest         string   `json:"digest"`
	Ref            string   `json:"ref"`
	Bytes          int64    `json:"bytes"`
	PrunedVersions []string `json:"prunedVersions"`
	PruneError     string   `json:"pruneError"`
}

// worldAnswer is GET /worlds/:id's answer.
type worldAnswer struct {
	ID       string `json:"id"`
	Versions []struct {
		Version int    `json:"version"`
		Tag     string `json:"tag"`
		Digest  string `json:"digest"`
		Ref     string `json:"ref"`
	} `json:"versions"`
}

// worldDev starts svc dev for world sessions: layouts under imageDir
// allowed, the image store's address in its log (info level).
func worldDev(t *testing.T, dataDir, imageDir string, extra ...string) *proc {
	t.Helper()
	return sandboxDev(t, dataDir, imageDir, append([]string{"SVC_LOG_LEVEL=info"}, extra...)...)
}

var storeAddrLine = regexp.MustCompile(`image store listening.*?"?addr"?[=:]"?(127\.0\.0\.1:\d+)`)

// storeAddr is the managed image store's address, from svc dev's log.
func storeAddr(t *testing.T, p *proc) string {
	t.Helper()
	var addr string
	testwait.Until(t, 30*time.Second, "svc dev to log its image store's address", func() bool {
		m := storeAddrLine.FindStringSubmatch(p.Stderr() + p.Stdout())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	for _, kv := range p.cmd.Env {
		if data, ok := strings.CutPrefix(kv, "SVC_DATA_DIR="); ok {
			storeCreds.Store(addr, filepath.Join(data, "images", "credential"))
		}
	}
	return addr
}

// storeCreds maps a managed image store's address to the credential file
// svc dev wrote into its data dir (user svc and the password it chose at
// start): the store answers nobody without it.
var storeCreds sync.Map

// devStoreKeychain answers the credential of a store storeAddr found,
// read at each call (a restarted svc dev chooses a new password).
type devStoreKeychain struct{}

func (devStoreKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	f, ok := storeCreds.Load(r.RegistryStr())
	if !ok {
		return authn.Anonymous, nil
	}
	b, err := os.ReadFile(f.(string))
	if err != nil {
		return nil, err
	}
	user, pass, _ := strings.Cut(strings.TrimSpace(string(b)), ":")
	return &authn.Basic{Username: user, Password: pass}, nil
}

// devStore is the registry client's option that authenticates to the
// managed stores of the tests' svc dev.
var devStore = remote.WithAuthFromKeychain(devStoreKeychain{})

// worldRepo is world id's repository of the dev workspace in the store at addr.
func worldRepo(t *testing.T, addr, id string) name.Repository {
	t.Helper()
	repo, err := name.NewRepository(addr+"/"+images.Namespace("default")+"/"+id, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// pull reads tag of repo with the registry client and checks every blob
// of it against its digest (a half version fails here).
func pull(t *testing.T, repo name.Repository, tag string) (v1.Image, error) {
	t.Helper()
	img, err := remote.Image(repo.Tag(tag), devStore)
	if err != nil {
		return nil, err
	}
	if err := validate.Image(img); err != nil {
		t.Errorf("%s:%s does not validate (a half version?): %v", repo, tag, err)
	}
	return img, nil
}

// importImage pushes img into the dev workspace's namespace as `as`
// through POST /images (the body is a docker save tar) and answers its ref.
func importImage(t *testing.T, url string, img v1.Image, as string) string {
	t.Helper()
	tag, err := name.NewTag(as)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tarball.Write(tag, img, &buf); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), "POST", url+"/images?as="+as, &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Ref string `json:"ref"`
	}
	if resp.StatusCode != 201 && resp.StatusCode != 200 || json.Unmarshal(raw, &out) != nil || out.Ref == "" {
		t.Fatalf("POST /images?as=%s = %d %s", as, resp.StatusCode, raw)
	}
	return out.Ref
}

func createWorldSession(t *testing.T, url string, body map[string]any) worldSession {
	t.Helper()
	if body["ttl"] == nil {
		body["ttl"] = 300
	}
	var s worldSession
	var raw json.RawMessage
	if code := call(t, "POST", url+"/sandboxes", body, &raw); code != 201 {
		t.Fatalf("POST /sandboxes %v = %d %s", body, code, raw)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// sh runs command in session id and answers its stdout; a non-zero exit fails t.
func sh(t *testing.T, url, id, command string) string {
	t.Helper()
	var r execResult
	if code := call(t, "POST", url+"/sandboxes/"+id+"/exec", map[string]any{"command": command, "timeoutSec": 300}, &r); code != 200 || r.ExitCode != 0 {
		t.Fatalf("exec %q = %d exit %d stdout %q stderr %q", command, code, r.ExitCode, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

func snapshotSession(t *testing.T, url, id string) snapshotAnswer {
	t.Helper()
	var a snapshotAnswer
	var raw json.RawMessage
	if code := call(t, "POST", url+"/sandboxes/"+id+"/snapshot", nil, &raw); code != 201 {
		t.Fatalf("POST /sandboxes/%s/snapshot = %d %s", id, code, raw)
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	if a.PrunedVersions == nil {
		t.Errorf("snapshot answer %s has no prunedVersions list", raw)
	}
	return a
}

func closeSession(t *testing.T, url, id string, body any) worldSession {
	t.Helper()
	var s worldSession
	if code := call(t, "POST", url+"/sandboxes/"+id+"/close", body, &s); code != 200 || s.Status != "succeeded" {
		t.Fatalf("close %s = %d %+v, want 200 succeeded", id, code, s)
	}
	return s
}

func getWorld(t *testing.T, url, id string) worldAnswer {
	t.Helper()
	var w worldAnswer
	if code := call(t, "GET", url+"/worlds/"+id, nil, &w); code != 200 {
		t.Fatalf("GET /worlds/%s = %d", id, code)
	}
	return w
}

func versionNumbers(w worldAnswer) []int {
	var out []int
	for _, v := range w.Versions {
		out = append(out, v.Version)
	}
	return out
}

var pinned = regexp.MustCompile(`^([a-z0-9._-]+):v(\d+)@sha256:[0-9a-f]{64}$`)

// worldFiles is what every session of world shop checks it sees.
const worldFilesCheck = `cat /srv/app/a.txt; stat -c '%a %u:%g' /srv/app/secret; readlink /srv/app/link; ` +
	`test -e /etc/motd && echo motd-present || echo motd-gone`

const worldFilesWant = "one\n640 0:0\na.txt\nmotd-gone\n"

// TestWorldSnapshotsAndHibernation (spec §2.9, §4.8, §6; issue 32 items 4
// and 6) through svc dev: a world session from an imported image writes
// files (a chmod 640 file, a symbolic link, a deletion), snapshots v1, and
// close hibernates it as v2; a new session on the world sees them with
// their modes; its snapshot is pinned world:v3@sha256 and pulled with a
// registry client with its digest; five close-hibernate and reopen cycles
// keep every file and its mode (e2b#884); a session from version 1 sees
// v1 (rollback); expiry hibernates too; run.snapshotted is in the event
// log with causedBy agent:<id>:<conversation> for an agent's session.
func TestWorldSnapshotsAndHibernation(t *testing.T) {
	imageDir, _ := busyboxLayout(t)
	data := t.TempDir()
	dev := worldDev(t, data, imageDir)
	addr := storeAddr(t, dev)
	ref := importImage(t, dev.URL, testimage.Busybox(t), "busybox:1")

	s1 := createWorldSession(t, dev.URL, map[string]any{"image": ref, "world": map[string]any{"id": "shop"},
		"agent": map[string]any{"id": "agent-7", "conversation": "conv-1"}})
	if s1.Session.World == nil || s1.Session.World.ID != "shop" || s1.Session.Image != ref || !s1.Session.Hibernate {
		t.Fatalf("world session = %+v, want world shop, image %s, hibernate on", s1.Session, ref)
	}
	sh(t, dev.URL, s1.ID, `mkdir -p /srv/app && echo one > /srv/app/a.txt && echo secret > /srv/app/secret && `+
		`chmod 640 /srv/app/secret && ln -s a.txt /srv/app/link && rm /etc/motd`)
	v1a := snapshotSession(t, dev.URL, s1.ID)
	if v1a.World != "shop" || v1a.Version != 1 || v1a.Tag != "v1" || !pinned.MatchString(v1a.Ref) || !strings.HasSuffix(v1a.Ref, "@"+v1a.Digest) ||
		len(v1a.PrunedVersions) != 0 || v1a.Bytes <= 0 {
		t.Errorf("first snapshot = %+v, want shop v1 pinned by digest, nothing pruned", v1a)
	}
	closed := closeSession(t, dev.URL, s1.ID, nil)
	if n := len(closed.Session.Snapshots); n != 2 || closed.Session.Snapshots[0].Reason != "request" || closed.Session.Snapshots[1].Reason != "close" ||
		closed.Session.Snapshots[1].Version != 2 {
		t.Errorf("closed session's snapshots = %+v, want v1 (request) and v2 (close)", closed.Session.Snapshots)
	}

	// A new session on the world starts from v2 and sees the files.
	s2 := createWorldSession(t, dev.URL, map[string]any{"world": map[string]any{"id": "shop"}})
	if !strings.HasPrefix(s2.Session.Image, "shop:v2@sha256:") {
		t.Errorf("a session of world shop started from %q, want its latest, shop:v2@sha256:...", s2.Session.Image)
	}
	if got := sh(t, dev.URL, s2.ID, worldFilesCheck); got != worldFilesWant {
		t.Errorf("a new session of the world sees %q, want %q", got, worldFilesWant)
	}
	sh(t, dev.URL, s2.ID, `echo two > /srv/app/b.txt`)
	v3 := snapshotSession(t, dev.URL, s2.ID)
	m := pinned.FindStringSubmatch(v3.Ref)
	if v3.Version != 3 || m == nil || m[1] != "shop" || m[2] != "3" || v3.Ref != "shop:v3@"+v3.Digest {
		t.Errorf("second session's snapshot = %+v, want shop:v3@%s", v3, v3.Digest)
	}
	closeSession(t, dev.URL, s2.ID, map[string]any{"snapshot": false})

	// Every version pulls with a registry client, its digest the one answered.
	repo := worldRepo(t, addr, "shop")
	w := getWorld(t, dev.URL, "shop")
	if got := versionNumbers(w); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("GET /worlds/shop versions %v, want [1 2 3] (close with snapshot:false publishes nothing)", got)
	}
	for _, v := range w.Versions {
		img, err := pull(t, repo, v.Tag)
		if err != nil {
			t.Fatalf("pulling %s:%s: %v", repo, v.Tag, err)
		}
		d, _ := img.Digest()
		if d.String() != v.Digest {
			t.Errorf("%s:%s pulled digest %s, want %s", repo, v.Tag, d, v.Digest)
		}
		if byDigest, err := remote.Image(repo.Digest(v.Digest), devStore); err != nil {
			t.Errorf("pulling %s@%s: %v", repo, v.Digest, err)
		} else if ls, _ := byDigest.Layers(); v.Version == 3 && len(ls) != 3 {
			t.Errorf("v3 has %d layers, want 3: busybox, then one layer per session appended", len(ls))
		}
	}
	if w.Versions[0].Digest != v1a.Digest || w.Versions[2].Digest != v3.Digest {
		t.Errorf("listed digests %s, %s, want the snapshots' %s, %s", w.Versions[0].Digest, w.Versions[2].Digest, v1a.Digest, v3.Digest)
	}

	// Five close-hibernate and reopen cycles keep every file and its mode.
	want := worldFilesWant + "two\n"
	cycleModes := []string{"600", "640", "604", "700", "755"}
	for i, mode := range cycleModes {
		s := createWorldSession(t, dev.URL, map[string]any{"world": map[string]any{"id": "shop"}})
		got := sh(t, dev.URL, s.ID, worldFilesCheck+`; cat /srv/app/b.txt; for f in /srv/cycle/*; do [ -e "$f" ] && stat -c '%n %a %s' "$f"; done; true`)
		if got != want {
			t.Fatalf("cycle %d: the session sees\n%s\nwant\n%s", i+1, got, want)
		}
		sh(t, dev.URL, s.ID, fmt.Sprintf(`mkdir -p /srv/cycle && printf 'cycle %d' > /srv/cycle/c%d && chmod %s /srv/cycle/c%d`, i+1, i+1, mode, i+1))
		want += fmt.Sprintf("/srv/cycle/c%d %s %d\n", i+1, mode, len(fmt.Sprintf("cycle %d", i+1)))
		closed := closeSession(t, dev.URL, s.ID, nil)
		if n := len(closed.Session.Snapshots); n != 1 || closed.Session.Snapshots[0].Version != 4+i || closed.Session.Snapshots[0].Reason != "close" {
			t.Errorf("cycle %d: the close published %+v, want v%d (close)", i+1, closed.Session.Snapshots, 4+i)
		}
	}
	last := createWorldSession(t, dev.URL, map[string]any{"world": map[string]any{"id": "shop"}})
	if got := sh(t, dev.URL, last.ID, worldFilesCheck+`; cat /srv/app/b.txt; for f in /srv/cycle/*; do stat -c '%n %a %s' "$f"; done`); got != want {
		t.Errorf("after five cycles the session sees\n%s\nwant\n%s", got, want)
	}
	closeSession(t, dev.URL, last.ID, map[string]any{"snapshot": false})

	// Rollback: a session from version 1 sees v1's files and nothing later.
	rb := createWorldSession(t, dev.URL, map[string]any{"world": map[string]any{"id": "shop", "version": 1}})
	if rb.Session.Image != v1a.Ref {
		t.Errorf("a session from version 1 started from %q, want %q", rb.Session.Image, v1a.Ref)
	}
	if got := sh(t, dev.URL, rb.ID, worldFilesCheck+`; test -e /srv/app/b.txt || echo no-b; test -e /srv/cycle || echo no-cycles`); got != worldFilesWant+"no-b\nno-cycles\n" {
		t.Errorf("a session from version 1 sees %q, want v1's files only", got)
	}
	closeSession(t, dev.URL, rb.ID, map[string]any{"snapshot": false})

	// An adopted environment capability (spec §4.8: a world is one): the
	// session starts from the version it names, read only; its close
	// publishes nothing into the world.
	before := versionNumbers(getWorld(t, dev.URL, "shop"))
	ad := createWorldSession(t, dev.URL, map[string]any{"capability": map[string]any{"id": "shop", "version": "v1"}})
	if ad.Session.Image != v1a.Ref || ad.Session.World != nil || ad.Session.Hibernate {
		t.Errorf("a session adopting shop v1 = image %q world %+v hibernate %v; want %q, no world, no hibernation", ad.Session.Image, ad.Session.World, ad.Session.Hibernate, v1a.Ref)
	}
	if got := sh(t, dev.URL, ad.ID, worldFilesCheck+`; test -e /srv/app/b.txt || echo no-b`); got != worldFilesWant+"no-b\n" {
		t.Errorf("a session adopting v1 sees %q, want v1's files only", got)
	}
	if closed := closeSession(t, dev.URL, ad.ID, nil); len(closed.Session.Snapshots) != 0 {
		t.Errorf("closing an adopting session published %+v, want nothing", closed.Session.Snapshots)
	}
	if got := versionNumbers(getWorld(t, dev.URL, "shop")); !slices.Equal(got, before) {
		t.Errorf("versions after the adopting session %v, want %v unchanged", got, before)
	}
	var refused struct {
		Error struct{ Message string } `json:"error"`
	}
	if code := call(t, "POST", dev.URL+"/sandboxes", map[string]any{"capability": map[string]any{"id": "shop", "version": "v99"}}, &refused); code != http.StatusNotFound {
		t.Errorf("adopting a version that does not exist = %d %+v, want 404", code, refused)
	}

	// Expiry hibernates too.
	exp := createWorldSession(t, dev.URL, map[string]any{"world": map[string]any{"id": "shop"}, "ttl": 3})
	sh(t, dev.URL, exp.ID, `echo expired > /srv/app/exp.txt`)
	var ended worldSession
	testwait.Until(t, time.Minute, "the short session to expire", func() bool {
		call(t, "GET", dev.URL+"/runs/"+exp.ID, nil, &ended)
		return ended.Status == "succeeded"
	})
	if ended.Session.ClosedReason != "expired" || len(ended.Session.Snapshots) != 1 || ended.Session.Snapshots[0].Reason != "expiry" ||
		ended.Session.Snapshots[0].Version != 9 {
		t.Errorf("the expired session = %s %+v, want expired with v9 published at expiry", ended.Session.ClosedReason, ended.Session.Snapshots)
	}
	if got := versionNumbers(getWorld(t, dev.URL, "shop")); !slices.Equal(got, []int{1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Errorf("versions %v, want 1 to 9 (default keep is 10)", got)
	}

	// run.snapshotted: one per version, causedBy the agent for its session.
	dev.signal(syscall.SIGTERM)
	dev.wait(time.Minute)
	st, err := sqlite.Open(context.Background(), filepath.Join(data, "svc.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.ListEvents(context.Background(), store.EventFilter{Workspace: "default", Type: "run.snapshotted", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 9 {
		t.Errorf("%d run.snapshotted events, want 9 (one per version)", len(evs))
	}
	for _, e := range evs {
		want := ""
		if e.Subject == "run:"+s1.ID {
			want = "agent:agent-7:conv-1"
		}
		if e.CausedBy != want {
			t.Errorf("run.snapshotted of %s has causedBy %q, want %q", e.Subject, e.CausedBy, want)
		}
	}
}

// blobFiles are the blob files of the managed store under data.
func blobFiles(t *testing.T, data string) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(data, "images", "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range ents {
		out["sha256:"+e.Name()] = true
	}
	return out
}

// imageBlobs are the digests of img's manifest, config and layers.
func imageBlobs(t *testing.T, img v1.Image) []string {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	out := []string{d.String(), m.Config.Digest.String()}
	for _, l := range m.Layers {
		out = append(out, l.Digest.String())
	}
	return out
}

// TestWorldRetentionAndCaptureCap (spec §4.8 retention, capture cap,
// hibernation; §6) through svc dev with SVC_WORLD_KEEP_VERSIONS=1 and a
// session from an OCI layout path: the second snapshot prunes v1
// (prunedVersions) and the blob files only v1 used leave the data dir;
// a change set past SVC_WORLD_MAX_CAPTURE_BYTES is refused by name (400),
// and the close's hibernation failing on it does not block teardown: the
// session settles closed and its trajectory has session.snapshot_failed.
func TestWorldRetentionAndCaptureCap(t *testing.T) {
	imageDir, layoutPath := busyboxLayout(t)
	data := t.TempDir()
	dev := worldDev(t, data, imageDir, "SVC_WORLD_KEEP_VERSIONS=1", "SVC_WORLD_MAX_CAPTURE_BYTES=262144")
	addr := storeAddr(t, dev)
	s := createWorldSession(t, dev.URL, map[string]any{"image": layoutPath, "world": map[string]any{"id": "keep"}})
	sh(t, dev.URL, s.ID, `echo first > /root/a`)
	if v := snapshotSession(t, dev.URL, s.ID); v.Version != 1 || len(v.PrunedVersions) != 0 {
		t.Errorf("first snapshot = %+v, want v1, nothing pruned", v)
	}
	repo := worldRepo(t, addr, "keep")
	img1, err := pull(t, repo, "v1")
	if err != nil {
		t.Fatalf("pulling v1: %v", err)
	}
	v1Blobs := imageBlobs(t, img1)
	have := blobFiles(t, data)
	for _, b := range v1Blobs {
		if !have[b] {
			t.Fatalf("blob %s of v1 is not a file of the store", b)
		}
	}
	sh(t, dev.URL, s.ID, `echo second > /root/b`)
	v2 := snapshotSession(t, dev.URL, s.ID)
	if v2.Version != 2 || !slices.Equal(v2.PrunedVersions, []string{"v1"}) || v2.PruneError != "" {
		t.Errorf("second snapshot = %+v, want v2 with prunedVersions [v1]", v2)
	}
	if got := versionNumbers(getWorld(t, dev.URL, "keep")); !slices.Equal(got, []int{2}) {
		t.Errorf("versions after keep 1 = %v, want [2]", got)
	}
	if _, err := remote.Image(repo.Tag("v1"), devStore); err == nil {
		t.Errorf("v1 still pulls after retention pruned it")
	}
	img2, err := pull(t, repo, "v2")
	if err != nil {
		t.Fatalf("pulling v2: %v", err)
	}
	kept := map[string]bool{}
	for _, b := range imageBlobs(t, img2) {
		kept[b] = true
	}
	var only []string
	for _, b := range v1Blobs {
		if !kept[b] {
			only = append(only, b)
		}
	}
	if len(only) < 3 {
		t.Fatalf("v1 has %d blobs of its own (%v), want its manifest, config and layer", len(only), only)
	}
	testwait.Until(t, 30*time.Second, "the blobs only v1 used to leave the data dir", func() bool {
		have := blobFiles(t, data)
		for _, b := range only {
			if have[b] {
				return false
			}
		}
		return true
	})

	// A prune that fails never undoes the snapshot: v2's manifest made
	// immutable (chattr +i: not even root deletes it), v3 is published
	// all the same, the answer says the prune failed, and v3 pulls.
	links, _ := filepath.Glob(filepath.Join(data, "images", "repos", "*", "*", "keep", "_manifests", "sha256", strings.TrimPrefix(v2.Digest, "sha256:")))
	if len(links) != 1 {
		t.Fatalf("v2's manifest link under the data dir: %v, want one", links)
	}
	if out, err := exec.Command("chattr", "+i", links[0]).CombinedOutput(); err != nil {
		t.Fatalf("chattr +i %s: %v %s", links[0], err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", links[0]).Run() })
	sh(t, dev.URL, s.ID, `echo third > /root/c`)
	v3 := snapshotSession(t, dev.URL, s.ID)
	if v3.Version != 3 || v3.PruneError == "" {
		t.Errorf("snapshot with a failing prune = %+v, want v3 published and pruneError saying the prune failed", v3)
	}
	if _, err := pull(t, repo, "v3"); err != nil {
		t.Errorf("v3 does not pull after its prune failed: %v", err)
	}
	if got := versionNumbers(getWorld(t, dev.URL, "keep")); !slices.Contains(got, 3) {
		t.Errorf("versions after a failed prune = %v, want v3 kept", got)
	}
	exec.Command("chattr", "-i", links[0]).Run()
	sh(t, dev.URL, s.ID, `rm /root/c`)

	// Past the capture cap: refused by name; the close still tears down.
	sh(t, dev.URL, s.ID, `head -c 2000000 /dev/urandom > /root/big`)
	var eb errorBody
	if code := call(t, "POST", dev.URL+"/sandboxes/"+s.ID+"/snapshot", nil, &eb); code != 400 || !strings.Contains(eb.Error.Message, "SVC_WORLD_MAX_CAPTURE_BYTES") {
		t.Errorf("snapshot past the cap = %d %q, want 400 naming SVC_WORLD_MAX_CAPTURE_BYTES", code, eb.Error.Message)
	}
	closed := closeSession(t, dev.URL, s.ID, nil)
	if closed.Session.ClosedReason != "closed" {
		t.Errorf("closedReason %q, want closed", closed.Session.ClosedReason)
	}
	var tr struct {
		Events []struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		} `json:"events"`
	}
	if code := call(t, "GET", dev.URL+"/runs/"+s.ID+"/trajectory", nil, &tr); code != 200 {
		t.Fatalf("GET trajectory = %d", code)
	}
	failed := 0
	for _, e := range tr.Events {
		if e.Kind == "session.snapshot_failed" {
			failed++
			if !strings.Contains(e.Message, "SVC_WORLD_MAX_CAPTURE_BYTES") {
				t.Errorf("session.snapshot_failed says %q, want it to name SVC_WORLD_MAX_CAPTURE_BYTES", e.Message)
			}
		}
	}
	if failed != 1 || tr.Events[len(tr.Events)-1].Kind != "session.closed" {
		t.Errorf("trajectory has %d session.snapshot_failed events (last %+v), want 1 and session.closed last", failed, tr.Events[len(tr.Events)-1])
	}
	if got := versionNumbers(getWorld(t, dev.URL, "keep")); !slices.Equal(got, []int{3}) {
		t.Errorf("versions after a failed hibernation = %v, want [3] (v3, the latest, kept; v2's tag went with the prune that failed on its manifest)", got)
	}

	// Retention skips versions another member published: another member's
	// v4 prunes nothing of ours; our v5 then prunes our v3 and keeps
	// their v4.
	other := otherMember(t, dev.URL)
	as := func(method, path string, body, out any) int {
		return call(t, method, dev.URL+path, body, out, "Authorization", "Bearer "+other)
	}
	var theirs worldSession
	if code := as("POST", "/sandboxes", map[string]any{"world": map[string]any{"id": "keep"}, "ttl": 300}, &theirs); code != 201 {
		t.Fatalf("another member's world session = %d", code)
	}
	var r execResult
	if code := as("POST", "/sandboxes/"+theirs.ID+"/exec", map[string]any{"command": "echo theirs > /root/t"}, &r); code != 200 || r.ExitCode != 0 {
		t.Fatalf("another member's exec = %d %+v", code, r)
	}
	var v4 snapshotAnswer
	if code := as("POST", "/sandboxes/"+theirs.ID+"/snapshot", nil, &v4); code != 201 || v4.Version != 4 || len(v4.PrunedVersions) != 0 {
		t.Errorf("another member's snapshot = %d %+v, want v4 pruning nothing (v3 is ours)", code, v4)
	}
	as("POST", "/sandboxes/"+theirs.ID+"/close", map[string]any{"snapshot": false}, nil)
	ours := createWorldSession(t, dev.URL, map[string]any{"world": map[string]any{"id": "keep"}})
	sh(t, dev.URL, ours.ID, `echo ours > /root/o`)
	if v5 := snapshotSession(t, dev.URL, ours.ID); v5.Version != 5 || !slices.Equal(v5.PrunedVersions, []string{"v3"}) {
		t.Errorf("our snapshot after theirs = %+v, want v5 pruning our v3 only", v5)
	}
	if got := versionNumbers(getWorld(t, dev.URL, "keep")); !slices.Equal(got, []int{4, 5}) {
		t.Errorf("versions = %v, want their v4 kept beside our v5", got)
	}
	closeSession(t, dev.URL, ours.ID, map[string]any{"snapshot": false})
}

// unreferencedBlobs are the store's blob files that no tag of any
// repository reaches, read with the registry client (catalog, tags,
// manifests).
func unreferencedBlobs(t *testing.T, addr, data string) []string {
	t.Helper()
	reg, err := name.NewRegistry(addr, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	repos, err := remote.Catalog(t.Context(), reg, devStore)
	if err != nil {
		t.Fatalf("catalog: %v", err)
	}
	reached := map[string]bool{}
	for _, r := range repos {
		repo, err := name.NewRepository(addr+"/"+r, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		tags, err := remote.List(repo, devStore)
		if err != nil {
			continue // every tag deleted
		}
		for _, tag := range tags {
			img, err := remote.Image(repo.Tag(tag), devStore)
			if err != nil {
				t.Errorf("%s:%s is listed but does not pull: %v", repo, tag, err)
				continue
			}
			for _, b := range imageBlobs(t, img) {
				reached[b] = true
			}
		}
	}
	var out []string
	for b := range blobFiles(t, data) {
		if !reached[b] {
			out = append(out, b)
		}
	}
	return out
}

// TestWorldSnapshotSurvivesDevKill (spec §4.8, §3; issue 32 item 6): svc
// dev SIGKILLed while a snapshot of a 150 MB change set is being pushed.
// After a restart the world's latest is the previous version or the new
// one whole (every version pulls and validates), never half, and no blob
// is left that no tag reaches. A world session whose container the
// restart lost is settled orphaned and captured first: its world has a
// version (reason orphan) holding what it wrote.
func TestWorldSnapshotSurvivesDevKill(t *testing.T) {
	imageDir, layoutPath := busyboxLayout(t)
	data := t.TempDir()
	first := worldDev(t, data, imageDir)
	big := createWorldSession(t, first.URL, map[string]any{"image": layoutPath, "world": map[string]any{"id": "big"}, "ttl": 900})
	sh(t, first.URL, big.ID, `echo small > /root/marker`)
	if v := snapshotSession(t, first.URL, big.ID); v.Version != 1 {
		t.Fatalf("first snapshot = %+v, want v1", v)
	}
	orphan := createWorldSession(t, first.URL, map[string]any{"image": layoutPath, "world": map[string]any{"id": "orph"}, "ttl": 900})
	sh(t, first.URL, orphan.ID, `echo left-behind > /root/o`)
	sh(t, first.URL, big.ID, `head -c 150000000 /dev/urandom > /root/big.bin`)

	// The snapshot of the big change set; svc dev is killed mid-push.
	go func() {
		req, _ := http.NewRequest("POST", first.URL+"/sandboxes/"+big.ID+"/snapshot", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	uploads := filepath.Join(data, "images", "uploads")
	testwait.Until(t, time.Minute, "the big layer's upload to be under way", func() bool {
		ents, _ := os.ReadDir(uploads)
		for _, e := range ents {
			if info, err := e.Info(); err == nil && info.Size() > 10<<20 {
				return true
			}
		}
		return false
	})
	first.signal(syscall.SIGKILL)
	first.wait(time.Minute)

	// The orphan: its container is gone when svc comes back, its file system is not.
	state := filepath.Join(data, "sandbox", "runc")
	if out, err := exec.Command("runc", "--root", state, "delete", "--force", orphan.Session.ComputeID).CombinedOutput(); err != nil {
		t.Fatalf("runc delete %s: %v: %s", orphan.Session.ComputeID, err, out)
	}

	second := worldDev(t, data, imageDir)
	addr := storeAddr(t, second)
	var w worldAnswer
	testwait.Until(t, 2*time.Minute, "the store to hold no unreachable blob and no upload", func() bool {
		ents, _ := os.ReadDir(uploads)
		return len(ents) == 0 && len(unreferencedBlobs(t, addr, data)) == 0
	})
	if got := unreferencedBlobs(t, addr, data); len(got) != 0 {
		t.Errorf("%d blobs no tag reaches after the restart: %v", len(got), got)
	}
	call(t, "GET", second.URL+"/worlds/big", nil, &w)
	got := versionNumbers(w)
	if !slices.Equal(got, []int{1}) && !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("world big's versions after the kill = %v, want [1] or [1 2]", got)
	}
	repo := worldRepo(t, addr, "big")
	for _, v := range w.Versions {
		if _, err := pull(t, repo, v.Tag); err != nil {
			t.Errorf("pulling %s: %v", v.Tag, err)
		}
	}
	t.Logf("after the kill mid-push, world big has versions %v", got)

	var o worldSession
	testwait.Until(t, time.Minute, "the lost world session to settle orphaned", func() bool {
		call(t, "GET", second.URL+"/runs/"+orphan.ID, nil, &o)
		return o.Status == "succeeded"
	})
	if o.Session.ClosedReason != "orphaned" || len(o.Session.Snapshots) != 1 || o.Session.Snapshots[0].Reason != "orphan" {
		t.Fatalf("the orphan settled %q with snapshots %+v, want orphaned, captured first (reason orphan)", o.Session.ClosedReason, o.Session.Snapshots)
	}
	back := createWorldSession(t, second.URL, map[string]any{"world": map[string]any{"id": "orph"}})
	if got := sh(t, second.URL, back.ID, `cat /root/o`); got != "left-behind\n" {
		t.Errorf("a session of the orphan's world reads %q, want what the orphan wrote", got)
	}
	closeSession(t, second.URL, back.ID, map[string]any{"snapshot": false})
	closeSession(t, second.URL, big.ID, map[string]any{"snapshot": false})
}
