// Package events is the use case behind GET /events: the workspace's
// platform event log (spec §6) read newest first, a page at a time.
package events

import (
	"context"
	"encoding/base64"
	"regexp"
	"strconv"
	"strings"
	"time"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/store"
)

// Store is what the service reads of the store.
type Store interface {
	ListEvents(ctx context.Context, f store.EventFilter) ([]store.Event, error)
}

// Page bounds.
const (
	DefaultPage = 50
	MaxPage     = 200
)

// Event is one entry of the log as GET /events answers it.
type Event = store.Event

// Query is GET /events' query: a type (exact, or a glob where '*' matches
// any run of characters), an instant the events are at or after, a cursor
// from the previous page and a page size.
type Query struct {
	Type   string
	Since  string
	Cursor string
	Limit  int
}

// typePattern is an event type or a glob over them.
var typePattern = regexp.MustCompile(`^[A-Za-z0-9*][A-Za-z0-9._*-]{0,127}$`)

// Service reads the event log.
type Service struct{ st Store }

// New returns the service over st.
func New(st Store) *Service { return &Service{st: st} }

// List answers a page of the caller's workspace's events, newest first, and
// the cursor of the next page ("" on the last). The route's action
// (events:read) has been checked; the workspace is the principal's, so
// another workspace's events are never read.
func (s *Service) List(ctx context.Context, p auth.Principal, q Query) ([]Event, string, error) {
	if p.Workspace == "" {
		return nil, "", derrors.ErrUnauthenticated
	}
	f := store.EventFilter{Workspace: p.Workspace, Newest: true, Limit: q.Limit}
	if f.Limit == 0 {
		f.Limit = DefaultPage
	}
	if f.Limit < 1 || f.Limit > MaxPage {
		return nil, "", derrors.Invalidf("limit=%d: want 1 to %d", q.Limit, MaxPage)
	}
	if t := q.Type; t != "" {
		if !typePattern.MatchString(t) {
			return nil, "", derrors.Invalidf("type=%q: an event type (dataset.registered) or a glob with * (*.registered, trace.*) of letters, digits and . _ - *", clip(t))
		}
		if strings.Contains(t, "*") {
			f.TypeGlob = t
		} else {
			f.Type = t
		}
	}
	if q.Since != "" {
		since, err := time.Parse(time.RFC3339Nano, q.Since)
		if err != nil {
			return nil, "", derrors.Invalidf("since=%q: want an RFC 3339 instant (2026-05-01T10:00:00Z)", clip(q.Since))
		}
		f.Since = since
	}
	if q.Cursor != "" {
		seq, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, "", err
		}
		f.BeforeSeq = seq
	}
	// One more than the page says whether another page follows.
	want := f.Limit
	f.Limit++
	es, err := s.st.ListEvents(ctx, f)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(es) > want {
		es = es[:want]
		next = encodeCursor(es[len(es)-1].Seq)
	}
	return es, next, nil
}

// cursorPrefix versions the cursor's text, so its form may change.
const cursorPrefix = "e1."

// encodeCursor is the opaque cursor of the page after the event seq.
func encodeCursor(seq int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatInt(seq, 10)))
}

// decodeCursor reads a cursor encodeCursor wrote.
func decodeCursor(c string) (int64, error) {
	bad := derrors.Invalidf("cursor=%q is not a cursor of GET /events: pass the X-Svc-Next-Cursor of the previous page", clip(c))
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, bad
	}
	v, ok := strings.CutPrefix(string(b), cursorPrefix)
	if !ok {
		return 0, bad
	}
	seq, err := strconv.ParseInt(v, 10, 64)
	if err != nil || seq <= 0 {
		return 0, bad
	}
	return seq, nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
