package imagestore

import (
	"crypto/rand"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// BenchmarkPushPull100MB pushes an image with one 100 MB layer with
// go-containerregistry's remote to a registry on loopback and pulls the
// layer back (reading every byte): this store, and, to compare,
// go-containerregistry's pkg/registry with its disk blob handler (which
// keeps manifests in memory and buffers uploads in memory). Each
// iteration's layer is new, so every push uploads it. Reported:
// push-ms, pull-ms per op; B/op counts client and server together.
func BenchmarkPushPull100MB(b *testing.B) {
	const size = 100 << 20
	data := make([]byte, size)
	rand.Read(data)
	for _, impl := range []struct {
		name string
		open func(dir string) http.Handler
	}{
		{"store", func(dir string) http.Handler {
			s, err := Open(dir, Options{})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"ggcr-registry-disk", func(dir string) http.Handler {
			return registry.New(registry.WithBlobHandler(registry.NewDiskBlobHandler(dir)),
				registry.Logger(log.New(io.Discard, "", 0)))
		}},
	} {
		b.Run(impl.name, func(b *testing.B) {
			srv := httptest.NewServer(impl.open(b.TempDir()))
			defer srv.Close()
			host := strings.TrimPrefix(srv.URL, "http://")
			b.ReportAllocs()
			b.SetBytes(2 * size)
			var push, pull time.Duration
			for i := 0; i < b.N; i++ {
				copy(data, []byte{byte(i), byte(i >> 8), 1, 2, 3})
				img, err := mutate.AppendLayers(empty.Image, static.NewLayer(data, types.OCILayer))
				if err != nil {
					b.Fatal(err)
				}
				r := ref(b, host, "bench/w:v1")
				t0 := time.Now()
				if err := remote.Write(r, img); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				got, err := remote.Image(r)
				if err != nil {
					b.Fatal(err)
				}
				ls, err := got.Layers()
				if err != nil {
					b.Fatal(err)
				}
				rc, err := ls[0].Compressed()
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, rc)
				rc.Close()
				if err != nil || n != size {
					b.Fatalf("pulled %d bytes, %v", n, err)
				}
				push += t1.Sub(t0)
				pull += time.Since(t1)
			}
			b.ReportMetric(float64(push.Milliseconds())/float64(b.N), "push-ms")
			b.ReportMetric(float64(pull.Milliseconds())/float64(b.N), "pull-ms")
		})
	}
}
