package runs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/platform/derrors"
	"svc/internal/service/identity"
	"svc/store"
	"svc/store/records"
)

// notFound is the one answer for an absent run and for a run the caller
// may not see (another workspace's, another member's personal run): the
// two must not be told apart (spec §2.2: a refusal is 404).
func notFound(id string) error {
	return derrors.NotFoundf("no run %q in this workspace; GET /runs lists them", id)
}

// Get returns one run the caller may read.
func (s *Service) Get(ctx context.Context, p auth.Principal, id string) (eval.Run, error) {
	row, err := s.getRow(ctx, p, id)
	if err != nil {
		return eval.Run{}, err
	}
	return records.FromRow(row)
}

func (s *Service) getRow(ctx context.Context, p auth.Principal, id string) (store.Run, error) {
	row, err := s.o.Store.GetRun(ctx, p.Workspace, id)
	if errors.Is(err, derrors.ErrNotFound) {
		return store.Run{}, notFound(id)
	}
	if err != nil {
		return store.Run{}, err
	}
	if ok, err := s.visible(ctx, p, row.Audience); err != nil {
		return store.Run{}, err
	} else if !ok {
		return store.Run{}, notFound(id)
	}
	return row, nil
}

// teams are the private teams' audiences p reads (identity.TeamAudiences).
func (s *Service) teams(ctx context.Context, p auth.Principal) ([]string, error) {
	return identity.TeamAudiences(ctx, s.o.Store, p.Workspace, p.Subject, auth.ReachesEveryTeam(p))
}

// visible reports whether p may read a record of audience: workspace-wide,
// p's own personal one (no admin bypass), or a private team's p reads
// (admins and machine credentials read every team's). Teams are read only
// for a team's record.
func (s *Service) visible(ctx context.Context, p auth.Principal, audience string) (bool, error) {
	if !eval.IsTeamAudience(audience) {
		return eval.Visible(audience, p.Subject), nil
	}
	teams, err := s.teams(ctx, p)
	if err != nil {
		return false, err
	}
	return eval.VisibleTo(audience, p.Subject, teams), nil
}

// ListQuery is the query of GET /runs.
type ListQuery struct {
	ScorecardID string
	All         bool // scope=all: children too
	Cursor      string
	Limit       int
}

// Page limits of the cursor-paginated lists.
const (
	DefaultPage = 50
	MaxPage     = 500
)

// List returns the caller's visible runs, newest first, and the cursor of
// the next page ("" at the end).
func (s *Service) List(ctx context.Context, p auth.Principal, q ListQuery) ([]eval.Run, string, error) {
	limit, err := pageLimit(q.Limit)
	if err != nil {
		return nil, "", err
	}
	t, id, err := decodeCursor(q.Cursor)
	if err != nil {
		return nil, "", err
	}
	teams, err := s.teams(ctx, p)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.o.Store.ListRuns(ctx, store.RunFilter{
		Workspace: p.Workspace, Viewer: p.Subject, Teams: teams, ScorecardID: q.ScorecardID,
		IncludeChildren: q.All, BeforeTime: t, BeforeID: id, Limit: limit + 1,
	})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(rows) > limit {
		rows = rows[:limit]
		last := rows[len(rows)-1]
		next = encodeCursor(last.CreatedAt, last.ID)
	}
	out := make([]eval.Run, 0, len(rows))
	for _, r := range rows {
		run, err := records.FromRow(r)
		if err != nil {
			return nil, "", err
		}
		if q.ScorecardID == "" {
			// A batch's children say whether they are canonical only in
			// the batch's own listing (spec §4.2).
			run.Canonical = nil
		}
		out = append(out, run)
	}
	return out, next, nil
}

func pageLimit(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultPage, nil
	case n < 0 || n > MaxPage:
		return 0, derrors.Invalidf("limit must be between 1 and %d, not %d", MaxPage, n)
	}
	return n, nil
}

// A cursor is opaque to clients: base64url of "<unix nanos>|<id>" of the
// last row of the previous page.
func encodeCursor(t time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(t.UnixNano(), 10) + "|" + id))
}

func decodeCursor(c string) (time.Time, string, error) {
	if c == "" {
		return time.Time{}, "", nil
	}
	bad := derrors.Invalidf("cursor %q is not one this service issued; pass the X-Svc-Next-Cursor of the previous page, or omit it for the first page", c)
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", bad
	}
	ns, id, ok := strings.Cut(string(b), "|")
	if !ok || id == "" {
		return time.Time{}, "", bad
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return time.Time{}, "", bad
	}
	return time.Unix(0, n).UTC(), id, nil
}

// Logs is the answer of GET /runs/:id/logs.
type Logs struct {
	RunID  string `json:"runId"`
	Status string `json:"status"`
	// Live is true while the run has not ended: more chunks may follow,
	// so poll again with after=LastSeq.
	Live    bool           `json:"live"`
	Chunks  []store.RunLog `json:"chunks"`
	LastSeq int64          `json:"lastSeq"`
}

