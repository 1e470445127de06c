package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"svc/internal/domain/eval"
)

const runsSynopsis = `usage: svc runs logs <run-id> [--follow] [--json]
       svc runs trace <run-id> [--format table|csv|jsonl|md] [--json]

logs prints a run's logs (GET /runs/:id/logs): the harness's stdout on stdout, its stderr
and the platform's lines on stderr. --follow keeps reading while the run is live.
trace prints a run's trajectory (GET /runs/:id/trajectory), one event a line: messages, tool
calls with their input and output, model calls with tokens and cost, errors, artifacts and
spans. --format jsonl prints each event's JSON as the service sent it.

The run ids of a scorecard's cases are in svc scorecard show (column RUN).

Exit codes: 0 printed; 2 usage or service error (an unknown run, a run with no trajectory yet).`

// RunRuns is `svc runs`.
func RunRuns(ctx context.Context, x *cli, args []string) (int, error) {
	return subcommand(ctx, x, runsSynopsis, []sub{
		{"logs", runRunsLogs},
		{"trace", runRunsTrace},
	}, args)
}

// logPageSize is the chunks one read asks for (the service's maximum).
const logPageSize = 5000

// runRunsLogs is `svc runs logs`.
func runRunsLogs(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "runs logs", runsSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	follow := fs.Bool("follow", false, "keep reading until the run is over")
	asJSON := fs.Bool("json", false, "print each page the service answers as a line of JSON")
	arg, c, err := cf.oneArg(fs, args, "run id", x.getenv)
	if err != nil {
		return 0, err
	}
	var after int64
	for {
		p, raw, err := c.RunLogs(ctx, arg, after, logPageSize)
		if err != nil {
			return 0, err
		}
		if *asJSON {
			// One page a line: the pages of a long log read as JSONL.
			var compact bytes.Buffer
			if json.Compact(&compact, raw) == nil {
				raw = compact.Bytes()
			}
			writeJSON(x.stdout, raw)
		} else {
			for _, ch := range p.Chunks {
				w := x.stderr
				if ch.Stream == "stdout" {
					w = x.stdout
				}
				io.WriteString(w, ch.Data)
			}
		}
		after = max(after, p.LastSeq)
		switch {
		case len(p.Chunks) == logPageSize:
			continue // more are stored
		case !*follow || !p.Live:
			return exitOK, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("interrupted")
		case <-time.After(x.poll):
		}
	}
}

// runRunsTrace is `svc runs trace`.
func runRunsTrace(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "runs trace", runsSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	format := fs.String("format", formatTable, "output `format`: table, csv, jsonl (each event as sent) or md")
	asJSON := fs.Bool("json", false, "print the service's JSON")
	arg, err := parseOne(fs, args, "run id")
	if err != nil {
		return 0, err
	}
	c, err := cf.tableClient(x.getenv, *format)
	if err != nil {
		return 0, err
	}
	t, raw, err := c.Trajectory(ctx, arg)
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
		return exitOK, nil
	}
	if *format == formatJSONL {
		for _, e := range t.Events {
			writeJSON(x.stdout, e)
		}
		return exitOK, nil
	}
	sh := &sheet{cols: []column{
		{head: "#", key: "n"},
		{head: "KIND", key: "kind"},
		{head: "NAME", key: "name"},
		{head: "DETAIL", key: "detail", clip: 100},
		{head: "MS", key: "durationMs"},
		{head: "TOKENS", key: "tokens"},
		{head: "USD", key: "costUsd"},
	}}
	for i, raw := range t.Events {
		var e eval.TraceEvent
		if err := json.Unmarshal(raw, &e); err != nil {
			return 0, fmt.Errorf("event %d of the trajectory does not decode: %v", i, err)
		}
		name, detail := eventText(e)
		var ms, tokens, usd any
		if e.DurationMs > 0 {
			ms = e.DurationMs
		}
		if e.InputTokens+e.OutputTokens > 0 {
			tokens = fmt.Sprintf("%d+%d", e.InputTokens, e.OutputTokens)
		}
		if e.CostUSD > 0 {
			usd = e.CostUSD
		}
		sh.add(i+1, e.Kind, name, detail, ms, tokens, usd)
	}
	if *format == formatTable {
		sealed := "not sealed"
		if t.Meta.SealedAt != nil {
			sealed = "sealed"
		}
		fmt.Fprintf(x.stdout, "run %s: %d %s (%s, source %s)\n", arg, len(t.Events), plural(len(t.Events), "event"), sealed, t.Meta.Source)
		if len(t.Events) == 0 {
			return exitOK, nil
		}
	}
	return exitOK, sh.write(x.stdout, *format)
}

// eventText is an event's name column and its one-line gist.
func eventText(e eval.TraceEvent) (name, detail string) {
	switch e.Kind {
	case eval.EventMessage:
		return e.Role, e.Content
	case eval.EventToolCall:
		d := string(e.Input)
		if len(e.Output) > 0 {
			d += " -> " + string(e.Output)
		}
		return e.Name, d
	case eval.EventLLMCall:
		d := string(e.Output)
		if d == "" {
			d = string(e.Input)
		}
		return e.Model, d
	case eval.EventError:
		return e.Code, e.Message
	case eval.EventArtifact:
		return e.Name, strings.TrimSpace(e.Ref + " " + e.MediaType + " " + e.Role)
	case eval.EventSpan:
		b, _ := json.Marshal(e.Attributes)
		if len(e.Attributes) == 0 {
			b = nil
		}
		return e.Name, string(b)
	}
	return e.Name, e.Content
}
