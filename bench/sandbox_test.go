package bench

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"svc/drivers/local/sandbox"
	"svc/internal/testing/testimage"
)

// BenchmarkSandboxSession measures sandbox sessions through the real
// binary (SVC_BIN, default bin/svc; make build first): svc dev on a fresh
// data dir, images imported into its managed image store with
// POST /images?as= (not timed), sessions created from the pinned
// reference the import answers.
//
//   - first-session: the first session of the fresh process, its image
//     (busybox) never unpacked, POST /sandboxes to the first exec's answer.
//   - create to first exec (create-p50-ms, create-p95-ms): BENCH_REPS
//     (default 30) sessions of the busybox image, already unpacked by the
//     first one, each from POST /sandboxes until the answer of its first
//     exec (`true`); each is closed before the next (not timed).
//   - exec round trip (exec-p50-ms, exec-p99-ms): BENCH_EXECS (default 200)
//     execs of `true` into one session, after two that are not counted;
//     exec-server-p50-ms is the durationMs svc answers (runc's exec).
//   - cold: create to first exec from images never unpacked, once each:
//     busybox plus one small layer (the busybox unpack), and busybox plus
//     the host's Python standard library (/usr/lib/python3.*) as a second
//     layer; their compressed and unpacked sizes are logged.
//   - RSS per idle session: BENCH_IDLE (default 10) sessions opened (each
//     answered one exec) and left idle; the resident memory added to the
//     process tree (svc dev and its descendants, and each container's
//     processes found from its init.pid: the image's /bin/sh init and its
//     sleep), divided by their number, as the sum of VmRSS and of Pss (pages
//     shared between processes counted once); and the usage of the
//     containers' memory cgroups (their processes' memory plus the kernel
//     memory charged to them), which RSS does not show; and svc dev's Go
//     heap in use after a forced GC (its pprof heap profile), which its RSS
//     (the garbage collector returns and takes pages) is too noisy to show.
//     Three rounds, each closing its sessions.
//
// Run it alone, as root, with runc and busybox-static installed:
//
//	make build && go test -run '^$' -bench 'SandboxSession$' -benchtime 1x -timeout 20m ./bench/
func BenchmarkSandboxSession(b *testing.B) {
	reps, execs, idle := sbxEnvInt("BENCH_REPS", 30), sbxEnvInt("BENCH_EXECS", 200), sbxEnvInt("BENCH_IDLE", 10)
	bin := os.Getenv("SVC_BIN")
	if bin == "" {
		bin, _ = filepath.Abs("../bin/svc")
	}
	if _, err := os.Stat(bin); err != nil {
		b.Skipf("no svc binary at %s (make build)", bin)
	}
	if _, err := exec.LookPath("runc"); err != nil {
		b.Skip("runc is not on PATH (apt-get install runc)")
	}
	busybox := testimage.Busybox(b)
	coldSmall, err := sbxAppend(busybox, map[string]string{"etc/bench-cold": "a layer of its own, so the image is new\n"})
	if err != nil {
		b.Fatal(err)
	}
	coldPython, pyDir, err := sbxPythonImage(busybox)
	if err != nil {
		b.Fatal(err)
	}

	for range b.N {
		dataDir := b.TempDir()
		pprof := sbxFreeAddr(b)
		d := sbxStartDev(b, bin, dataDir, fmt.Sprintf("SVC_SANDBOX_MAX_PER_TENANT=%d", idle+5), "SVC_PPROF_ADDR="+pprof)
		refBusybox := sbxImport(b, d.url, busybox, "bench-busybox:1")
		refSmall := sbxImport(b, d.url, coldSmall, "bench-cold:1")
		refPython := sbxImport(b, d.url, coldPython, "bench-python:1")

		// The first session of the process: busybox never unpacked.
		first, id := sbxCreateToExec(b, d.url, refBusybox)
		sbxClose(b, d.url, id)

		var creates []time.Duration
		for range reps {
			t, id := sbxCreateToExec(b, d.url, refBusybox)
			creates = append(creates, t)
			sbxClose(b, d.url, id)
		}

		id = sbxCreate(b, d.url, refBusybox)
		sbxExec(b, d.url, id, "true")
		sbxExec(b, d.url, id, "true")
		var rounds []time.Duration
		var server []float64
		for range execs {
			t0 := time.Now()
			ms := sbxExec(b, d.url, id, "true")
			rounds = append(rounds, time.Since(t0))
			server = append(server, ms)
		}
		sbxClose(b, d.url, id)

		coldSmallT, id := sbxCreateToExec(b, d.url, refSmall)
		sbxClose(b, d.url, id)
		coldPythonT, id := sbxCreateToExec(b, d.url, refPython)
		sbxClose(b, d.url, id)

		var rssPer, pssPer, ctrRSSPer, ctrPSSPer, devRSSPer, cgPer, heapPer []float64
		for round := range 3 {
			heap0 := sbxHeapInuse(b, pprof)
			before := sbxTree(b, d.pid, dataDir)
			var ids []string
			for range idle {
				id := sbxCreate(b, d.url, refBusybox)
				sbxExec(b, d.url, id, "true")
				ids = append(ids, id)
			}
			after := sbxTree(b, d.pid, dataDir)
			heap1 := sbxHeapInuse(b, pprof)
			n := float64(idle)
			rssPer = append(rssPer, float64(after.rss-before.rss)/n)
			pssPer = append(pssPer, float64(after.pss-before.pss)/n)
			ctrRSSPer = append(ctrRSSPer, float64(after.ctrRSS-before.ctrRSS)/n)
			ctrPSSPer = append(ctrPSSPer, float64(after.ctrPSS-before.ctrPSS)/n)
			devRSSPer = append(devRSSPer, float64(after.devRSS-before.devRSS)/n)
			cgPer = append(cgPer, float64(after.cgroup-before.cgroup)/n)
			heapPer = append(heapPer, float64(heap1-heap0)/1024/n)
			b.Logf("idle round %d: before %s; after %d sessions %s; container processes per session %.1f", round+1, before, idle, after,
				float64(after.ctrProcs-before.ctrProcs)/n)
			for _, id := range ids {
				sbxClose(b, d.url, id)
			}
		}

		bbC, bbU, bbF := sbxImageSize(b, busybox, refBusybox, dataDir)
		smC, smU, smF := sbxImageSize(b, coldSmall, refSmall, dataDir)
		pyC, pyU, pyF := sbxImageSize(b, coldPython, refPython, dataDir)

		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(first), "first-session-ms")
		b.ReportMetric(ms(sbxPct(creates, 0.5)), "create-p50-ms")
		b.ReportMetric(ms(sbxPct(creates, 0.95)), "create-p95-ms")
		b.ReportMetric(ms(sbxPct(rounds, 0.5)), "exec-p50-ms")
		b.ReportMetric(ms(sbxPct(rounds, 0.99)), "exec-p99-ms")
		b.ReportMetric(sbxPctF(server, 0.5), "exec-server-p50-ms")
		b.ReportMetric(ms(coldSmallT), "cold-busybox-ms")
		b.ReportMetric(ms(coldPythonT), "cold-python-ms")
		b.ReportMetric(sbxPctF(rssPer, 0.5)/1024, "idle-rss-MB/session")
		b.ReportMetric(sbxPctF(pssPer, 0.5)/1024, "idle-pss-MB/session")
		b.ReportMetric(sbxPctF(cgPer, 0.5)/1024, "idle-cgroup-MB/session")
		b.ReportMetric(sbxPctF(heapPer, 0.5), "idle-heap-KB/session")

		b.Logf("first session of the process (busybox never unpacked): %s", first.Round(time.Millisecond))
		b.Logf("create to first exec over %d, sorted: %v", reps, sbxSorted(creates))
		b.Logf("exec round trip over %d: p50 %s p95 %s p99 %s max %s; svc's durationMs p50 %.1f p99 %.1f", execs,
			sbxPct(rounds, 0.5).Round(100*time.Microsecond), sbxPct(rounds, 0.95).Round(100*time.Microsecond),
			sbxPct(rounds, 0.99).Round(100*time.Microsecond), sbxPct(rounds, 1).Round(100*time.Microsecond),
			sbxPctF(server, 0.5), sbxPctF(server, 0.99))
		b.Logf("cold, busybox + one small layer: %s; image %.2f MB compressed, %.2f MB unpacked, %d files", coldSmallT.Round(time.Millisecond), smC, smU, smF)
		b.Logf("cold, busybox + %s: %s; image %.2f MB compressed, %.2f MB unpacked, %d files", pyDir, coldPythonT.Round(time.Millisecond), pyC, pyU, pyF)
		b.Logf("busybox alone: %.2f MB compressed, %.2f MB unpacked, %d files", bbC, bbU, bbF)
		b.Logf("idle sessions, added KiB per session by round: tree RSS %v, tree PSS %v; of which containers RSS %v PSS %v; svc dev's own RSS %v, its Go heap in use after a GC %v; the containers' memory cgroups %v",
			rssPer, pssPer, ctrRSSPer, ctrPSSPer, devRSSPer, heapPer, cgPer)
	}
}

func sbxEnvInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil && n > 0 {
		return n
	}
	return def
}

func sbxSorted(ds []time.Duration) []time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	for i := range s {
		s[i] = s[i].Round(100 * time.Microsecond)
	}
	return s
}

// sbxPct is the nearest-rank percentile p of ds (p = 1: the largest).
func sbxPct(ds []time.Duration, p float64) time.Duration {
	s := sbxSorted(ds)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func sbxPctF(xs []float64, p float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// sbxAppend is img plus one layer holding files (mode 0644).
func sbxAppend(img v1.Image, files map[string]string) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for n, body := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(body)), ModTime: testimage.MTime}); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return sbxAppendTar(img, buf.Bytes())
}

func sbxAppendTar(img v1.Image, data []byte) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	return mutate.AppendLayers(img, layer)
}

// sbxPythonImage is img plus a layer of the host's Python standard
// library (regular files, directories and symbolic links), at its path.
func sbxPythonImage(img v1.Image) (v1.Image, string, error) {
	dirs, _ := filepath.Glob("/usr/lib/python3.*")
	if len(dirs) == 0 {
		return nil, "", fmt.Errorf("no /usr/lib/python3.* on this host for the large cold image")
	}
	root := dirs[0]
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"usr", "usr/lib"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: testimage.MTime}); err != nil {
			return nil, "", err
		}
	}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		} else if !fi.Mode().IsRegular() && !fi.IsDir() {
			return nil
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = strings.TrimPrefix(p, "/")
		if fi.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := io.Copy(tw, f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	out, err := sbxAppendTar(img, buf.Bytes())
	return out, root, err
}

// sbxImageSize answers img's compressed size (its layers' blobs) and its
// unpacked root file system under dataDir (regular files' bytes, and the
// number of entries), in MB; the unpacked image is the one ref (as the
// import answered it, repo:tag@sha256:...) pins.
func sbxImageSize(b *testing.B, img v1.Image, ref, dataDir string) (float64, float64, int) {
	b.Helper()
	layers, err := img.Layers()
	if err != nil {
		b.Fatal(err)
	}
	var comp int64
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			b.Fatal(err)
		}
		comp += n
	}
	_, hex, ok := strings.Cut(ref, "@sha256:")
	if !ok {
		b.Fatalf("the import answered %q, not a pinned reference", ref)
	}
	var unpacked int64
	files := 0
	_ = filepath.WalkDir(filepath.Join(dataDir, "sandbox", "images", hex, "rootfs"), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		files++
		if e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				unpacked += fi.Size()
			}
		}
		return nil
	})
	return float64(comp) / 1e6, float64(unpacked) / 1e6, files
}

