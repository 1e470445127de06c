package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"svc/internal/domain/eventwire"
)

const eventsSynopsis = `usage: svc events [--type TYPE|GLOB] [--since T] [--limit N] [--cursor C] [--all]
                  [--format table|csv|jsonl|md] [--json]

The workspace's event log, newest first (GET /events, an admin's; docs/agents.md):
registrations (*.registered), moves, scorecard.scored, trace.*, run.snapshotted,
approval.*, agent.run.*, each with who caused it (causedBy agent:<id>:<conversation> when an
agent did). --type is an exact type or a glob where * matches any run of characters;
--since is an RFC 3339 instant or a duration back from now (2h, 30m); --limit is the page
size (1 to 200, default 50). One page is printed, and a note on stderr gives the cursor of
the next (--cursor C reads it); --all follows the cursor to the last page (a progress line
on stderr on a terminal). --json prints the service's events as one JSON array.

Exit codes: 0 listed; 2 usage or service error (the service's message says what to do).`

// RunEvents is `svc events`.
func RunEvents(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "events", eventsSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	typ := fs.String("type", "", "an event type (dataset.registered) or a glob (*.registered, trace.*)")
	since := fs.String("since", "", "only events at or after this: an RFC 3339 instant, or a duration back from now (2h)")
	limit := fs.Int("limit", 0, "events per page, 1 to 200 (default: the service's, 50)")
	cursor := fs.String("cursor", "", "start at this page (the cursor a previous listing named)")
	all := fs.Bool("all", false, "follow the cursor through every page")
	format := fs.String("format", formatTable, "output `format`: "+strings.Join(formats, ", "))
	asJSON := fs.Bool("json", false, "print the service's events as one JSON array")
	if err := parseNone(fs, args); err != nil {
		return 0, err
	}
	q := eventwire.Query{Type: *typ, Cursor: *cursor, Limit: *limit}
	if *since != "" {
		t, err := sinceInstant(*since, time.Now())
		if err != nil {
			return 0, err
		}
		q.Since = t
	}
	if *limit < 0 {
		return 0, fmt.Errorf("%w: --limit %d: want 1 to 200", errUsage, *limit)
	}
	c, err := cf.tableClient(x.getenv, *format)
	if err != nil {
		return 0, err
	}
	var (
		list  []eventwire.Event
		raws  []json.RawMessage
		pages int
		onTTY bool
	)
	for {
		page, raw, next, err := c.Events(ctx, q)
		if err != nil {
			if onTTY {
				fmt.Fprintln(x.stderr)
			}
			return 0, err
		}
		pages++
		list = append(list, page...)
		if *asJSON {
			var items []json.RawMessage
			if err := json.Unmarshal(raw, &items); err != nil {
				return 0, fmt.Errorf("GET /events answered a body that is not a JSON array: %v", err)
			}
			raws = append(raws, items...)
		}
		if next == "" {
			break
		}
		if !*all {
			fmt.Fprintf(x.stderr, "more events: --cursor %s reads the next page, --all reads them all\n", next)
			break
		}
		if x.tty {
			fmt.Fprintf(x.stderr, "\rsvc events: %d events read (page %d)\x1b[K", len(list), pages)
			onTTY = true
		}
		q.Cursor = next
	}
	if onTTY {
		fmt.Fprintf(x.stderr, "\rsvc events: %d events read (page %d)\x1b[K\n", len(list), pages)
	}
	var raw json.RawMessage
	if *asJSON {
		raw = joinArray(raws)
	}
	sh := &sheet{cols: []column{
		{head: "SEQ", key: "seq"},
		{head: "TYPE", key: "type"},
		{head: "SUBJECT", key: "subject", clip: 48},
		{head: "ACTOR", key: "actor"},
		{head: "CAUSED BY", key: "causedBy"},
		{head: "AT", key: "createdAt"},
	}}
	for _, e := range list {
		sh.add(e.Seq, e.Type, e.Subject, e.Actor, e.CausedBy, e.CreatedAt)
	}
	return writeList(x, sh, *format, *asJSON, raw, func() {
		fmt.Fprintln(x.stderr, "no events match")
	})
}

// sinceInstant reads --since: an RFC 3339 instant as it is, or a duration
// back from now.
func sinceInstant(s string, now time.Time) (string, error) {
	if _, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return s, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return "", fmt.Errorf("%w: --since %q: want an RFC 3339 instant (2026-05-01T10:00:00Z) or a duration back from now (2h, 30m)", errUsage, s)
	}
	return now.Add(-d).UTC().Format(time.RFC3339), nil
}

// joinArray writes items as one JSON array, each as the service sent it.
func joinArray(items []json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteByte(']')
	return b.Bytes()
}
