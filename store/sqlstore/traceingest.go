package sqlstore

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"svc/internal/platform/bufpool"
	"svc/internal/platform/derrors"
	"svc/store"
)

// defaultPendingGroupLimit is ListPendingGroups' page size when none is given.
const defaultPendingGroupLimit = 100

// defaultTrajectoryDeleteLimit is DeleteTrajectoriesBefore's batch when none is given.
const defaultTrajectoryDeleteLimit = 1000

// groupsPerRead bounds the groups of one ListPendingSpansOf statement.
const groupsPerRead = 256

// Pending spans are stored one row of pending_span_batches per
// (AddPendingSpans call, group) (migration 0017): the events as a JSON
// array, one event a line, with the keys and start times beside them as
// JSON arrays in the same order. One row per span cost PostgreSQL about
// 25 µs a span (a json value, a primary-key and an index entry each).

// pendingBatch is what one row holds before it is written.
type pendingBatch struct {
	ref      store.PendingGroupRef
	external bool
	at       time.Time
	spans    []store.PendingSpan
}

// AddPendingSpans stores spans once each; see store.TraceIngest.
func (o ops) AddPendingSpans(ctx context.Context, spans []store.PendingSpan) (added int, err error) {
	defer derrors.Wrap(&err, "%s.AddPendingSpans(ctx, %d spans)", o.kind, len(spans))
	batches, err := pendingBatches(spans)
	if err != nil || len(batches) == 0 {
		return 0, err
	}
	if err := o.checkStoredEvents(spans); err != nil {
		return 0, err
	}
	add := func(o ops) error {
		added = 0
		for _, b := range batches {
			n, err := o.addPendingBatch(ctx, b)
			if err != nil {
				return err
			}
			added += n
		}
		return nil
	}
	if err := o.inPendingTx(ctx, add); err != nil {
		// The database refused the events array: say which event is
		// not JSON.
		if bad := checkEvents(spans); bad != nil {
			return 0, bad
		}
		return 0, err
	}
	return added, nil
}

// errOverQuota rolls back AddPendingSpansQuota past the quota.
var errOverQuota = errors.New("over the quota")

// AddPendingSpansQuota adds spans and counts them under a quota; see store.TraceIngest.
func (o ops) AddPendingSpansQuota(ctx context.Context, spans []store.PendingSpan, workspace string, window time.Time, quota int64) (added int, used int64, over bool, err error) {
	defer derrors.Wrap(&err, "%s.AddPendingSpansQuota(ctx, %d spans, %q, %v, %d)", o.kind, len(spans), workspace, window, quota)
	if err := required("workspace", workspace); err != nil {
		return 0, 0, false, err
	}
	if err := checkText(workspace); err != nil {
		return 0, 0, false, err
	}
	w, err := hourWindow(window)
	if err != nil {
		return 0, 0, false, err
	}
	batches, err := pendingBatches(spans)
	if err != nil {
		return 0, 0, false, err
	}
	if err := o.checkStoredEvents(spans); err != nil {
		return 0, 0, false, err
	}
	for _, b := range batches {
		if b.ref.Workspace != workspace {
			return 0, 0, false, derrors.Invalidf("span of workspace %q counted under workspace %q", b.ref.Workspace, workspace)
		}
	}
	add := func(o ops) error {
		added, used, over = 0, 0, false
		for _, b := range batches {
			n, err := o.addPendingBatch(ctx, b)
			if err != nil {
				return err
			}
			added += n
		}
		// The upsert locks the hour's row and returns the count with
		// every committed export's: the check after it is exact at any
		// isolation.
		var total int64
		err := o.w.QueryRowContext(ctx, `INSERT INTO trace_usage (workspace, window_start, events) VALUES ($1, $2, $3)
			ON CONFLICT (workspace, window_start) DO UPDATE SET events = trace_usage.events + excluded.events
			RETURNING events`, workspace, o.d.TimeArg(w), int64(added)).Scan(&total)
		if err != nil {
			return o.mapErr(err)
		}
		used = total - int64(added)
		if quota > 0 && added > 0 && total > quota {
			over = true
			return errOverQuota
		}
		return nil
	}
	err = o.inPendingTx(ctx, add)
	switch {
	case errors.Is(err, errOverQuota):
		return added, used, true, nil
	case err != nil:
		if bad := checkEvents(spans); bad != nil {
			return 0, 0, false, bad
		}
		return 0, 0, false, err
	}
	return added, used, false, nil
}

// inPendingTx runs fn in the transaction of o, or in a new one: at READ
// COMMITTED on PostgreSQL, so that each statement sees what the group's
// previous lock holder committed (a serializable snapshot would be taken
// before the lock is granted, and exports of other groups would conflict
// on the index pages they read).
func (o ops) inPendingTx(ctx context.Context, fn func(o ops) error) error {
	switch {
	case o.db == nil:
		return fn(o)
	case o.d.Name() == "postgres":
		return o.db.run(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted}, fn)
	default:
		return o.atomic(ctx, fn)
	}
}