// sbxRemoveAllAfter registers the removal of every container, mount and
// session of the sandbox runtime under root (sandbox.RemoveAll), to run
// after the svc dev about to start on it has stopped (cleanups run last
// registered first), so that a benchmark leaves none however it ends;
// what is left fails it.
func sbxRemoveAllAfter(b *testing.B, root string) {
	b.Cleanup(func() {
		rt, err := sandbox.New(sandbox.Options{Root: root})
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			err = rt.RemoveAll(ctx)
		}
		if err != nil {
			b.Errorf("sandbox containers or mounts left after the benchmark: %v", err)
		}
	})
}

var sbxAPILine = regexp.MustCompile(`API on (http://\S+)`)

type sbxDev struct {
	url string
	pid int
}

// sbxStartDev runs `svc dev` on dataDir until the benchmark ends; then
// every container and mount of its sandbox runtime is removed.
func sbxStartDev(b *testing.B, bin, dataDir string, env ...string) sbxDev {
	b.Helper()
	sbxRemoveAllAfter(b, filepath.Join(dataDir, "sandbox"))
	cmd := exec.Command(bin, "dev")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "SVC_LOG_LEVEL=warn",
		"SVC_DATA_DIR=" + dataDir, "SVC_ADDR=127.0.0.1:0", "SVC_TEMPORAL_PORT=0"}, env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := sbxAPILine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case u := <-urls:
		return sbxDev{url: u, pid: cmd.Process.Pid}
	case <-done:
		b.Fatalf("svc dev exited: %s", stderr.String())
	case <-time.After(2 * time.Minute):
		b.Fatalf("svc dev printed no API address: %s", stderr.String())
	}
	return sbxDev{}
}

