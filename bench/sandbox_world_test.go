package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"svc/internal/testing/testimage"
)

// BenchmarkSandboxWorld measures worlds through the real binary (SVC_BIN,
// default bin/svc; make build first), svc dev on a fresh data dir, the
// busybox test image as an OCI layout:
//
//   - snapshot: POST /sandboxes/:id/snapshot of a 100 MB change set
//     (random bytes, so the gzip layer is as large), each from a fresh
//     session of the same world: the capture, the push into the managed
//     store and retention (keep 10) together. Metrics snapshot-p50-s,
//     snapshot-p95-s and layer-MB.
//   - start: a session of a world version (the world's latest, 3 layers)
//     from POST /sandboxes to the first exec's answer; the first unpacks
//     the version (start-first-ms), the others reuse it (start-p50-ms,
//     start-p95-ms).
//
// BENCH_REPS sets the repetitions of each (default 20). Run it alone, as
// root, with -benchtime 1x:
//
//	make build && go test -run '^$' -bench SandboxWorld -benchtime 1x -timeout 30m ./bench/
func BenchmarkSandboxWorld(b *testing.B) {
	reps := 20
	if n, err := strconv.Atoi(os.Getenv("BENCH_REPS")); err == nil && n > 0 {
		reps = n
	}
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
	img := testimage.Busybox(b)
	imageDir := b.TempDir()
	lay := filepath.Join(imageDir, "busybox")
	p, err := layout.Write(lay, empty.Index)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		b.Fatal(err)
	}
	url := worldDev(b, b.TempDir(), "SVC_SANDBOX_IMAGE_DIRS="+imageDir)

	for range b.N {
		// Snapshot of 100 MB, each from a fresh session.
		var snaps []time.Duration
		var layerBytes int64
		for range reps {
			id := worldCreate(b, url, map[string]any{"image": lay, "world": map[string]any{"id": "bench-big"}, "ttl": 600})
			worldExec(b, url, id, "head -c 100000000 /dev/urandom > /root/blob")
			t0 := time.Now()
			var res struct {
				Bytes int64 `json:"bytes"`
			}
			worldPost(b, url+"/sandboxes/"+id+"/snapshot", nil, 201, &res)
			snaps = append(snaps, time.Since(t0))
			layerBytes = res.Bytes
			worldPost(b, url+"/sandboxes/"+id+"/close", map[string]any{"snapshot": false}, 200, nil)
		}

		// A world with three layers: busybox, then two sessions' changes.
		for i := range 2 {
			body := map[string]any{"world": map[string]any{"id": "bench-start"}, "ttl": 600}
			if i == 0 {
				body["image"] = lay
			}
			id := worldCreate(b, url, body)
			worldExec(b, url, id, fmt.Sprintf("mkdir -p /srv && echo %d > /srv/f%d", i, i))
			worldPost(b, url+"/sandboxes/"+id+"/close", nil, 200, nil) // hibernates: the next version
		}
		var starts []time.Duration
		for range reps {
			t0 := time.Now()
			id := worldCreate(b, url, map[string]any{"world": map[string]any{"id": "bench-start"}, "ttl": 600})
			worldExec(b, url, id, "cat /srv/f0 /srv/f1")
			starts = append(starts, time.Since(t0))
			worldPost(b, url+"/sandboxes/"+id+"/close", map[string]any{"snapshot": false}, 200, nil)
		}

		b.ReportMetric(worldPct(snaps, 0.5).Seconds(), "snapshot-p50-s")
		b.ReportMetric(worldPct(snaps, 0.95).Seconds(), "snapshot-p95-s")
		b.ReportMetric(float64(layerBytes)/1e6, "layer-MB")
		b.ReportMetric(float64(starts[0].Microseconds())/1000, "start-first-ms")
		b.ReportMetric(float64(worldPct(starts[1:], 0.5).Microseconds())/1000, "start-p50-ms")
		b.ReportMetric(float64(worldPct(starts[1:], 0.95).Microseconds())/1000, "start-p95-ms")
		b.Logf("snapshot of 100 MB over %d, in order: %v", reps, snaps)
		b.Logf("start from a world version over %d: %v", reps, starts)
	}
}

func worldSorted(ds []time.Duration) []time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	for i := range s {
		s[i] = s[i].Round(time.Millisecond)
	}
	return s
}

func worldPct(ds []time.Duration, p float64) time.Duration {
	s := worldSorted(ds)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// worldDev runs bin/svc dev (SVC_BIN) on dataDir until the benchmark
// ends (sbxStartDev) and answers its API's URL.
func worldDev(b *testing.B, dataDir string, env ...string) string {
	b.Helper()
	bin := os.Getenv("SVC_BIN")
	if bin == "" {
		bin, _ = filepath.Abs("../bin/svc")
	}
	return sbxStartDev(b, bin, dataDir, env...).url
}

func worldPost(b *testing.B, url string, body any, want int, out any) {
	b.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(b.Context(), "POST", url, rd)
	if err != nil {
		b.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		b.Fatalf("POST %s = %d %s", url, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			b.Fatal(err)
		}
	}
}

func worldCreate(b *testing.B, url string, body map[string]any) string {
	b.Helper()
	var s struct {
		ID string `json:"id"`
	}
	worldPost(b, url+"/sandboxes", body, 201, &s)
	return s.ID
}

func worldExec(b *testing.B, url, id, command string) {
	b.Helper()
	var r struct {
		ExitCode int    `json:"exitCode"`
		Stderr   string `json:"stderr"`
	}
	worldPost(b, url+"/sandboxes/"+id+"/exec", map[string]any{"command": command, "timeoutSec": 600}, 200, &r)
	if r.ExitCode != 0 {
		b.Fatalf("exec %q: exit %d %s", command, r.ExitCode, r.Stderr)
	}
}