// pendingBatches checks spans and splits them into rows: one per group
// (and receipt time and external flag, which a call's spans normally
// share), in lock order, each span once.
func pendingBatches(spans []store.PendingSpan) ([]*pendingBatch, error) {
	type batchKey struct {
		ref      store.PendingGroupRef
		external bool
		at       time.Time
	}
	type spanKey struct {
		ref store.PendingGroupRef
		key string
	}
	var batches []*pendingBatch
	byKey := map[batchKey]*pendingBatch{}
	var seen map[spanKey]bool
	// An export's spans are one group's, one after the other: a span of
	// the previous span's batch takes neither the group's checks again
	// nor a map lookup.
	var last *pendingBatch
	var lastWorkspace, lastGroup string
	var lastAt time.Time
	for _, s := range spans {
		if s.Key == "" {
			return nil, derrors.Invalidf("key is required")
		}
		if err := checkText(s.Key); err != nil {
			return nil, err
		}
		ev, err := s.Event, error(nil)
		if s.Canonical {
			err = canonicalEvent(ev)
		} else {
			ev, err = storedEvent(ev)
		}
		if err != nil {
			return nil, err
		}
		s.Event = ev
		var b *pendingBatch
		if last != nil && s.Workspace == lastWorkspace && s.Group == lastGroup && s.External == last.external && s.ReceivedAt.Equal(lastAt) {
			b = last
			s.ReceivedAt = b.at
		} else {
			if err := required("workspace", s.Workspace, "group", s.Group); err != nil {
				return nil, err
			}
			if err := checkText(s.Workspace, s.Group); err != nil {
				return nil, err
			}
			lastWorkspace, lastGroup, lastAt = s.Workspace, s.Group, s.ReceivedAt
			s.ReceivedAt = normTime(s.ReceivedAt)
			k := batchKey{store.PendingGroupRef{Workspace: s.Workspace, Group: s.Group}, s.External, s.ReceivedAt}
			b = byKey[k]
			if b == nil {
				if len(byKey) > 0 && seen == nil {
					// Several rows: a key may repeat across them.
					seen = map[spanKey]bool{}
					for _, b := range batches {
						for _, sp := range b.spans {
							seen[spanKey{b.ref, sp.Key}] = true
						}
					}
				}
				b = &pendingBatch{ref: k.ref, external: s.External, at: s.ReceivedAt}
				if len(batches) == 0 {
					// An export's spans are usually all one row's.
					b.spans = make([]store.PendingSpan, 0, len(spans))
				}
				byKey[k] = b
				batches = append(batches, b)
			}
			last = b
		}
		if seen != nil {
			sk := spanKey{b.ref, s.Key}
			if seen[sk] {
				continue
			}
			seen[sk] = true
		}
		b.spans = append(b.spans, s)
	}
	for _, b := range batches {
		// The first of a key repeated within a row is kept (seen keeps
		// a key out of a second row of its group).
		b.spans = firstOfEachKey(b.spans)
		if !slices.IsSortedFunc(b.spans, comparePending) {
			slices.SortStableFunc(b.spans, comparePending)
		}
	}
	slices.SortStableFunc(batches, func(x, y *pendingBatch) int {
		return cmp.Or(strings.Compare(x.ref.Workspace, y.ref.Workspace), strings.Compare(x.ref.Group, y.ref.Group))
	})
	return batches, nil
}

// firstOfEachKey drops the spans whose key an earlier one has.
func firstOfEachKey(spans []store.PendingSpan) []store.PendingSpan {
	seen := make(map[string]struct{}, len(spans))
	var out []store.PendingSpan // nil until a key repeats
	for i, s := range spans {
		if _, dup := seen[s.Key]; dup {
			if out == nil {
				out = slices.Clone(spans[:i])
			}
			continue
		}
		seen[s.Key] = struct{}{}
		if out != nil {
			out = append(out, s)
		}
	}
	if out == nil {
		return spans
	}
	return out
}

// comparePending is the listing order: start time, then key.
func comparePending(x, y store.PendingSpan) int {
	return cmp.Or(cmp.Compare(x.StartUnixNano, y.StartUnixNano), strings.Compare(x.Key, y.Key))
}

// storedEvent checks an event cheaply and returns it as stored: without
// raw newlines (which, in JSON, are whitespace). The database checks the
// whole events array is JSON; scanEvent makes sure each event is exactly
// one of its elements.
func storedEvent(ev json.RawMessage) (json.RawMessage, error) {
	if len(ev) == 0 {
		return nil, derrors.Invalidf("event is required")
	}
	if !utf8.Valid(ev) {
		return nil, derrors.Invalidf("event is not valid UTF-8")
	}
	shape, newline, nul := scanEvent(ev)
	if newline {
		var b bytes.Buffer
		if err := json.Compact(&b, ev); err != nil {
			return nil, derrors.Invalidf("event is not JSON")
		}
		ev = b.Bytes()
		shape, _, nul = scanEvent(ev)
	}
	if !shape {
		return nil, derrors.Invalidf("event is not one JSON value")
	}
	if nul {
		return nil, fmt.Errorf("event: %w", derrors.Invalidf("text contains a NUL character (\\u0000)"))
	}
	return ev, nil
}

// canonicalEvent checks an event marked Canonical: the canonical writer's
// output is JSON on one line by construction, so only a NUL escape is
// looked for (checkDoc's rule), a word at a time.
func canonicalEvent(ev json.RawMessage) error {
	if len(ev) == 0 {
		return derrors.Invalidf("event is required")
	}
	for at := 0; ; {
		i := bytes.Index(ev[at:], []byte(`\u0000`))
		if i < 0 {
			return nil
		}
		i += at
		// An escape when an even number of backslashes precede it.
		n := 0
		for j := i - 1; j >= 0 && ev[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return fmt.Errorf("event: %w", derrors.Invalidf("text contains a NUL character (\\u0000)"))
		}
		at = i + 1
	}
}