// sbxImport pushes img into the dev workspace's image store as `as`
// (POST /images, a docker save tar) and answers its pinned reference.
func sbxImport(b *testing.B, url string, img v1.Image, as string) string {
	b.Helper()
	tag, err := name.NewTag(as)
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tarball.Write(tag, img, &buf); err != nil {
		b.Fatal(err)
	}
	var out struct {
		Ref string `json:"ref"`
	}
	code, raw := sbxDo(b, "POST", url+"/images?as="+as, "application/x-tar", &buf, &out)
	if code != 201 && code != 200 || out.Ref == "" {
		b.Fatalf("POST /images?as=%s = %d %s", as, code, raw)
	}
	return out.Ref
}

func sbxDo(b *testing.B, method, url, ctype string, body io.Reader, out any) (int, []byte) {
	b.Helper()
	req, err := http.NewRequestWithContext(b.Context(), method, url, body)
	if err != nil {
		b.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			b.Fatalf("%s %s: %v: %s", method, url, err, raw)
		}
	}
	return resp.StatusCode, raw
}

func sbxPost(b *testing.B, url string, body any, want int, out any) {
	b.Helper()
	raw, _ := json.Marshal(body)
	if code, resp := sbxDo(b, "POST", url, "application/json", bytes.NewReader(raw), out); code != want {
		b.Fatalf("POST %s = %d %s", url, code, resp)
	}
}

func sbxCreate(b *testing.B, url, image string) string {
	b.Helper()
	var s struct {
		ID string `json:"id"`
	}
	sbxPost(b, url+"/sandboxes", map[string]any{"image": image, "ttl": 1800}, 201, &s)
	return s.ID
}

// sbxExec runs command in session id and answers svc's durationMs.
func sbxExec(b *testing.B, url, id, command string) float64 {
	b.Helper()
	var r struct {
		ExitCode   int     `json:"exitCode"`
		Stderr     string  `json:"stderr"`
		DurationMs float64 `json:"durationMs"`
	}
	sbxPost(b, url+"/sandboxes/"+id+"/exec", map[string]any{"command": command}, 200, &r)
	if r.ExitCode != 0 {
		b.Fatalf("exec %q: exit %d %s", command, r.ExitCode, r.Stderr)
	}
	return r.DurationMs
}

// sbxCreateToExec times POST /sandboxes until its first exec's answer.
func sbxCreateToExec(b *testing.B, url, image string) (time.Duration, string) {
	b.Helper()
	t0 := time.Now()
	id := sbxCreate(b, url, image)
	sbxExec(b, url, id, "true")
	return time.Since(t0), id
}

func sbxClose(b *testing.B, url, id string) {
	b.Helper()
	sbxPost(b, url+"/sandboxes/"+id+"/close", map[string]any{"snapshot": false}, 200, nil)
}

// sbxMem is the resident memory of svc dev's process tree and of the
// containers' processes, in KiB.
type sbxMem struct {
	rss, pss, devRSS, ctrRSS, ctrPSS int64
	cgroup                           int64 // the containers' memory cgroups' usage (kernel memory included)
	procs, ctrProcs                  int
}

