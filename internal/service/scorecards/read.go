package scorecards

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/scoring"
	"svc/internal/platform/derrors"
	"svc/internal/platform/reqid"
	"svc/internal/service/identity"
	"svc/store"
	"svc/store/records"
)

func notFound(id string) error {
	return derrors.NotFoundf("no scorecard %q in this workspace; GET /scorecards lists them", id)
}

func (s *Service) load(ctx context.Context, p auth.Principal, id string) (eval.Scorecard, store.Scorecard, error) {
	sc, row, err := records.LoadScorecard(ctx, s.o.Store, p.Workspace, id)
	if err == nil {
		err = s.checkAudience(ctx, p, sc)
	}
	if errors.Is(err, derrors.ErrNotFound) {
		return eval.Scorecard{}, store.Scorecard{}, notFound(id)
	}
	return sc, row, err
}

// loadFull is load with the batch's selection attached (records.Selection):
// for the reads that check or show the per-case manifest digests.
func (s *Service) loadFull(ctx context.Context, p auth.Principal, id string) (eval.Scorecard, store.Scorecard, error) {
	sc, row, err := records.LoadScorecardFull(ctx, s.o.Store, p.Workspace, id)
	if err == nil {
		err = s.checkAudience(ctx, p, sc)
	}
	if errors.Is(err, derrors.ErrNotFound) {
		return eval.Scorecard{}, store.Scorecard{}, notFound(id)
	}
	return sc, row, err
}

// teams are the private teams' audiences p reads (identity.TeamAudiences).
func (s *Service) teams(ctx context.Context, p auth.Principal) ([]string, error) {
	return identity.TeamAudiences(ctx, s.o.Store, p.Workspace, p.Subject, auth.ReachesEveryTeam(p))
}

// checkAudience is nil when p may read sc: a batch made from a private
// team's asset (AudienceTeam) is the team's, its members', admins' and
// machine credentials'; to anyone else it is absent (404, wrapping
// derrors.ErrNotFound), as its child runs are (issue 30, finding 6).
func (s *Service) checkAudience(ctx context.Context, p auth.Principal, sc eval.Scorecard) error {
	return s.audienceChecker(ctx, p)(sc)
}

// audienceChecker is checkAudience for many batches: p's teams are read
// once, at the first private team's batch.
func (s *Service) audienceChecker(ctx context.Context, p auth.Principal) func(eval.Scorecard) error {
	var teams []string
	loaded := false
	return func(sc eval.Scorecard) error {
		if sc.AudienceTeam == "" {
			return nil
		}
		if !loaded {
			t, err := s.teams(ctx, p)
			if err != nil {
				return err
			}
			teams, loaded = t, true
		}
		if !eval.VisibleTo(eval.TeamAudience(sc.AudienceTeam), p.Subject, teams) {
			return notFound(sc.ID)
		}
		return nil
	}
}

// summaryView is a batch as lists show it: no per-case table, no
// timeline, no selection.
func summaryView(sc eval.Scorecard) eval.Scorecard {
	sc = lightView(sc)
	sc.Steps = nil
	return sc
}

// lightView is the light read's trim of a batch (?view=summary): no
// per-case table, no caseRuns, no selection (neither the case ids nor the
// manifest's per-case digests: records.Selection); the timeline stays.
func lightView(sc eval.Scorecard) eval.Scorecard {
	sc.Scorecard, sc.CaseRuns = nil, nil
	if sc.Orchestration != nil {
		o := *sc.Orchestration
		o.CaseIDs, o.AdhocCase = nil, nil
		sc.Orchestration = &o
	}
	if sc.Manifest != nil && (sc.Manifest.Cases != nil || sc.Manifest.GradingCases != nil) {
		m := *sc.Manifest
		m.Cases, m.GradingCases = nil, nil
		sc.Manifest = &m
	}
	return sc
}

// stepOf is a stored timeline entry as records show it.
func stepOf(s store.ScorecardStep) eval.Step {
	return eval.Step{TS: s.TS, Phase: s.Phase, Status: s.Status, Message: s.Message, CaseID: s.CaseID}
}

// progress fills sc.Progress from the batch's child runs.
func (s *Service) progress(ctx context.Context, sc *eval.Scorecard) error {
	c, err := s.o.Store.ChildRunCounts(ctx, sc.Tenant, sc.ID)
	if err != nil {
		return err
	}
	s.progressOf(sc, c)
	return nil
}

// progressOf fills sc.Progress from c, the counts of the batch's child
// runs. The pace (casesPerSecond, startedAt, updatedAt) of a batch that is
// over is the one its finish recorded, so it does not decay as the batch
// ages; a batch that ended without one (stopped with no workflow left to
// finish it, or finished before the pace was recorded) shows none.
func (s *Service) progressOf(sc *eval.Scorecard, c store.RunCounts) {
	if eval.ScorecardTerminal(sc.Status) {
		sc.Progress = records.Recount(sc.Progress, c)
		return
	}
	sc.Progress = records.CountProgress(sc.Progress.Total, c, s.o.Now())
}