// scanEvent is one pass over an event: shape reports whether ev, as an
// element of a JSON array the database has found valid, is exactly one
// element (its strings close, its brackets balance and nothing separates
// values outside them); newline whether it holds a raw newline; and nul
// whether a string of it escapes a NUL character (\u0000), which
// PostgreSQL's json refuses to turn into text (checkDoc's rule).
func scanEvent(ev []byte) (shape, newline, nul bool) {
	depth := 0
	for i := 0; i < len(ev); i++ {
		switch ev[i] {
		case '"':
			// The string's end is the next quote not escaped; its
			// contents are searched a word at a time (bytes.IndexByte).
			end := -1
			for j := i + 1; j < len(ev); {
				k := bytes.IndexByte(ev[j:], '"')
				if k < 0 {
					break
				}
				q := j + k
				n := 0
				for b := q - 1; b > i && ev[b] == '\\'; b-- {
					n++
				}
				if n%2 == 0 {
					end = q
					break
				}
				j = q + 1
			}
			if end < 0 {
				return false, newline, nul
			}
			body := ev[i+1 : end]
			if bytes.IndexByte(body, '\n') >= 0 {
				newline = true
			}
			if !nul && bytes.IndexByte(body, '\\') >= 0 {
				nul = escapesNUL(body)
			}
			i = end
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth < 0 {
				return false, newline, nul
			}
		case ',', ':':
			if depth == 0 {
				return false, newline, nul
			}
		case '\n':
			newline = true
		}
	}
	return depth == 0, newline, nul
}

// escapesNUL reports whether a JSON string's contents escape a NUL
// character (\u0000).
func escapesNUL(body []byte) bool {
	for i := 0; i < len(body); i++ {
		if body[i] == '\\' {
			if i+5 < len(body) && body[i+1] == 'u' && string(body[i+2:i+6]) == "0000" {
				return true
			}
			i++
		}
	}
	return false
}

// encodedBatch is a row's keys, starts, sizes and events columns, and its
// digest ("" when the row cannot be sealed as it is).
type encodedBatch struct {
	keys, starts, sizes, events []byte
	digest                      string
	pooled                      *[]byte // events' storage, from joinBuffers
}

// joinBuffers holds the storage encodeBatch joins a row's events in,
// which only lives until they are compressed and sent.
var joinBuffers = bufpool.Pool{Max: 64 << 20}

// release gives e's events storage back; e.events is not read after.
func (e encodedBatch) release() { joinBuffers.Put(e.pooled, e.events) }

// encodeBatch writes a row's columns: the events as the JSON array a
// trajectory of them alone would be, and beside it the keys, start times
// and each event's length, in the same order. The digest covers the
// events when every span is Canonical and has a start time, so that the
// row's order is a trajectory's (see store.TraceIngest.SealPendingGroup).
func encodeBatch(spans []store.PendingSpan) encodedBatch {
	n := 2
	sealable := true
	for _, s := range spans {
		n += len(s.Event) + 1
		sealable = sealable && s.Canonical && s.StartUnixNano != 0
	}
	events := joinBuffers.Get(n)
	e := encodedBatch{
		pooled: events,
		events: *events,
		keys:   make([]byte, 0, 52*len(spans)+2),
		starts: make([]byte, 0, 21*len(spans)+2),
		sizes:  make([]byte, 0, 5*len(spans)+2),
	}
	e.events, e.keys, e.starts, e.sizes = append(e.events, '['), append(e.keys, '['), append(e.starts, '['), append(e.sizes, '[')
	for i, s := range spans {
		if i > 0 {
			e.events, e.keys, e.starts, e.sizes = append(e.events, ','), append(e.keys, ','), append(e.starts, ','), append(e.sizes, ',')
		}
		e.events = append(e.events, s.Event...)
		e.keys = appendJSONString(e.keys, s.Key)
		e.starts = strconv.AppendInt(e.starts, s.StartUnixNano, 10)
		e.sizes = strconv.AppendInt(e.sizes, int64(len(s.Event)), 10)
	}
	e.keys, e.starts, e.sizes, e.events = append(e.keys, ']'), append(e.starts, ']'), append(e.sizes, ']'), append(e.events, ']')
	if sealable {
		sum := sha256.Sum256(e.events)
		e.digest = "sha256:" + hex.EncodeToString(sum[:])
	}
	return e
}

// appendJSONString appends s as a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, _ := json.Marshal(s) // valid UTF-8 (checkText): cannot fail
	return append(dst, b...)
}

