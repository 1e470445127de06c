package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"svc/drivers"
	"svc/internal/cli/runnerside"
	"svc/internal/client"
	"svc/internal/domain/eval"
	"svc/internal/domain/runnerwire"
	"svc/internal/domain/trace"
	"svc/internal/platform/config"
	"svc/internal/platform/derrors"
)

// envRunnerKey holds a runner's key: a secret, so better there (or in
// --key-file) than on the command line, where ps shows it.
const envRunnerKey = "SVC_RUNNER_KEY"

// runnerSynopsis is svc runner's usage line.
const runnerSynopsis = `usage: svc runner --url URL [--key rnr_... | --key-file FILE] [--workers N] [--heartbeat 2s] [--runtime ID]

Runs a workspace's jobs on this machine (a self-hosted runtime, kind runner):
N workers each lease a job by long poll, run it with the local driver
(SVC_LOCAL_* settings, as svc dev), heartbeat it, kill it when a heartbeat
answers cancelled, and post its result. The runs it executes are stamped
provenance.attestation self_reported. The key is a runner key (POST
/runner-keys); give it in ` + envRunnerKey + ` or --key-file rather than --key.`

// runnerJobRunner is what runs a leased job: the local driver.
type runnerJobRunner interface {
	Run(ctx context.Context, j drivers.Job) (drivers.Result, error)
}

// LocalDriver is the driver a runner runs its jobs with.
type LocalDriver interface {
	runnerJobRunner
	Close() error
}

// OpenLocalDriver opens the local driver of cfg (the SVC_LOCAL_* settings)
// whose jobs reach the API at apiURL: cmd/svc wires it (internal/app).
type OpenLocalDriver func(ctx context.Context, cfg config.Config, log *slog.Logger, apiURL string) (LocalDriver, error)

// runnerLoop is one `svc runner` process.
type runnerLoop struct {
	api       *client.Client
	run       runnerJobRunner
	workers   int
	heartbeat time.Duration
	runtime   string
	name      string
	host      string
	log       *slog.Logger
}

// Runner is `svc runner`, running its jobs with the drivers open opens.
func Runner(open OpenLocalDriver) Command {
	return func(ctx context.Context, x *cli, args []string) (int, error) {
		return runRunner(ctx, x, args, open)
	}
}

func runRunner(ctx context.Context, x *cli, args []string, open OpenLocalDriver) (int, error) {
	fs := newFlagSet(x, "runner", runnerSynopsis)
	var f clientFlags
	f.register(fs, x.getenv)
	key := fs.String("key", "", "the runner key (rnr_...); prefer "+envRunnerKey+" or --key-file, which ps does not show")
	keyFile := fs.String("key-file", "", "a file holding the runner key")
	workers := fs.Int("workers", 1, "jobs run at once (the runtime's parallelism is min(the batch's concurrency, all runners' workers))")
	heartbeat := fs.Duration("heartbeat", runnerwire.DefaultHeartbeat, "how often a running job's lease is renewed; a cancel reaches the runner within one interval")
	runtime := fs.String("runtime", "", "take only this runner runtime's jobs (default: every runner runtime of the workspace)")
	name := fs.String("name", "", "this runner's name in GET /runner-jobs (default: host and pid)")
	if err := parseNone(fs, args); err != nil {
		return exitProblem, err
	}
	secret, err := runnerKey(*key, *keyFile, x.getenv)
	if err != nil {
		return exitProblem, err
	}
	if *workers < 1 || *workers > 256 {
		return exitProblem, fmt.Errorf("%w: --workers %d: give 1 to 256", errUsage, *workers)
	}
	if *heartbeat < runnerwire.MinHeartbeat || *heartbeat > runnerwire.MaxHeartbeat {
		return exitProblem, fmt.Errorf("%w: --heartbeat %s: give %s to %s", errUsage, *heartbeat, runnerwire.MinHeartbeat, runnerwire.MaxHeartbeat)
	}
	c, err := f.client(x.getenv)
	if err != nil {
		return exitProblem, err
	}
	c.Token, c.Workspace = secret, ""
	// A lease waits up to runnerwire.MaxWait: the client waits longer.
	c.HTTP = &http.Client{Timeout: runnerwire.MaxWait + 30*time.Second}

	log := slog.New(slog.NewTextHandler(x.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg, err := config.Load(flag.NewFlagSet("svc runner settings", flag.ContinueOnError), nil, x.getenv)
	if err != nil {
		return exitProblem, fmt.Errorf("%w: %v", errUsage, err)
	}
	cfg.LocalMaxConcurrent = *workers
	// Its jobs reach the API they are told of (c.Base) from the isolated
	// network.
	d, err := open(ctx, cfg, log, c.Base)
	if err != nil {
		return exitProblem, err
	}
	defer d.Close()
	host, _ := os.Hostname()
	l := &runnerLoop{api: c, run: d, workers: *workers, heartbeat: *heartbeat, runtime: *runtime,
		name: *name, host: host, log: log}
	if l.name == "" {
		l.name = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	fmt.Fprintf(x.stdout, "svc runner %s: %d workers leasing from %s (heartbeat %s)\n", l.name, l.workers, c.Base, l.heartbeat)
	l.serve(ctx)
	return exitOK, nil
}

// runnerKey is the key from --key, else --key-file, else the environment.
func runnerKey(flagKey, file string, getenv func(string) string) (string, error) {
	key := flagKey
	switch {
	case key != "":
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%w: --key-file: %v", errUsage, err)
		}
		key = string(b)
	default:
		key = getenv(envRunnerKey)
	}
	key = strings.TrimSpace(key)
	if key == "" {
		return "", fmt.Errorf("%w: no runner key: set %s (or --key-file); an admin mints one with POST /runner-keys", errUsage, envRunnerKey)
	}
	if !strings.HasPrefix(key, "rnr_") {
		return "", fmt.Errorf("%w: the key is not a runner key (it must start with rnr_); mint one with POST /runner-keys", errUsage)
	}
	return key, nil
}

// serve runs the workers until ctx ends. A job still running then is
// killed and not reported: its lease runs out and another runner runs it.
func (l *runnerLoop) serve(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range l.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.worker(ctx, i)
		}()
	}
	wg.Wait()
}

