package nomad

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/nomad/api"

	"svc/drivers"
)

// maxFrame bounds one log frame as it comes over the wire. Nomad frames
// carry at most 64 KiB of data (about 87 KiB in base64); anything much
// larger is not a Nomad agent, and is refused before it is held in memory.
const maxFrame = 1 << 20

// errFrameTooLarge ends a log stream whose next frame passes maxFrame.
var errFrameTooLarge = fmt.Errorf("a log frame exceeds %d bytes", maxFrame)

// frameDecoder reads the frames of Nomad's streaming file and log
// endpoints: a sequence of JSON objects {"Offset", "Data" (base64),
// "File", "FileEvent"}, with heartbeats ({}) between them. The stream
// comes from the cluster, so it is untrusted: a frame is bounded by
// maxFrame and an error never repeats what was sent.
type frameDecoder struct {
	dec *json.Decoder
	cr  *countingReader
}

// newFrameDecoder decodes the frames of r.
func newFrameDecoder(r io.Reader) *frameDecoder {
	cr := &countingReader{r: r}
	return &frameDecoder{dec: json.NewDecoder(cr), cr: cr}
}

// next returns the next frame's data, skipping heartbeats and file events
// (a rotated or truncated log file), and io.EOF at the end of the stream.
func (f *frameDecoder) next() ([]byte, error) {
	for {
		f.cr.start = f.dec.InputOffset()
		var fr api.StreamFrame
		if err := f.dec.Decode(&fr); err != nil {
			switch {
			case f.cr.err != nil && !errors.Is(f.cr.err, io.EOF):
				return nil, f.cr.err // the connection's, or errFrameTooLarge: not data
			case errors.Is(err, io.EOF):
				return nil, io.EOF
			case errors.Is(err, io.ErrUnexpectedEOF):
				return nil, errors.New("the log stream ended inside a frame")
			}
			return nil, errors.New("the log stream is not Nomad's frames")
		}
		if f.dec.InputOffset()-f.cr.start > maxFrame {
			return nil, errFrameTooLarge
		}
		if len(fr.Data) > 0 {
			return fr.Data, nil
		}
	}
}

// countingReader fails once the decoder has read more than maxFrame
// bytes past the start of the frame it is decoding.
type countingReader struct {
	r     io.Reader
	n     int64 // bytes handed to the decoder
	start int64 // the decoder's offset when the current frame began
	err   error // the last error Read returned
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n-c.start > maxFrame {
		c.err = errFrameTooLarge
		return 0, c.err
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err == nil && c.n-c.start > maxFrame {
		err = errFrameTooLarge
	}
	c.err = err
	return n, err
}

// streamLogs follows one of the task's log streams (stdout or stderr)
// from its start through the servers' /v1/client/fs/logs endpoint into
// out, until the stream ends (Nomad ends a followed stream once the task
// is dead) or ctx is done. It goes through the cluster's address, never to
// the client node directly, so the token reaches no other host.
func streamLogs(ctx context.Context, c *api.Client, allocID, stream string, out *drivers.Output) error {
	q := (&api.QueryOptions{Params: map[string]string{
		"task":   taskName,
		"type":   stream,
		"follow": "true",
		"origin": api.OriginStart,
		"offset": "0",
	}}).WithContext(ctx)
	body, err := c.Raw().Response("/v1/client/fs/logs/"+allocID, q)
	if err != nil {
		return err
	}
	defer body.Close()
	dec := newFrameDecoder(body)
	for {
		data, err := dec.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		out.Write(stream, data)
	}
}

// readTrace reads up to MaxOutput bytes of the trace file the task left in
// its allocation directory; a file the harness never wrote is no trace.
func readTrace(ctx context.Context, c *api.Client, allocID string) ([]byte, error) {
	q := (&api.QueryOptions{Params: map[string]string{"path": traceFSPath}}).WithContext(ctx)
	body, err := c.Raw().Response("/v1/client/fs/cat/"+allocID, q)
	if err != nil {
		var status api.UnexpectedResponseError
		if errors.As(err, &status) && status.StatusCode() == 404 {
			return nil, nil
		}
		return nil, err
	}
	defer body.Close()
	return io.ReadAll(io.LimitReader(body, drivers.MaxOutput))
}
