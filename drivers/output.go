package drivers

import (
	"cmp"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Capture keeps what a driver reports of one output stream of a job: its
// head, up to Max bytes when Max > 0 (Result.Stdout), and its last
// TailBytes (Result.StdoutTail, StderrTail). The zero value keeps the tail
// only.
type Capture struct {
	Max  int
	head []byte
	tail []byte
}

// Add records p, the stream's next bytes.
func (c *Capture) Add(p []byte) {
	if c.Max > 0 && len(c.head) < c.Max {
		c.head = append(c.head, p[:min(len(p), c.Max-len(c.head))]...)
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*TailBytes {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-TailBytes:]...)
	}
}

// Head returns the head, without a rune cut in half at its end.
func (c *Capture) Head() string {
	h := c.head
	if c.Max > 0 && len(h) == c.Max {
		h = TrimPartialEnd(h)
	}
	return string(h)
}

// Tail returns the last TailBytes, without a rune cut in half at its
// start.
func (c *Capture) Tail() string {
	t := c.tail
	if len(t) > TailBytes {
		t = t[len(t)-TailBytes:]
		for i := 0; i < utf8.UTFMax-1 && len(t) > 0 && !utf8.RuneStart(t[0]); i++ {
			t = t[1:]
		}
	}
	return string(t)
}

// TrimPartialEnd drops an incomplete UTF-8 sequence at the end of b.
func TrimPartialEnd(b []byte) []byte {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

// PercentEncode encodes a resource attribute value as the OpenTelemetry
// environment variable format requires (',', '=' and the like escaped),
// for OTEL_RESOURCE_ATTRIBUTES=svc.run_id=<id>.
func PercentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// The contract variables every driver sets (the harness contract of
// ARCHITECTURE.md); a job's Env cannot override them.
const (
	EnvCaseFile    = "SVC_CASE_FILE"    // the case as JSON
	EnvTraceFile   = "SVC_TRACE_FILE"   // where a harness may append TraceEvent JSON lines
	EnvWorkDir     = "SVC_WORK_DIR"     // the job's work directory, where Files are
	EnvRunID       = "SVC_RUN_ID"       // the run id
	EnvSecretsFile = "SVC_SECRETS_FILE" // the 0600 JSON object of secrets

	EnvResourceAttrs = "OTEL_RESOURCE_ATTRIBUTES"
	EnvOTLPEndpoint  = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTLPProtocol  = "OTEL_EXPORTER_OTLP_PROTOCOL"
)

// Paths are where a job's contract files are, as the job sees them.
type Paths struct {
	CaseFile, TraceFile, WorkDir, SecretsFile string
}

// SetContract sets the contract variables of job j in env, which holds the
// job's own Env (and whatever defaults the driver gives): the files at p,
// the run id, OTEL_RESOURCE_ATTRIBUTES with svc.run_id first (the job's
// own attributes kept after it, minus any svc.run_id of its own), and the
// OTLP endpoint, j's or else otlpEndpoint, when there is one.
func SetContract(env map[string]string, j Job, p Paths, otlpEndpoint string) {
	attrs := "svc.run_id=" + PercentEncode(j.RunID)
	if own := j.Env[EnvResourceAttrs]; own != "" {
		for _, kv := range strings.Split(own, ",") {
			if k, _, _ := strings.Cut(kv, "="); strings.TrimSpace(k) != "svc.run_id" && strings.TrimSpace(kv) != "" {
				attrs += "," + kv
			}
		}
	}
	env[EnvCaseFile] = p.CaseFile
	env[EnvTraceFile] = p.TraceFile
	env[EnvWorkDir] = p.WorkDir
	env[EnvRunID] = j.RunID
	env[EnvSecretsFile] = p.SecretsFile
	env[EnvResourceAttrs] = attrs
	if ep := cmp.Or(j.OTLPEndpoint, otlpEndpoint); ep != "" {
		env[EnvOTLPEndpoint] = ep
		env[EnvOTLPProtocol] = "http/json"
	}
}

// TraceStream names, in Output.Write, a stream that carries the job's
// trace (SVC_TRACE_FILE) rather than its output.
const TraceStream = "trace"

// Output collects what a remote job wrote, as its driver reads it from the
// cluster: the head of stdout (up to MaxOutput) and the tails of stdout
// and stderr, each chunk handed on to the job's Log one call at a time;
// and the head of its trace, for a driver that reads the trace as a
// stream. It is safe for concurrent use.
type Output struct {
	mu     sync.Mutex
	log    func(stream string, data []byte)
	stdout Capture
	stderr Capture
	trace  Capture
}

// NewOutput returns an Output handing stdout and stderr to log (may be nil).
func NewOutput(log func(stream string, data []byte)) *Output {
	return &Output{log: log, stdout: Capture{Max: MaxOutput}, trace: Capture{Max: MaxOutput}}
}

// Write records a chunk of stream: "stdout", "stderr" or TraceStream.
func (o *Output) Write(stream string, p []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch stream {
	case "stdout":
		o.stdout.Add(p)
	case TraceStream:
		o.trace.Add(p)
		return
	default:
		o.stderr.Add(p)
	}
	if o.log != nil {
		o.log(stream, p)
	}
}

// Fill sets the output fields of res, and its Trace when a trace stream
// was written.
func (o *Output) Fill(res *Result) {
	o.mu.Lock()
	defer o.mu.Unlock()
	res.Stdout = o.stdout.Head()
	res.StdoutTail = o.stdout.Tail()
	res.StderrTail = o.stderr.Tail()
	if t := o.trace.Head(); t != "" {
		res.Trace = []byte(t)
	}
}

// Drain waits for wg, the readers of a job's output, to end on their own;
// after timeout it calls cut (which makes them end: closing their pipes or
// cancelling their streams) and waits for them.
func Drain(wg *sync.WaitGroup, timeout time.Duration, cut func()) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		cut()
		<-done
	}
}