// worker leases and runs jobs one at a time until ctx ends.
func (l *runnerLoop) worker(ctx context.Context, n int) {
	pause := time.Second
	for ctx.Err() == nil {
		lease, err := l.lease(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			l.log.Warn("runner: leasing failed; retrying", "worker", n, "err", err, "in", pause)
			sleepCtx(ctx, pause)
			pause = min(2*pause, 30*time.Second)
			continue
		}
		pause = time.Second
		if lease == nil {
			continue
		}
		l.runJob(ctx, n, lease)
	}
}

// lease asks for a job; nil when none came within the long poll.
func (l *runnerLoop) lease(ctx context.Context) (*runnerwire.Lease, error) {
	return l.api.Lease(ctx, runnerwire.LeaseRequest{
		Runner: l.name, Runtime: l.runtime, HeartbeatMs: l.heartbeat.Milliseconds(),
	})
}

// runJob runs a leased job with the local driver while heartbeating it,
// and posts its result unless the lease was lost.
func (l *runnerLoop) runJob(ctx context.Context, n int, lease *runnerwire.Lease) {
	j := lease.Job
	log := l.log.With("worker", n, "job", lease.JobID, "run", j.RunID)
	log.Info("runner: leased a job", "runtime", lease.Runtime)
	jctx, kill := context.WithCancel(ctx)
	defer kill()
	var (
		mu        sync.Mutex
		lost      bool
		cancelled bool
	)
	stop := make(chan struct{})
	beats := make(chan struct{})
	go func() {
		defer close(beats)
		t := time.NewTicker(l.heartbeat)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			reply, err := l.api.Heartbeat(jctx, lease.JobID,
				runnerwire.Heartbeat{LeaseID: lease.LeaseID, HeartbeatMs: l.heartbeat.Milliseconds()})
			var ae *client.Error
			switch {
			case err == nil && reply.Cancelled:
				mu.Lock()
				first := !cancelled
				cancelled = true
				mu.Unlock()
				if first {
					log.Info("runner: the service cancelled the job; killing it")
					kill()
				}
			case errors.As(err, &ae) && (ae.Status == http.StatusConflict || ae.Status == http.StatusNotFound):
				log.Warn("runner: the job's lease is lost (it ran out, and the job went to another runner); killing it", "err", err)
				mu.Lock()
				lost = true
				mu.Unlock()
				kill()
				return
			case err != nil && jctx.Err() == nil:
				log.Warn("runner: a heartbeat failed; trying again", "err", err)
			}
		}
	}()
	job := drivers.Job{
		RunID: j.RunID, Attempt: j.Attempt, Command: j.Command, Env: j.Env, Secrets: j.Secrets, Case: j.Case,
		Files: j.Files, WorkDir: j.WorkDir, Image: j.Image, Timeout: time.Duration(j.TimeoutMs) * time.Millisecond,
	}
	masked := secretValues(j.Secrets)
	if lease.OTLPToken != "" {
		// The harness's spans go to the control plane's OTLP door with
		// the job's run-scoped token, which travels in the secrets file
		// (never the environment or argv) and is masked in the output.
		job.OTLPEndpoint = l.api.Base
		job.Secrets = maps.Clone(j.Secrets)
		if job.Secrets == nil {
			job.Secrets = map[string]string{}
		}
		job.Secrets[runnerwire.OTLPHeadersSecret] = "Authorization=Bearer%20" + lease.OTLPToken
		masked = append(masked, lease.OTLPToken)
	}
	// The output goes to the API while the job runs (the run's live log),
	// with the job's secrets masked; a post that finds the lease lost
	// kills the job, as a heartbeat that does.
	ship := runnerside.NewLogShipper(runnerside.ShipperOptions{
		Secrets: masked, Every: min(l.heartbeat, 500*time.Millisecond), Logger: log,
		Post: func(ctx context.Context, chunks []runnerwire.LogChunk) error {
			err := l.api.PostLogs(ctx, lease.JobID, runnerwire.LogBatch{LeaseID: lease.LeaseID, Chunks: chunks})
			var ae *client.Error
			if errors.As(err, &ae) && (ae.Status == http.StatusConflict || ae.Status == http.StatusNotFound) {
				return fmt.Errorf("%w: %v", derrors.ErrConflict, err)
			}
			return err
		},
		Lost: func(err error) {
			log.Warn("runner: the job's lease is lost (its output was refused); killing it", "err", err)
			mu.Lock()
			lost = true
			mu.Unlock()
			kill()
		},
	})
	shipCtx, stopShip := context.WithCancel(ctx)
	shipped := make(chan struct{})
	go func() {
		defer close(shipped)
		ship.Run(shipCtx)
	}()
	job.Log = ship.Write
	res, err := l.run.Run(jctx, job)
	close(stop)
	<-beats
	stopShip()
	<-shipped
	mu.Lock()
	gone := lost
	mu.Unlock()
	if !gone && ctx.Err() == nil {
		// Every chunk before the result: the driver reads the job's
		// output up to its end once it sees the result.
		if err := ship.Close(ctx, 5); err != nil && !ship.Lost() {
			log.Warn("runner: posting the end of the job's output failed; the run's log misses it (the result keeps its tails)", "err", err)
		}
		gone = ship.Lost()
	}
	if gone || ctx.Err() != nil {
		// Another runner has it, or this one is stopping: its lease runs
		// out and another runner runs it.
		return
	}
	out := runnerwire.Result{
		ExitCode: res.ExitCode, DurationMs: res.Duration.Milliseconds(), Stdout: clipBytes(res.Stdout, maxPosted),
		StdoutTail: res.StdoutTail, StderrTail: res.StderrTail, Trace: clipBytes(string(res.Trace), maxPosted),
		TimedOut: res.TimedOut, Cancelled: res.Cancelled, OS: res.OS, Host: l.host,
	}
	if res.TraceRefused != "" {
		// The result's wire format has no field for it: the refusal
		// travels as the error event the service would add itself.
		out.Trace = refusedTraceLine(res.TraceRefused)
	}
	if err != nil {
		out = runnerwire.Result{ExitCode: -1, Error: err.Error(), Invalid: errors.Is(err, derrors.ErrInvalid), Host: l.host}
	}
	out = runnerside.MaskResult(masked, out, maxPosted, maxPosted, drivers.TailBytes)
	l.post(ctx, log, lease, out)
}