func (m sbxMem) String() string {
	return fmt.Sprintf("%d processes (%d in containers), RSS %.1f MB (svc dev itself %.1f, containers %.1f), PSS %.1f MB (containers %.1f), containers' memory cgroups %.1f MB",
		m.procs, m.ctrProcs, float64(m.rss)/1024, float64(m.devRSS)/1024, float64(m.ctrRSS)/1024, float64(m.pss)/1024, float64(m.ctrPSS)/1024, float64(m.cgroup)/1024)
}

// sbxTree reads /proc: svc dev (pid) and its descendants, and each
// container's init (Root/sessions/*/bundle/init.pid under dataDir's
// sandbox root) and its descendants; each process is counted once.
func sbxTree(b *testing.B, pid int, dataDir string) sbxMem {
	b.Helper()
	children := map[int][]int{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// The fields after the command's closing parenthesis: state, ppid.
		s := string(data)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 {
			if pp, err := strconv.Atoi(f[1]); err == nil {
				children[pp] = append(children[pp], p)
			}
		}
	}
	seen := map[int]bool{}
	var walk func(p int, acc *[]int)
	walk = func(p int, acc *[]int) {
		if seen[p] {
			return
		}
		seen[p] = true
		*acc = append(*acc, p)
		for _, c := range children[p] {
			walk(c, acc)
		}
	}
	var m sbxMem
	var ctr []int
	inits, _ := filepath.Glob(filepath.Join(dataDir, "sandbox", "sessions", "*", "bundle", "init.pid"))
	for _, f := range inits {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if p, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", p)); err == nil {
				walk(p, &ctr)
				m.cgroup += sbxCgroupMem(p)
			}
		}
	}
	var dev []int
	walk(pid, &dev)
	for _, p := range dev {
		r, s := sbxProcMem(p)
		m.rss += r
		m.pss += s
		if p == pid {
			m.devRSS = r
		}
	}
	for _, p := range ctr {
		r, s := sbxProcMem(p)
		m.rss += r
		m.pss += s
		m.ctrRSS += r
		m.ctrPSS += s
	}
	m.procs, m.ctrProcs = len(dev)+len(ctr), len(ctr)
	return m
}

// sbxProcMem answers a process's VmRSS and Pss in KiB (0 when it is gone).
func sbxProcMem(pid int) (rss, pss int64) {
	field := func(path, key string) int64 {
		data, err := os.ReadFile(path)
		if err != nil {
			return 0
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, key) {
				f := strings.Fields(line[len(key):])
				if len(f) > 0 {
					n, _ := strconv.ParseInt(f[0], 10, 64)
					return n
				}
			}
		}
		return 0
	}
	return field(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:"), field(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
}

// sbxCgroupMem answers the usage of pid's memory cgroup in KiB: cgroup v1's
// memory.usage_in_bytes (this machine's hybrid hierarchy) or v2's
// memory.current; 0 when neither is there.
func sbxCgroupMem(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return 0
	}
	var v1, v2 string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[1] == "memory" {
			v1 = filepath.Join("/sys/fs/cgroup/memory", f[2], "memory.usage_in_bytes")
		} else if f[0] == "0" && f[1] == "" {
			v2 = filepath.Join("/sys/fs/cgroup", f[2], "memory.current")
		}
	}
	for _, p := range []string{v1, v2} {
		if p == "" {
			continue
		}
		if b, err := os.ReadFile(p); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				return n / 1024
			}
		}
	}
	return 0
}

// sbxFreeAddr is a loopback address no one listens on.
func sbxFreeAddr(b *testing.B) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// sbxHeapInuse is svc dev's Go heap in use in bytes, after a GC, from its
// pprof heap profile at addr (SVC_PPROF_ADDR).
func sbxHeapInuse(b *testing.B, addr string) int64 {
	b.Helper()
	code, raw := sbxDo(b, "GET", "http://"+addr+"/debug/pprof/heap?gc=1&debug=1", "", nil, nil)
	if code != 200 {
		b.Fatalf("GET heap profile = %d %s", code, raw)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapInuse = "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	b.Fatalf("no HeapInuse in svc dev's heap profile")
	return 0
}
