package sandbox

import (
	"compress/gzip"
	"io"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// fileLayer is a gzip OCI layer held in an open (unlinked) file, its
// digests computed while it was written.
type fileLayer struct {
	f              *os.File
	size           int64
	digest, diffID v1.Hash
}

var _ v1.Layer = (*fileLayer)(nil)

func (l *fileLayer) Digest() (v1.Hash, error)            { return l.digest, nil }
func (l *fileLayer) DiffID() (v1.Hash, error)            { return l.diffID, nil }
func (l *fileLayer) Size() (int64, error)                { return l.size, nil }
func (l *fileLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }

// Compressed reads the layer's bytes from the start; each call has its
// own reader.
func (l *fileLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(io.NewSectionReader(l.f, 0, l.size)), nil
}

// Uncompressed reads the layer's tar.
func (l *fileLayer) Uncompressed() (io.ReadCloser, error) {
	zr, err := gzip.NewReader(io.NewSectionReader(l.f, 0, l.size))
	if err != nil {
		return nil, err
	}
	return zr, nil
}