// refusedTraceLine is the trace line that says why the local driver did
// not read a job's trace file (traces.CodeTraceRefused).
func refusedTraceLine(why string) string {
	b, _ := json.Marshal(eval.TraceEvent{Kind: eval.EventError, Code: trace.CodeTraceRefused, Message: why})
	return string(b) + "\n"
}

// secretValues are the values of a job's secrets, for the output's mask.
func secretValues(secrets map[string]string) []string {
	out := make([]string, 0, len(secrets)+1)
	for _, v := range secrets {
		out = append(out, v)
	}
	return out
}

// maxPosted bounds stdout and the trace in a posted result, so that the
// two together stay under the API's body limit (10 MiB by default).
const maxPosted = 3 << 20

// clipBytes cuts s to at most n bytes, not inside a rune.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return string(drivers.TrimPartialEnd([]byte(s[:n])))
}

// post sends a job's result, retrying what may pass on a second try.
func (l *runnerLoop) post(ctx context.Context, log *slog.Logger, lease *runnerwire.Lease, out runnerwire.Result) {
	pause := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := l.api.PostResult(ctx, lease.JobID, runnerwire.Completion{LeaseID: lease.LeaseID, Result: out})
		if err == nil {
			log.Info("runner: posted the result", "exitCode", out.ExitCode, "cancelled", out.Cancelled, "durationMs", out.DurationMs)
			return
		}
		if !client.Transient(err) || attempt >= 5 || ctx.Err() != nil {
			log.Warn("runner: posting the result failed; the job's lease runs out and another runner runs it", "err", err)
			return
		}
		sleepCtx(ctx, pause)
		pause *= 2
	}
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
