package k8s

import (
	"context"
	"errors"
	"io"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"svc/drivers"
)

// output collects what the pod wrote: the head of the harness's stdout
// (up to MaxOutput), the tails of stdout and stderr, passing each chunk on
// to the job's Log one call at a time, and the trace the trace sidecar
// printed. Kubernetes gives logs as plain bytes (no framing), so the same
// drivers.Capture that keeps the Nomad driver's output keeps this one's.
type output struct {
	mu     sync.Mutex
	log    func(stream string, data []byte)
	stdout drivers.Capture
	stderr drivers.Capture
	trace  drivers.Capture
}

func newOutput(log func(string, []byte)) *output {
	return &output{log: log, stdout: drivers.Capture{Max: drivers.MaxOutput}, trace: drivers.Capture{Max: drivers.MaxOutput}}
}

// write records a chunk of stream ("stdout", "stderr" or the trace).
func (o *output) write(stream string, p []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch stream {
	case "stdout":
		o.stdout.Add(p)
	case "stderr":
		o.stderr.Add(p)
	default:
		o.trace.Add(p)
		return
	}
	if o.log != nil {
		o.log(stream, p)
	}
}

// fill sets the output fields of res.
func (o *output) fill(res *drivers.Result) {
	o.mu.Lock()
	defer o.mu.Unlock()
	res.Stdout = o.stdout.Head()
	res.StdoutTail = o.stdout.Tail()
	res.StderrTail = o.stderr.Tail()
	if t := o.trace.Head(); t != "" {
		res.Trace = []byte(t)
	}
}

// traceStream names the trace sidecar's log in output.write.
const traceStream = "trace"

// openLog opens pods/log of container in pod, followed from its start.
// stream, when not "", asks for stdout or stderr alone (the
// PodLogsQuerySplitStreams feature).
func (d *Driver) openLog(ctx context.Context, pod, container, stream string) (io.ReadCloser, error) {
	opts := &corev1.PodLogOptions{Container: container, Follow: true}
	if stream != "" {
		s := stream
		opts.Stream = &s
	}
	return d.cs.CoreV1().Pods(d.namespace).GetLogs(pod, opts).Stream(ctx)
}

// openHarnessLogs opens the harness's output: stdout and stderr apart when
// the cluster can serve them so, else the one stream Kubernetes keeps of
// both, taken as stdout (see docs/runtimes.md). What it learns of the
// cluster is kept for the driver's later jobs.
func (d *Driver) openHarnessLogs(ctx context.Context, pod string) (map[string]io.ReadCloser, error) {
	if d.split.Load() != splitNo {
		out, err := d.openLog(ctx, pod, harnessContainer, corev1.LogStreamStdout)
		switch {
		case err == nil:
			d.split.Store(splitYes)
			errOut, err := d.openLog(ctx, pod, harnessContainer, corev1.LogStreamStderr)
			if err != nil {
				out.Close()
				return nil, err
			}
			return map[string]io.ReadCloser{"stdout": out, "stderr": errOut}, nil
		case apierrors.IsInvalid(err):
			// 422 "stream: Forbidden": the API server's feature gate is off.
			d.split.Store(splitNo)
		default:
			return nil, err
		}
	}
	all, err := d.openLog(ctx, pod, harnessContainer, "")
	if err != nil {
		return nil, err
	}
	return map[string]io.ReadCloser{"stdout": all}, nil
}

// copyLog copies r into out as stream until it ends or ctx is done.
func copyLog(ctx context.Context, r io.ReadCloser, stream string, out *output) error {
	defer r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			out.write(stream, buf[:n])
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
	}
}