// Logs returns a run's log chunks after seq `after`.
func (s *Service) Logs(ctx context.Context, p auth.Principal, id string, after int64, limit int) (Logs, error) {
	row, err := s.getRow(ctx, p, id)
	if err != nil {
		return Logs{}, err
	}
	if limit == 0 {
		limit = 1000
	}
	if limit < 0 || limit > 5000 {
		return Logs{}, derrors.Invalidf("limit must be between 1 and 5000, not %d", limit)
	}
	if after < 0 {
		return Logs{}, derrors.Invalidf("after must be a log sequence number (0 or more), not %d", after)
	}
	chunks, err := s.o.Store.ListRunLogs(ctx, p.Workspace, id, after, limit)
	if err != nil {
		return Logs{}, err
	}
	out := Logs{RunID: id, Status: row.Status, Live: !eval.Status(row.Status).Terminal(), Chunks: chunks, LastSeq: after}
	if out.Chunks == nil {
		out.Chunks = []store.RunLog{}
	}
	if n := len(chunks); n > 0 {
		out.LastSeq = chunks[n-1].Seq
	}
	return out, nil
}

// TrajectoryMeta is the meta of a trajectory (spec §2.10).
type TrajectoryMeta struct {
	RunID      string     `json:"runId"`
	Source     string     `json:"source"`
	EventCount int        `json:"eventCount"`
	SealedAt   *time.Time `json:"sealedAt,omitempty"`
	Digest     string     `json:"digest,omitempty"`
	Sealed     bool       `json:"sealed"`
}

// TrajectoryView is GET /runs/:id/trajectory and GET /trajectories/:id:
// the events and which copy served them.
type TrajectoryView struct {
	Meta   TrajectoryMeta    `json:"meta"`
	Events []eval.TraceEvent `json:"events"`
}

// SourceResult is meta.source when no sealed copy exists yet and the
// events come from the run's stored result.
const SourceResult = "result"

// Trajectory returns a run's trajectory: the sealed copy in the owned
// ledger when there is one, else the trace of the run's result (meta.source
// "result", sealed false); 404 when the run has neither yet.
func (s *Service) Trajectory(ctx context.Context, p auth.Principal, runID string) (TrajectoryView, error) {
	row, err := s.getRow(ctx, p, runID)
	if err != nil {
		return TrajectoryView{}, err
	}
	t, err := s.o.Store.GetTrajectory(ctx, p.Workspace, runID)
	switch {
	case err == nil:
		return view(t)
	case !errors.Is(err, derrors.ErrNotFound):
		return TrajectoryView{}, err
	}
	run, err := records.FromRow(row)
	if err != nil {
		return TrajectoryView{}, err
	}
	if run.Result == nil {
		return TrajectoryView{}, derrors.NotFoundf("run %q has no trajectory yet (it is %s); poll GET /runs/%s until it ends", runID, run.Status, runID)
	}
	events := run.Result.Trace
	if events == nil {
		events = []eval.TraceEvent{}
	}
	return TrajectoryView{Meta: TrajectoryMeta{RunID: runID, Source: SourceResult, EventCount: len(events)}, Events: events}, nil
}

// GetTrajectory returns one sealed trajectory by its run id; another
// member's personal one is 404.
func (s *Service) GetTrajectory(ctx context.Context, p auth.Principal, runID string) (TrajectoryView, error) {
	t, err := s.o.Store.GetTrajectory(ctx, p.Workspace, runID)
	if err == nil {
		var ok bool
		if ok, err = s.visible(ctx, p, t.Audience); err == nil && !ok {
			err = derrors.ErrNotFound
		}
	}
	if errors.Is(err, derrors.ErrNotFound) {
		return TrajectoryView{}, derrors.NotFoundf("no trajectory %q in this workspace; GET /trajectories lists them", runID)
	}
	if err != nil {
		return TrajectoryView{}, err
	}
	return view(t)
}

func view(t store.Trajectory) (TrajectoryView, error) {
	var events []eval.TraceEvent
	if err := json.Unmarshal(t.Events, &events); err != nil {
		return TrajectoryView{}, fmt.Errorf("runs: sealed trajectory of %s does not decode: %w", t.RunID, err)
	}
	if events == nil {
		events = []eval.TraceEvent{}
	}
	return TrajectoryView{Meta: meta(t), Events: events}, nil
}

func meta(t store.Trajectory) TrajectoryMeta {
	at := t.SealedAt
	return TrajectoryMeta{RunID: t.RunID, Source: t.Source, EventCount: t.EventCount, SealedAt: &at, Digest: t.Digest, Sealed: true}
}

// ListTrajectories returns sealed trajectory metas the caller may see,
// newest first, and the next cursor.
func (s *Service) ListTrajectories(ctx context.Context, p auth.Principal, cursor string, limit int) ([]TrajectoryMeta, string, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, "", err
	}
	t, id, err := decodeCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	teams, err := s.teams(ctx, p)
	if err != nil {
		return nil, "", err
	}
	ts, err := s.o.Store.ListTrajectories(ctx, store.TrajectoryFilter{Workspace: p.Workspace, Viewer: p.Subject, Teams: teams, BeforeTime: t, BeforeID: id, Limit: limit + 1})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(ts) > limit {
		ts = ts[:limit]
		last := ts[len(ts)-1]
		next = encodeCursor(last.SealedAt, last.RunID)
	}
	out := make([]TrajectoryMeta, 0, len(ts))
	for _, t := range ts {
		out = append(out, meta(t))
	}
	return out, next, nil
}

// Deliveries lists the webhook delivery attempts of a run, oldest first.
func (s *Service) Deliveries(ctx context.Context, p auth.Principal, id string) ([]store.WebhookDelivery, error) {
	if _, err := s.getRow(ctx, p, id); err != nil {
		return nil, err
	}
	return s.o.Store.ListWebhookDeliveries(ctx, p.Workspace, id)
}