// Get is the detail read: the record with its per-case table rebuilt from
// the child runs, caseRuns, steps, progress and policyResolution. Polls of
// a batch read only what changed since the previous one (see
// detailCache), so what Get returns shares its slices and maps with the
// cache and with other reads: callers must not modify it.
func (s *Service) Get(ctx context.Context, p auth.Principal, id string) (eval.Scorecard, error) {
	sc, _, err := s.detail(ctx, p.Workspace, id, false)
	if err == nil {
		err = s.checkAudience(ctx, p, sc)
	}
	if err != nil {
		return eval.Scorecard{}, err
	}
	return sc, nil
}

// GetJSON is Get encoded as GET /scorecards/:id answers it: the bytes
// json.Encoder writes for Get's result, a newline last, in pieces for the
// handler to write in order (net.Buffers.WriteTo). It encodes only what
// changed since the previous read of the batch (see docTemplate), and
// copies nothing it had encoded before: a batch of 2,000 cases is 1.2 MB
// of JSON, which takes longer to encode than to read. The pieces are
// shared: the caller must not modify them.
func (s *Service) GetJSON(ctx context.Context, p auth.Principal, id string) (net.Buffers, error) {
	sc, doc, err := s.detail(ctx, p.Workspace, id, true)
	if err == nil {
		err = s.checkAudience(ctx, p, sc)
	}
	if err != nil {
		return nil, err
	}
	return doc, nil
}

// Summary is the light read of a batch (GET /scorecards/:id?view=summary)
// for those who poll it: the detail read without the per-case table and
// caseRuns, so its size does not grow with the batch; progress, summary,
// steps (failed cases among them) and policyResolution stay, and
// failedCases names the cases that did not pass (at most MaxFailedCases).
func (s *Service) Summary(ctx context.Context, p auth.Principal, id string) (eval.Scorecard, error) {
	rec, _, err := s.load(ctx, p, id)
	if err != nil {
		return eval.Scorecard{}, err
	}
	if rec.Progress.Total > maxDetailChildren {
		return s.countedSummary(ctx, rec)
	}
	sc, _, err := s.detail(ctx, p.Workspace, id, false)
	if err != nil {
		return eval.Scorecard{}, err
	}
	for _, r := range sc.Scorecard { // sorted by case, then trial
		if r.Verdict != scoring.VerdictFail && r.Verdict != scoring.VerdictError {
			continue
		}
		if n := len(sc.FailedCases); n == eval.MaxFailedCases {
			break
		} else if n == 0 || sc.FailedCases[n-1] != r.CaseID {
			sc.FailedCases = append(sc.FailedCases, r.CaseID)
		}
	}
	return lightView(sc), nil
}

// countedSummary is the light read of a batch too large for the detail
// cache: built from the record, the store's counts of the children and the
// steps, without reading a child run, so that polling a 100,000-case batch
// costs a count, not a table. It has no failedCases, and no summary until
// the batch's finish records one (`svc scorecard show --failed` pages the
// table).
func (s *Service) countedSummary(ctx context.Context, sc eval.Scorecard) (eval.Scorecard, error) {
	c, err := s.o.Store.ChildRunCounts(ctx, sc.Tenant, sc.ID)
	if err != nil {
		return eval.Scorecard{}, err
	}
	s.progressOf(&sc, c)
	steps, err := s.o.Store.ListScorecardSteps(ctx, sc.Tenant, sc.ID, 0, maxSteps)
	if err != nil {
		return eval.Scorecard{}, err
	}
	sc.Steps = make([]eval.Step, 0, len(steps))
	for _, st := range steps {
		sc.Steps = append(sc.Steps, stepOf(st))
	}
	_, res := scoring.ResolvePolicy(sc.VerdictPolicy, sc.Manifest)
	sc.PolicyResolution = &res
	return lightView(sc), nil
}

// CaseRunKey keys caseRuns: "<caseId>#<trial>".
func CaseRunKey(caseID string, trial int) string { return caseID + "#" + strconv.Itoa(trial) }

// ListQuery is the query of GET /scorecards.
type ListQuery struct {
	Kind, Status, DatasetID, HarnessID string
	Cursor                             string
	Limit                              int
}

