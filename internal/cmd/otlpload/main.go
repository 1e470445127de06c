// Command otlpload measures the OTLP door of a running svc binary in
// spans/s, side by side with the decode-only rate of the official decoder
// in the same process, round after round (A B A B):
//
//	otlpload -url http://127.0.0.1:8080 -exports 400 -clients 4 -rounds 2
//
// Each export is one OTLP/HTTP protobuf request of -spans GenAI spans
// (chat and tool calls, eight attributes each) of its own external
// trajectory, as an SDK's batch processor sends them; the door answers
// only once they are stored durably. -key sends Authorization: Bearer.
// With -sealed it then waits until the sweep has sealed every trajectory
// (GET /trajectories/:id) and says how long after the first export that
// was. bench/otlp-door.sh starts the binary and runs it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"svc/internal/testing/otlpgen"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "otlpload:", err)
		os.Exit(1)
	}
}

type options struct {
	url, key, prefix        string
	exports, clients, spans int
	rounds                  int
	varied                  bool
	sealed                  time.Duration
}

func run(args []string) error {
	var o options
	fs := flag.NewFlagSet("otlpload", flag.ContinueOnError)
	fs.StringVar(&o.url, "url", "", "the service's base URL (required)")
	fs.StringVar(&o.key, "key", "", "an API key sent as Authorization: Bearer")
	fs.StringVar(&o.prefix, "run-prefix", fmt.Sprintf("load%d", time.Now().Unix()%100000), "prefix of the exports' svc.run_id")
	fs.IntVar(&o.exports, "exports", 400, "exports a round")
	fs.IntVar(&o.clients, "clients", 4, "exports in flight at once")
	fs.IntVar(&o.spans, "spans", 1000, "spans an export")
	fs.IntVar(&o.rounds, "rounds", 2, "rounds of decode-only then door")
	fs.BoolVar(&o.varied, "varied", false, "each span's input message its own text (otlpgen.GenAIVaried), rather than the same one")
	fs.DurationVar(&o.sealed, "sealed", 0, "after the last round, wait at most this long for every trajectory to be sealed (0: do not wait)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.url == "" || o.exports < 1 || o.clients < 1 || o.spans < 1 || o.rounds < 1 {
		return errors.New("-url is required; -exports, -clients, -spans and -rounds must be at least 1")
	}
	base, err := encode(o.spans, "run-placeholder-0000000000", o.varied, 0)
	if err != nil {
		return err
	}
	content := "the same input message in every span"
	if o.varied {
		content = "each span's input message its own text"
	}
	fmt.Printf("export: %d spans, %d bytes of protobuf (%s); %d exports a round, %d in flight\n", o.spans, len(base), content, o.exports, o.clients)
	ctx := context.Background()
	var ids []string
	var first time.Time
	for r := range o.rounds {
		rate, err := decodeOnly(base, o.exports, o.spans)
		if err != nil {
			return err
		}
		fmt.Printf("round %d  decode-only (proto.Unmarshal, one goroutine): %8.0f spans/s\n", r+1, rate)
		bodies := make([][]byte, o.exports)
		for i := range bodies {
			id := fmt.Sprintf("%s-%d-%07d", o.prefix, r, i)
			ids = append(ids, id)
			if bodies[i], err = encode(o.spans, id, o.varied, uint64(r*o.exports+i+1)); err != nil {
				return err
			}
		}
		start := time.Now()
		if first.IsZero() {
			first = start
		}
		busy0, total0 := machineJiffies()
		if err := door(ctx, o, bodies); err != nil {
			return err
		}
		took := time.Since(start)
		busy1, total1 := machineJiffies()
		busy := ""
		if total1 > total0 {
			busy = fmt.Sprintf("; machine busy %.0f%%", 100*float64(busy1-busy0)/float64(total1-total0))
		}
		fmt.Printf("round %d  door (POST /v1/traces, stored durably):   %8.0f spans/s  (%d exports in %.2f s%s)\n",
			r+1, float64(o.exports*o.spans)/took.Seconds(), o.exports, took.Seconds(), busy)
	}
	if o.sealed > 0 {
		return waitSealed(ctx, o, ids, first)
	}
	return nil
}

