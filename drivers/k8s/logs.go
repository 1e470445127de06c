package k8s

import (
	"context"
	"errors"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"svc/drivers"
)

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
func copyLog(ctx context.Context, r io.ReadCloser, stream string, out *drivers.Output) error {
	defer r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			out.Write(stream, buf[:n])
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