// Statements of addPendingBatch. The insert adds the row only if no key of
// it is stored for the group yet (the common case: a new group, or new
// spans of a live one); otherwise the stored keys are read and the others
// inserted.
const (
	pgPendingLock   = `SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))`
	pgPendingInsert = `INSERT INTO pending_span_batches (workspace, grp, external, received_at, spans, keys, starts, sizes, digest, events_z)
		SELECT $1::text, $2::text, $3::boolean, $4::timestamptz, $5::integer, $6::text, $7::text, $8::text, nullif($9::text, ''), $10::bytea
		WHERE $11::boolean OR NOT EXISTS (SELECT 1 FROM pending_span_batches b, json_array_elements_text(b.keys::json) AS k
			WHERE b.workspace = $1::text AND b.grp = $2::text AND k IN (SELECT json_array_elements_text($6::json)))`
	pgPendingStored = `SELECT k FROM pending_span_batches b, json_array_elements_text(b.keys::json) AS k
		WHERE b.workspace = $1 AND b.grp = $2 AND k IN (SELECT json_array_elements_text($3::json))`
	litePendingInsert = `INSERT INTO pending_span_batches (workspace, grp, seq, external, received_at, spans, keys, starts, sizes, digest, events_z)
		SELECT $1, $2, (SELECT coalesce(max(seq), 0) + 1 FROM pending_span_batches WHERE workspace = $1 AND grp = $2), $3, $4, $5, $6, $7, $8, nullif($9, ''), $10
		WHERE $11 OR NOT EXISTS (SELECT 1 FROM pending_span_batches b, json_each(b.keys) AS k
			WHERE b.workspace = $1 AND b.grp = $2 AND k.value IN (SELECT value FROM json_each($6)))`
	litePendingStored = `SELECT k.value FROM pending_span_batches b, json_each(b.keys) AS k
		WHERE b.workspace = $1 AND b.grp = $2 AND k.value IN (SELECT value FROM json_each($3))`
)

