// Package orchestration builds the Temporal client and worker that `svc dev`,
// `svc serve` and `svc worker` share, so every role logs, traces and reports
// readiness the same way.
//
// It must not import go.temporal.io/server: only orchestration/devserver links
// Temporal's own server, which costs a large link and memory in every binary
// and test that imports it.
package orchestration

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"svc/internal/platform/derrors"
)

// DialTimeout bounds Dial, so an unreachable TEMPORAL_ADDRESS fails start-up
// in seconds instead of retrying forever.
const DialTimeout = 10 * time.Second

// ClientOptions says which Temporal frontend and namespace to use.
type ClientOptions struct {
	HostPort  string       // frontend host:port (TEMPORAL_ADDRESS)
	Namespace string       // namespace (SVC_TEMPORAL_NAMESPACE); "default" when empty
	Logger    *slog.Logger // the SDK's own logs; slog.Default() when nil
	// Setting names where HostPort came from, for error messages;
	// "TEMPORAL_ADDRESS" when empty (svc dev says "embedded Temporal").
	Setting string
	// TLS, when set, makes the connection TLS (TLSSettings.Config, or the
	// embedded server's devserver.Server.ClientTLS); nil is plain gRPC.
	TLS *tls.Config
}

func (o ClientOptions) setting() string {
	if o.Setting == "" {
		return "TEMPORAL_ADDRESS"
	}
	return o.Setting
}

// WorkerOptions tunes a worker; zero values keep the SDK's defaults.
type WorkerOptions struct {
	// MaxConcurrentActivities caps the activities this worker runs at once.
	MaxConcurrentActivities int
	// StopTimeout is how long Stop lets running activities finish before
	// cancelling their contexts.
	StopTimeout time.Duration
}

// Dial connects to Temporal and checks that the namespace exists, so a wrong
// address or namespace fails start-up with one line naming the setting. The
// client carries the OpenTelemetry tracing interceptor (a no-op until a
// global TracerProvider is installed), and workers built from it inherit it.
func Dial(ctx context.Context, o ClientOptions) (client.Client, error) {
	if o.HostPort == "" {
		return nil, fmt.Errorf("TEMPORAL_ADDRESS is empty: %w: give the Temporal frontend as host:port", derrors.ErrInvalid)
	}
	if o.Namespace == "" {
		o.Namespace = client.DefaultNamespace
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	tracing, err := opentelemetry.NewTracingInterceptor(opentelemetry.TracerOptions{})
	if err != nil {
		return nil, fmt.Errorf("temporal tracing interceptor: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{
		HostPort:     o.HostPort,
		Namespace:    o.Namespace,
		Logger:       tlog.NewStructuredLogger(o.Logger),
		Interceptors: []interceptor.ClientInterceptor{tracing},
		ConnectionOptions: client.ConnectionOptions{
			TLS: o.TLS,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%s=%s: cannot reach Temporal: %w: %w%s", o.setting(), o.HostPort, derrors.ErrUnavailable, err, tlsHint(o, err))
	}
	_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: o.Namespace})
	if err != nil {
		c.Close()
		var nf *serviceerror.NamespaceNotFound
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("SVC_TEMPORAL_NAMESPACE=%s: %w: namespace does not exist on %s (register it with `temporal operator namespace create`)",
				o.Namespace, derrors.ErrNotFound, o.HostPort)
		}
		return nil, fmt.Errorf("%s=%s: cannot describe namespace %q: %w: %w%s", o.setting(), o.HostPort, o.Namespace, derrors.ErrUnavailable, err, tlsHint(o, err))
	}
	return c, nil
}

// tlsHint is said after a failed dial that reached a listener: without
// TLS, that the frontend may require it (a TLS listener drops a plain
// client with a bare EOF); with it, which settings hold the certificates.
func tlsHint(o ClientOptions, err error) string {
	if o.setting() != "TEMPORAL_ADDRESS" || strings.Contains(err.Error(), "connection refused") {
		return ""
	}
	if o.TLS == nil {
		return " (if the frontend requires TLS, set TEMPORAL_TLS_CA, and TEMPORAL_TLS_CERT with TEMPORAL_TLS_KEY for mutual TLS)"
	}
	return " (check TEMPORAL_TLS_CA, TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY and TEMPORAL_TLS_SERVER_NAME)"
}

// stickyTimeout is how long a workflow task waits on a worker's sticky
// queue before any worker may take it.
const stickyTimeout = 2 * time.Second

// NewWorker returns an unstarted worker polling taskQueue, with reg's
// workflows and activities registered, and activity errors put in their one
// form (ActivityErrors). The tracing interceptor comes from the client made
// by Dial: the SDK applies a client's interceptors to its workers, and
// setting it here as well would record every span twice.
func NewWorker(c client.Client, taskQueue string, reg func(worker.Registry), opts WorkerOptions) worker.Worker {
	w := worker.New(c, taskQueue, worker.Options{
		Interceptors:                       []interceptor.WorkerInterceptor{ActivityErrors()},
		MaxConcurrentActivityExecutionSize: opts.MaxConcurrentActivities,
		WorkerStopTimeout:                  opts.StopTimeout,
		// A worker that died (a SIGKILLed svc dev) leaves its workflows'
		// next tasks on its sticky queue until this passes; the SDK's 5 s
		// default made a restarted svc dev idle that long.
		StickyScheduleToStartTimeout: stickyTimeout,
	})
	if reg != nil {
		reg(w)
	}
	return w
}

// Ready reports whether the Temporal frontend answers its health check; it
// backs /readyz.
func Ready(ctx context.Context, c client.Client) error {
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return fmt.Errorf("temporal health check: %w: %w", derrors.ErrUnavailable, err)
	}
	return nil
}
