//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	"svc/internal/testing/testimage"
)

// BenchmarkCreateToFirstExec: Create of a session from an image already
// unpacked, then its first command (true); removal is not timed.
func BenchmarkCreateToFirstExec(b *testing.B) {
	r := newRuntime(b, Options{})
	img := testimage.Busybox(b)
	ctx := context.Background()
	create(b, r, "warm", img) // unpacks the base once
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("b%d", i)
		if _, err := r.Create(ctx, id, img, CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if res, err := r.Exec(ctx, id, "true", 10*time.Second); err != nil || res.ExitCode != 0 {
			b.Fatal(err, res.ExitCode)
		}
		b.StopTimer()
		if err := r.Remove(ctx, id); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkExec: one command's round trip into a running session.
func BenchmarkExec(b *testing.B) {
	r := newRuntime(b, Options{})
	create(b, r, "x", testimage.Busybox(b))
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res, err := r.Exec(ctx, "x", "true", 10*time.Second); err != nil || res.ExitCode != 0 {
			b.Fatal(err, res.ExitCode)
		}
	}
}

// BenchmarkChanges100MB: the layer of a 100 MB change set (100 files of
// 1 MB of random bytes, which gzip cannot shrink: the worst case).
func BenchmarkChanges100MB(b *testing.B) {
	r := newRuntime(b, Options{})
	create(b, r, "c", testimage.Busybox(b))
	run(b, r, "c", `mkdir /root/data && i=0; while [ $i -lt 100 ]; do head -c 1000000 /dev/urandom > /root/data/f$i; i=$((i+1)); done`)
	ctx := context.Background()
	var size int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, n, err := r.Changes(ctx, "c")
		if err != nil {
			b.Fatal(err)
		}
		size = n
	}
	b.ReportMetric(float64(size)/1e6, "MB-layer")
}