// addPendingBatch writes one row, in a transaction holding the group's
// lock (PostgreSQL; SQLite has one writer), with the spans the group does
// not hold yet, and returns how many that was.
func (o ops) addPendingBatch(ctx context.Context, b *pendingBatch) (int, error) {
	pg := o.d.Name() == "postgres"
	insert, stored := litePendingInsert, litePendingStored
	if pg {
		insert, stored = pgPendingInsert, pgPendingStored
		if _, err := o.w.ExecContext(ctx, pgPendingLock, b.ref.Workspace, b.ref.Group); err != nil {
			return 0, o.mapErr(err)
		}
	}
	spans := b.spans
	enc := encodeBatch(spans)
	defer func() { enc.release() }()
	for all := false; ; all = true {
		// The events are kept compressed (events_z, migration 0020).
		events := compressEvents(enc.events)
		res, err := o.w.ExecContext(ctx, insert, b.ref.Workspace, b.ref.Group, b.external, o.d.TimeArg(b.at),
			len(spans), string(enc.keys), string(enc.starts), string(enc.sizes), enc.digest, events, all)
		if err != nil {
			return 0, o.mapErr(err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		if n == 1 {
			return len(spans), nil
		}
		if all {
			return 0, fmt.Errorf("inserting the spans of group %q: no row added", b.ref.Group)
		}
		// Some are stored already: keep the others.
		have, err := queryWriter(ctx, o, func(r rowScanner) (string, error) {
			var k string
			err := r.Scan(&k)
			return k, err
		}, stored, b.ref.Workspace, b.ref.Group, string(enc.keys))
		if err != nil {
			return 0, err
		}
		spans = slices.DeleteFunc(slices.Clone(spans), func(s store.PendingSpan) bool { return slices.Contains(have, s.Key) })
		if len(spans) == 0 {
			return 0, nil
		}
		enc = encodeBatch(spans)
	}
}

// checkStoredEvents checks that the events not marked Canonical are
// JSON: the events are stored compressed (migration 0020), so the
// database does not check them.
func (o ops) checkStoredEvents(spans []store.PendingSpan) error {
	var unchecked []store.PendingSpan
	for i, s := range spans {
		if !s.Canonical {
			if unchecked == nil {
				unchecked = make([]store.PendingSpan, 0, len(spans)-i)
			}
			unchecked = append(unchecked, s)
		}
	}
	return checkEvents(unchecked)
}

// checkEvents is checkJSON of every span's event, on every processor when
// there are many; it names the event the database refused.
func checkEvents(spans []store.PendingSpan) error {
	n := min(runtime.GOMAXPROCS(0), len(spans)/256)
	if n <= 1 {
		for _, s := range spans {
			if err := checkJSON("event", s.Event); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for c := range n {
		wg.Go(func() {
			for _, s := range spans[c*len(spans)/n : (c+1)*len(spans)/n] {
				if err := checkJSON("event", s.Event); err != nil {
					errs[c] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// pendingRow is one stored row, as read. sizes is nil for a row written
// before migration 0019, whose events are one a line.
type pendingRow struct {
	ref                         store.PendingGroupRef
	external                    bool
	at                          time.Time
	keys, starts, sizes, events []byte
}

const pendingRowColumns = `workspace, grp, external, received_at, keys, starts, sizes, events, events_z`

func scanPendingRow(r rowScanner) (pendingRow, error) {
	var p pendingRow
	var at dbTime
	var eventsZ []byte
	if err := r.Scan(&p.ref.Workspace, &p.ref.Group, &p.external, &at, &p.keys, &p.starts, &p.sizes, &p.events, &eventsZ); err != nil {
		return p, err
	}
	p.at = at.Time
	var err error
	if p.events, err = eventsOf(p.events, eventsZ); err != nil {
		return p, fmt.Errorf("a pending row of %q: %w", p.ref.Group, err)
	}
	return p, nil
}

// spans splits a row into its spans, appended to out.
func (p pendingRow) spans(out []store.PendingSpan) ([]store.PendingSpan, error) {
	keys, err := decodeKeys(p.keys)
	if err != nil {
		return nil, fmt.Errorf("keys of a pending row of %q: %w", p.ref.Group, err)
	}
	var starts []int64
	if err := json.Unmarshal(p.starts, &starts); err != nil {
		return nil, fmt.Errorf("start times of a pending row of %q: %w", p.ref.Group, err)
	}
	ev := bytes.TrimSpace(p.events)
	if len(ev) < 2 || ev[0] != '[' || ev[len(ev)-1] != ']' || len(starts) != len(keys) {
		return nil, fmt.Errorf("a pending row of %q is malformed", p.ref.Group)
	}
	ev = ev[1 : len(ev)-1]
	var sizes []int
	if p.sizes != nil {
		if err := json.Unmarshal(p.sizes, &sizes); err != nil || len(sizes) != len(keys) {
			return nil, fmt.Errorf("a pending row of %q has malformed event sizes", p.ref.Group)
		}
	}
	for i, k := range keys {
		var line []byte
		if sizes != nil {
			// The row's events joined by ',', each of its size.
			n := sizes[i]
			if n < 0 || n > len(ev) || (i < len(keys)-1 && (n == len(ev) || ev[n] != ',')) || (i == len(keys)-1 && n != len(ev)) {
				return nil, fmt.Errorf("a pending row of %q does not hold the events its sizes say", p.ref.Group)
			}
			line, ev = ev[:n], ev[min(n+1, len(ev)):]
		} else {
			line = ev
			if j := bytes.IndexByte(ev, '\n'); j >= 0 {
				line, ev = ev[:j], ev[j+1:]
			} else {
				ev = nil
			}
			if i < len(keys)-1 {
				line = bytes.TrimSuffix(bytes.TrimRight(line, " \t\r"), []byte(","))
			} else if len(ev) > 0 {
				return nil, fmt.Errorf("a pending row of %q holds more events than keys", p.ref.Group)
			}
			line = bytes.TrimSpace(line)
		}
		out = append(out, store.PendingSpan{Workspace: p.ref.Workspace, Group: p.ref.Group, External: p.external,
			Key: k, StartUnixNano: starts[i], ReceivedAt: p.at, Event: json.RawMessage(line[:len(line):len(line)])})
	}
	return out, nil
}

// decodeKeys reads a JSON array of strings, written by encodeBatch or by
// the migration; keys without escapes take no decoder.
func decodeKeys(b []byte) ([]string, error) {
	if len(b) >= 2 && b[0] == '[' && b[len(b)-1] == ']' && bytes.IndexByte(b, '\\') < 0 && bytes.IndexByte(b, ' ') < 0 {
		body := b[1 : len(b)-1]
		if len(body) == 0 {
			return []string{}, nil
		}
		keys := make([]string, 0, bytes.Count(body, []byte(`","`))+1)
		all := string(body)
		for len(all) > 0 {
			if all[0] != '"' {
				break
			}
			j := strings.IndexByte(all[1:], '"')
			if j < 0 {
				break
			}
			keys = append(keys, all[1:1+j])
			all = all[2+j:]
			if len(all) > 0 {
				if all[0] != ',' {
					break
				}
				all = all[1:]
			}
		}
		if len(all) == 0 {
			return keys, nil
		}
	}
	var keys []string
	err := json.Unmarshal(b, &keys)
	return keys, err
}

// groupSpans is the spans of one group's rows, in receipt order: each key
// once (its first), ordered by start time then key.
func groupSpans(rows []pendingRow) ([]store.PendingSpan, error) {
	var out []store.PendingSpan
	for _, r := range rows {
		var err error
		if out, err = r.spans(out); err != nil {
			return nil, err
		}
	}
	if len(rows) > 1 {
		out = firstOfEachKey(out)
		slices.SortStableFunc(out, comparePending)
	}
	return out, nil
}

// ListPendingSpans returns a group's spans in start order; see store.TraceIngest.
func (o ops) ListPendingSpans(ctx context.Context, workspace, group string) (_ []store.PendingSpan, err error) {
	defer derrors.Wrap(&err, "%s.ListPendingSpans(ctx, %q, %q)", o.kind, workspace, group)
	if err := checkText(workspace, group); err != nil {
		return nil, err
	}
	rows, err := queryWriter(ctx, o, scanPendingRow, `SELECT `+pendingRowColumns+` FROM pending_span_batches
		WHERE workspace = $1 AND grp = $2 ORDER BY seq`, workspace, group)
	if err != nil {
		return nil, err
	}
	return groupSpans(rows)
}

// ListPendingSpansOf reads several groups' spans at once; see store.TraceIngest.
func (o ops) ListPendingSpansOf(ctx context.Context, groups []store.PendingGroupRef) (_ map[store.PendingGroupRef][]store.PendingSpan, err error) {
	defer derrors.Wrap(&err, "%s.ListPendingSpansOf(ctx, %d groups)", o.kind, len(groups))
	out := map[store.PendingGroupRef][]store.PendingSpan{}
	for _, g := range groups {
		if err := checkText(g.Workspace, g.Group); err != nil {
			return nil, err
		}
	}
	groups = slices.Clone(groups)
	slices.SortFunc(groups, func(x, y store.PendingGroupRef) int {
		return cmp.Or(strings.Compare(x.Workspace, y.Workspace), strings.Compare(x.Group, y.Group))
	})
	groups = slices.Compact(groups)
	for i := 0; i < len(groups); i += groupsPerRead {
		part := groups[i:min(i+groupsPerRead, len(groups))]
		// One statement text whatever the number of groups, so that it
		// is prepared once per connection.
		var rows []pendingRow
		var err error
		if o.d.Name() == "postgres" {
			ws, grp := make([]string, len(part)), make([]string, len(part))
			for j, g := range part {
				ws[j], grp[j] = g.Workspace, g.Group
			}
			rows, err = queryWriter(ctx, o, scanPendingRow, `SELECT `+pendingRowColumns+` FROM pending_span_batches
				WHERE (workspace, grp) IN (SELECT * FROM unnest($1::text[], $2::text[])) ORDER BY workspace, grp, seq`, ws, grp)
		} else {
			pairs := make([][2]string, len(part))
			for j, g := range part {
				pairs[j] = [2]string{g.Workspace, g.Group}
			}
			doc, _ := json.Marshal(pairs) // strings: cannot fail
			rows, err = queryWriter(ctx, o, scanPendingRow, `SELECT `+pendingRowColumns+` FROM pending_span_batches
				WHERE (workspace, grp) IN (SELECT value ->> 0, value ->> 1 FROM json_each($1)) ORDER BY workspace, grp, seq`, string(doc))
		}
		if err != nil {
			return nil, err
		}
		for lo := 0; lo < len(rows); {
			hi := lo + 1
			for hi < len(rows) && rows[hi].ref == rows[lo].ref {
				hi++
			}
			spans, err := groupSpans(rows[lo:hi])
			if err != nil {
				return nil, err
			}
			if len(spans) > 0 {
				out[rows[lo].ref] = spans
			}
			lo = hi
		}
	}
	return out, nil
}

// SealPendingGroup seals a group of one sealable row inside the
// database; see store.TraceIngest. The events go from the pending row to
// the trajectory without leaving the database (PostgreSQL copies the
// compressed value as it is, without parsing it again), and the digest is the
// one the writer computed over the same bytes.
func (o ops) SealPendingGroup(ctx context.Context, t store.Trajectory, maxEvents int) (_ store.Trajectory, sealed bool, err error) {
	defer derrors.Wrap(&err, "%s.SealPendingGroup(ctx, %q, %q)", o.kind, t.Workspace, t.RunID)
	if err := required("workspace", t.Workspace, "run id", t.RunID, "source", t.Source); err != nil {
		return store.Trajectory{}, false, err
	}
	if err := checkText(t.Workspace, t.RunID, t.Source, t.Audience); err != nil {
		return store.Trajectory{}, false, err
	}
	t.SealedAt = normTime(t.SealedAt)
	t.Events = nil
	err = o.inPendingTx(ctx, func(o ops) error {
		rows, err := queryWriter(ctx, o, func(r rowScanner) (store.Trajectory, error) {
			out := t
			err := r.Scan(&out.EventCount, &out.Digest)
			return out, err
		}, `INSERT INTO trajectories (`+trajectoryColumns+`, events, events_z)
			SELECT p.workspace, p.grp, $3, p.spans, p.digest, $4, $5, p.events, p.events_z FROM pending_span_batches p
			WHERE p.workspace = $1 AND p.grp = $2 AND p.external AND p.digest IS NOT NULL AND p.spans <= $6
				AND NOT EXISTS (SELECT 1 FROM pending_span_batches q WHERE q.workspace = $1 AND q.grp = $2 AND q.seq <> p.seq)
			ON CONFLICT (workspace, run_id) DO NOTHING
			RETURNING event_count, digest`,
			t.Workspace, t.RunID, t.Source, o.d.TimeArg(t.SealedAt), t.Audience, maxEvents)
		if err != nil || len(rows) == 0 {
			return err
		}
		t, sealed = rows[0], true
		_, err = o.w.ExecContext(ctx, `DELETE FROM pending_span_batches WHERE workspace = $1 AND grp = $2`, t.Workspace, t.RunID)
		return o.mapErr(err)
	})
	if err != nil {
		return store.Trajectory{}, false, err
	}
	return t, sealed, nil
}

// DeletePendingSpans drops a group's spans; see store.TraceIngest.
func (o ops) DeletePendingSpans(ctx context.Context, workspace, group string) (err error) {
	defer derrors.Wrap(&err, "%s.DeletePendingSpans(ctx, %q, %q)", o.kind, workspace, group)
	if err := checkText(workspace, group); err != nil {
		return err
	}
	_, err = o.w.ExecContext(ctx, `DELETE FROM pending_span_batches WHERE workspace = $1 AND grp = $2`, workspace, group)
	return o.mapErr(err)
}

// GetPendingGroup returns one group of pending spans; see store.TraceIngest.
func (o ops) GetPendingGroup(ctx context.Context, workspace, group string) (_ store.PendingGroup, err error) {
	defer derrors.Wrap(&err, "%s.GetPendingGroup(ctx, %q, %q)", o.kind, workspace, group)
	if err := checkText(workspace, group); err != nil {
		return store.PendingGroup{}, err
	}
	g := store.PendingGroup{Workspace: workspace, Group: group}
	var external int
	var last dbTime
	err = o.r.QueryRowContext(ctx, `SELECT MAX(CASE WHEN external THEN 1 ELSE 0 END), SUM(spans), MAX(received_at) FROM pending_span_batches
		WHERE workspace = $1 AND grp = $2 GROUP BY workspace, grp`, workspace, group).Scan(&external, &g.Spans, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return store.PendingGroup{}, derrors.NotFoundf("no pending spans of %q in workspace %q", group, workspace)
	}
	if err != nil {
		return store.PendingGroup{}, o.mapErr(err)
	}
	g.External, g.LastReceived = external == 1, last.Time
	return g, nil
}

// ListPendingGroups returns idle groups, oldest first; see store.TraceIngest.
func (o ops) ListPendingGroups(ctx context.Context, idleSince time.Time, limit int) (_ []store.PendingGroup, err error) {
	defer derrors.Wrap(&err, "%s.ListPendingGroups(ctx, %v, %d)", o.kind, idleSince, limit)
	if limit < 0 {
		return nil, derrors.Invalidf("limit %d is negative", limit)
	}
	if limit == 0 {
		limit = defaultPendingGroupLimit
	}
	var args sqlArgs
	q := `SELECT workspace, grp, MAX(CASE WHEN external THEN 1 ELSE 0 END), SUM(spans), MAX(received_at) FROM pending_span_batches
		GROUP BY workspace, grp`
	if !idleSince.IsZero() {
		q += ` HAVING MAX(received_at) < ` + args.add(o.d.TimeArg(normTime(idleSince)))
	}
	q += ` ORDER BY MAX(received_at), workspace, grp LIMIT ` + args.add(limit)
	return queryWriter(ctx, o, func(r rowScanner) (store.PendingGroup, error) {
		var g store.PendingGroup
		var external int
		var last dbTime
		if err := r.Scan(&g.Workspace, &g.Group, &external, &g.Spans, &last); err != nil {
			return g, err
		}
		g.External, g.LastReceived = external == 1, last.Time
		return g, nil
	}, q, args...)
}

// hourWindow checks that window is the start of an hour.
func hourWindow(window time.Time) (time.Time, error) {
	w := window.UTC()
	if w.IsZero() || !w.Equal(w.Truncate(time.Hour)) {
		return time.Time{}, derrors.Invalidf("usage window %v is not the start of an hour", window)
	}
	return w, nil
}

// AddTraceUsage adds to an hour's count; see store.TraceIngest.
func (o ops) AddTraceUsage(ctx context.Context, workspace string, window time.Time, n int64) (_ int64, err error) {
	defer derrors.Wrap(&err, "%s.AddTraceUsage(ctx, %q, %v, %d)", o.kind, workspace, window, n)
	if err := required("workspace", workspace); err != nil {
		return 0, err
	}
	if err := checkText(workspace); err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, derrors.Invalidf("usage %d is negative", n)
	}
	w, err := hourWindow(window)
	if err != nil {
		return 0, err
	}
	var total int64
	err = o.w.QueryRowContext(ctx, `INSERT INTO trace_usage (workspace, window_start, events) VALUES ($1, $2, $3)
		ON CONFLICT (workspace, window_start) DO UPDATE SET events = trace_usage.events + excluded.events
		RETURNING events`, workspace, o.d.TimeArg(w), n).Scan(&total)
	if err != nil {
		return 0, o.mapErr(err)
	}
	return total, nil
}

// GetTraceUsage reads an hour's count; see store.TraceIngest.
func (o ops) GetTraceUsage(ctx context.Context, workspace string, window time.Time) (_ int64, err error) {
	defer derrors.Wrap(&err, "%s.GetTraceUsage(ctx, %q, %v)", o.kind, workspace, window)
	if err := checkText(workspace); err != nil {
		return 0, err
	}
	w, err := hourWindow(window)
	if err != nil {
		return 0, err
	}
	var total int64
	err = o.w.QueryRowContext(ctx, `SELECT events FROM trace_usage WHERE workspace = $1 AND window_start = $2`,
		workspace, o.d.TimeArg(w)).Scan(&total)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, o.mapErr(err)
	}
	return total, nil
}

// GetTraceSettings reads a workspace's settings; see store.TraceIngest.
func (o ops) GetTraceSettings(ctx context.Context, workspace string) (_ store.TraceSettings, err error) {
	defer derrors.Wrap(&err, "%s.GetTraceSettings(ctx, %q)", o.kind, workspace)
	if err := checkText(workspace); err != nil {
		return store.TraceSettings{}, err
	}
	var doc []byte
	err = o.r.QueryRowContext(ctx, `SELECT doc FROM trace_settings WHERE workspace = $1`, workspace).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return store.TraceSettings{}, derrors.NotFoundf("trace settings of workspace %q", workspace)
	}
	if err != nil {
		return store.TraceSettings{}, o.mapErr(err)
	}
	var s store.TraceSettings
	if err := json.Unmarshal(doc, &s); err != nil {
		return store.TraceSettings{}, err
	}
	s.Workspace = workspace
	return s, nil
}

// PutTraceSettings writes a workspace's settings; see store.TraceIngest.
func (o ops) PutTraceSettings(ctx context.Context, s store.TraceSettings) (_ store.TraceSettings, err error) {
	defer derrors.Wrap(&err, "%s.PutTraceSettings(ctx, %q)", o.kind, s.Workspace)
	if err := required("workspace", s.Workspace); err != nil {
		return store.TraceSettings{}, err
	}
	if err := checkText(s.Workspace, s.UpdatedBy); err != nil {
		return store.TraceSettings{}, err
	}
	if len(s.Thresholds) > 0 {
		if err := checkJSON("thresholds", s.Thresholds); err != nil {
			return store.TraceSettings{}, err
		}
	}
	s.UpdatedAt = normTime(s.UpdatedAt)
	doc, err := json.Marshal(s)
	if err != nil {
		return store.TraceSettings{}, derrors.Invalidf("trace settings: %v", err)
	}
	_, err = o.w.ExecContext(ctx, `INSERT INTO trace_settings (workspace, updated_at, doc) VALUES ($1, $2, $3)
		ON CONFLICT (workspace) DO UPDATE SET updated_at = excluded.updated_at, doc = excluded.doc`,
		s.Workspace, o.d.TimeArg(s.UpdatedAt), string(doc))
	if err != nil {
		return store.TraceSettings{}, o.mapErr(err)
	}
	// Read back as a reader would (jsonb normalises the thresholds).
	var out store.TraceSettings
	if err := json.Unmarshal(doc, &out); err != nil {
		return store.TraceSettings{}, err
	}
	out.Workspace = s.Workspace
	return out, nil
}

// GetSpanAttrMapping reads a harness's overlay; see store.TraceIngest.
func (o ops) GetSpanAttrMapping(ctx context.Context, workspace, harnessID string) (_ store.SpanAttrMapping, err error) {
	defer derrors.Wrap(&err, "%s.GetSpanAttrMapping(ctx, %q, %q)", o.kind, workspace, harnessID)
	if err := checkText(workspace, harnessID); err != nil {
		return store.SpanAttrMapping{}, err
	}
	var doc []byte
	err = o.r.QueryRowContext(ctx, `SELECT doc FROM span_attr_mappings WHERE workspace = $1 AND harness_id = $2`, workspace, harnessID).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return store.SpanAttrMapping{}, derrors.NotFoundf("span attribute mapping of harness %q", harnessID)
	}
	if err != nil {
		return store.SpanAttrMapping{}, o.mapErr(err)
	}
	var m store.SpanAttrMapping
	if err := json.Unmarshal(doc, &m); err != nil {
		return store.SpanAttrMapping{}, err
	}
	m.Workspace = workspace
	return m, nil
}

// PutSpanAttrMapping writes a harness's overlay; see store.TraceIngest.
func (o ops) PutSpanAttrMapping(ctx context.Context, m store.SpanAttrMapping) (_ store.SpanAttrMapping, err error) {
	defer derrors.Wrap(&err, "%s.PutSpanAttrMapping(ctx, %q, %q)", o.kind, m.Workspace, m.HarnessID)
	if err := required("workspace", m.Workspace, "harness id", m.HarnessID); err != nil {
		return store.SpanAttrMapping{}, err
	}
	if err := checkText(m.Workspace, m.HarnessID, m.UpdatedBy); err != nil {
		return store.SpanAttrMapping{}, err
	}
	if err := checkJSON("mapping", m.Mapping); err != nil {
		return store.SpanAttrMapping{}, err
	}
	m.UpdatedAt = normTime(m.UpdatedAt)
	doc, err := json.Marshal(m)
	if err != nil {
		return store.SpanAttrMapping{}, derrors.Invalidf("span attribute mapping: %v", err)
	}
	_, err = o.w.ExecContext(ctx, `INSERT INTO span_attr_mappings (workspace, harness_id, updated_at, doc) VALUES ($1, $2, $3, $4)
		ON CONFLICT (workspace, harness_id) DO UPDATE SET updated_at = excluded.updated_at, doc = excluded.doc`,
		m.Workspace, m.HarnessID, o.d.TimeArg(m.UpdatedAt), string(doc))
	if err != nil {
		return store.SpanAttrMapping{}, o.mapErr(err)
	}
	var out store.SpanAttrMapping
	if err := json.Unmarshal(doc, &out); err != nil {
		return store.SpanAttrMapping{}, err
	}
	out.Workspace = m.Workspace
	return out, nil
}

// DeleteTrajectoriesBefore deletes a batch of expired trajectories; see store.TraceIngest.
func (o ops) DeleteTrajectoriesBefore(ctx context.Context, workspace string, cutoff time.Time, limit int) (_ int, err error) {
	defer derrors.Wrap(&err, "%s.DeleteTrajectoriesBefore(ctx, %q, %v, %d)", o.kind, workspace, cutoff, limit)
	if err := required("workspace", workspace); err != nil {
		return 0, err
	}
	if err := checkText(workspace); err != nil {
		return 0, err
	}
	if limit < 0 {
		return 0, derrors.Invalidf("limit %d is negative", limit)
	}
	if limit == 0 {
		limit = defaultTrajectoryDeleteLimit
	}
	res, err := o.w.ExecContext(ctx, `DELETE FROM trajectories WHERE workspace = $1 AND run_id IN (
		SELECT run_id FROM trajectories WHERE workspace = $1 AND sealed_at < $2 ORDER BY sealed_at, run_id LIMIT $3)`,
		workspace, o.d.TimeArg(normTime(cutoff)), limit)
	if err != nil {
		return 0, o.mapErr(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	return int(n), nil
}