// List returns summaries, newest first, with the next cursor.
func (s *Service) List(ctx context.Context, p auth.Principal, q ListQuery) ([]eval.Scorecard, string, error) {
	limit := q.Limit
	switch {
	case limit == 0:
		limit = 50
	case limit < 0 || limit > 500:
		return nil, "", derrors.Invalidf("limit must be between 1 and 500, not %d", limit)
	}
	f := store.ScorecardFilter{Workspace: p.Workspace, Kind: q.Kind, DatasetID: q.DatasetID, HarnessID: q.HarnessID, Limit: limit + 1}
	if q.Status != "" {
		f.Statuses = strings.Split(q.Status, ",")
	}
	if q.Cursor != "" {
		t, id, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, "", err
		}
		f.BeforeTime, f.BeforeID = t, id
	}
	rows, err := s.o.Store.ListScorecards(ctx, f)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(rows) > limit {
		rows = rows[:limit]
		last := rows[len(rows)-1]
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(last.CreatedAt.UnixNano(), 10) + "|" + last.ID))
	}
	out := make([]eval.Scorecard, 0, len(rows))
	visible := s.audienceChecker(ctx, p)
	for _, r := range rows {
		sc, _, err := records.LoadScorecard(ctx, s.o.Store, r.Workspace, r.ID)
		if err != nil {
			return nil, "", err
		}
		if err := visible(sc); errors.Is(err, derrors.ErrNotFound) {
			// Another team's private batch: left out (the page may hold
			// fewer than limit; the cursor goes on from the last row read).
			continue
		} else if err != nil {
			return nil, "", err
		}
		if !eval.ScorecardTerminal(sc.Status) {
			if err := s.progress(ctx, &sc); err != nil {
				return nil, "", err
			}
		}
		out = append(out, summaryView(sc))
	}
	return out, next, nil
}

func decodeCursor(c string) (time.Time, string, error) {
	bad := derrors.Invalidf("cursor %q is not one this service issued; pass the X-Svc-Next-Cursor of the previous page", c)
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", bad
	}
	ns, id, ok := strings.Cut(string(b), "|")
	n, perr := strconv.ParseInt(ns, 10, 64)
	if !ok || id == "" || perr != nil {
		return time.Time{}, "", bad
	}
	return time.Unix(0, n).UTC(), id, nil
}

// Cancel stops a queued or running batch (spec §4.6): the record becomes
// cancelled at once, and the workflow is cancelled, so no further case
// fires and running jobs are killed through the driver. A terminal batch
// is 409.
func (s *Service) Cancel(ctx context.Context, p auth.Principal, id string) (eval.Scorecard, error) {
	return s.stop(ctx, p, id, eval.ScorecardCancelled)
}

// Supersede is Cancel for CI: the batch ends superseded.
func (s *Service) Supersede(ctx context.Context, p auth.Principal, id string) (eval.Scorecard, error) {
	return s.stop(ctx, p, id, eval.ScorecardSuperseded)
}

func (s *Service) stop(ctx context.Context, p auth.Principal, id string, to eval.Status) (eval.Scorecard, error) {
	if _, _, err := s.load(ctx, p, id); err != nil {
		return eval.Scorecard{}, err
	}
	sc, err := records.UpdateScorecard(ctx, s.o.Store, p.Workspace, id, func(sc *eval.Scorecard) error {
		if eval.ScorecardTerminal(sc.Status) {
			return derrors.Conflictf("scorecard %s is %s; only a queued or running batch can be stopped", id, sc.Status)
		}
		now := s.o.Now().UTC()
		sc.Status, sc.UpdatedAt, sc.FinishedAt = to, now, &now
		return nil
	})
	if err != nil {
		return eval.Scorecard{}, err
	}
	s.appendSteps(ctx, []store.ScorecardStep{{Workspace: sc.Tenant, ScorecardID: sc.ID, Key: "stop",
		TS: s.o.Now().UTC(), Phase: "cancel", Status: string(to), Message: fmt.Sprintf("%s by %s", to, p.Subject)}})
	// Self-hosted lease jobs are dropped at once (spec §4.6): a queued one
	// is never leased, a leased one's runner learns of it on its next
	// heartbeat, without waiting for the workflow's cancel to reach them.
	if n, err := s.o.Store.CancelRunnerJobs(ctx, sc.Tenant, "", sc.ID, s.o.Now()); err != nil {
		s.o.Logger.LogAttrs(ctx, slog.LevelWarn, "dropping the self-hosted jobs of a stopped batch; the workflow's cancel still reaches them",
			reqid.Attr(ctx), slog.String("workspace", sc.Tenant), slog.String("scorecard", sc.ID), slog.String("error", err.Error()))
	} else if n > 0 {
		s.appendSteps(ctx, []store.ScorecardStep{{Workspace: sc.Tenant, ScorecardID: sc.ID, Key: "stop-runner-jobs",
			TS: s.o.Now().UTC(), Phase: "cancel", Status: string(to), Message: fmt.Sprintf("%d self-hosted runner jobs dropped or told to stop", n)}})
	}
	if s.o.Orchestrator != nil {
		if err := s.o.Orchestrator.Cancel(ctx, id); err != nil {
			return eval.Scorecard{}, fmt.Errorf("cancelling the workflow of %s: %w", id, err)
		}
		if sc.ScoringInFlight != "" {
			// The batch is stopped; a scoring pass still running only
			// wastes work (its finish releases the batch), so this is
			// logged, not returned.
			if err := s.o.Orchestrator.Cancel(ctx, sc.ScoringInFlight); err != nil {
				s.o.Logger.LogAttrs(ctx, slog.LevelWarn, "cancelling the scoring pass of a stopped batch",
					reqid.Attr(ctx), slog.String("workspace", sc.Tenant), slog.String("scorecard", sc.ID),
					slog.String("pass", sc.ScoringInFlight), slog.String("error", err.Error()))
			}
		}
	}
	return summaryView(sc), nil
}