// encode is an export of n GenAI spans under svc.run_id runID, with a
// trace id of its own (the run id's last 16 bytes); varied gives each
// span its own input message (from seed).
func encode(n int, runID string, varied bool, seed uint64) ([]byte, error) {
	traceID := make([]byte, 16)
	copy(traceID, runID[max(0, len(runID)-16):])
	if varied {
		return proto.Marshal(otlpgen.GenAIVaried(n, runID, traceID, seed))
	}
	return proto.Marshal(otlpgen.GenAI(n, runID, traceID))
}

// decodeOnly is the official decoder's rate on body, in spans/s, over
// exports decodes on one goroutine.
func decodeOnly(body []byte, exports, spans int) (float64, error) {
	start := time.Now()
	for range exports {
		req := &coltracepb.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			return 0, err
		}
	}
	return float64(exports*spans) / time.Since(start).Seconds(), nil
}

// door posts bodies from o.clients goroutines; any answer but a full
// success is an error.
func door(ctx context.Context, o options, bodies [][]byte) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, o.clients)
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: o.clients}}
	for c := range o.clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) || errs[c] != nil {
					return
				}
				errs[c] = post(ctx, client, o, bodies[i])
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func post(ctx context.Context, client *http.Client, o options, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.url+"/v1/traces", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if o.key != "" {
		req.Header.Set("Authorization", "Bearer "+o.key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /v1/traces: %s: %s", resp.Status, data)
	}
	var out coltracepb.ExportTraceServiceResponse
	if err := proto.Unmarshal(data, &out); err != nil {
		return fmt.Errorf("POST /v1/traces: the answer does not decode: %v", err)
	}
	if ps := out.GetPartialSuccess(); ps != nil {
		return fmt.Errorf("POST /v1/traces: %d spans rejected: %s", ps.GetRejectedSpans(), ps.GetErrorMessage())
	}
	return nil
}

// waitSealed polls the list of sealed trajectories until it holds every
// one of ids.
func waitSealed(ctx context.Context, o options, ids []string, first time.Time) error {
	deadline := time.Now().Add(o.sealed)
	client := &http.Client{Timeout: 30 * time.Second}
	for {
		sealed, err := countSealed(ctx, client, o, ids)
		if err != nil {
			return err
		}
		if sealed == len(ids) {
			fmt.Printf("sealed: all %d trajectories, %.1f s after the first export (the sweep runs every minute)\n", len(ids), time.Since(first).Seconds())
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d trajectories not sealed after %s", len(ids)-sealed, len(ids), o.sealed)
		}
		fmt.Printf("  waiting for the sweep: %d of %d trajectories sealed\n", sealed, len(ids))
		time.Sleep(2 * time.Second)
	}
}

// countSealed is how many of ids GET /trajectories lists, page by page.
func countSealed(ctx context.Context, client *http.Client, o options, ids []string) (int, error) {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	n, cursor := 0, ""
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.url+"/trajectories?limit=500&cursor="+url.QueryEscape(cursor), nil)
		if err != nil {
			return 0, err
		}
		if o.key != "" {
			req.Header.Set("Authorization", "Bearer "+o.key)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		var page []struct {
			RunID string `json:"runId"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil {
			return 0, fmt.Errorf("GET /trajectories: %s %v", resp.Status, err)
		}
		for _, t := range page {
			if want[t.RunID] {
				n++
			}
		}
		if cursor = resp.Header.Get("X-Svc-Next-Cursor"); cursor == "" {
			return n, nil
		}
	}
}

// machineJiffies is the machine's busy and total CPU time so far, in
// clock ticks (/proc/stat; idle and iowait are not busy).
func machineJiffies() (busy, total int64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	fields := bytes.Fields(line)
	for i, f := range fields[1:] {
		var v int64
		fmt.Sscan(string(f), &v)
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total
}
