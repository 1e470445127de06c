package scorecards

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/domain/scoring"
	"svc/internal/domain/trace"
	"svc/internal/integrations/pull"
	"svc/internal/platform/derrors"
	"svc/internal/service/identity"
	"svc/internal/service/traces"
	"svc/store"
	"svc/store/records"
)

// PullSource names where a pull reads: a trace source of the workspace
// by name (svc for the owned ledger), or a platform given inline by kind
// and endpoint. Project and Correlate override a named source's.
type PullSource struct {
	Name       string `json:"name,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Endpoint   string `json:"endpoint,omitempty"`
	AuthSecret string `json:"authSecret,omitempty"`
	Project    string `json:"project,omitempty"`
	Correlate  string `json:"correlate,omitempty"`
}

// PullRun is one trace to pull: the case it answers and the source's id
// of it.
type PullRun struct {
	CaseID string `json:"caseId"`
	RunID  string `json:"runId"`
}

// PullRequest is the body of POST /scorecards/ingest/pull (spec §4.5):
// traces read from an observability platform, or from the owned ledger,
// graded and judged as a scorecard.
type PullRequest struct {
	Dataset *registry.Ref `json:"dataset,omitempty"`
	Harness *registry.Ref `json:"harness,omitempty"`
	Source  PullSource    `json:"source"`
	Runs    []PullRun     `json:"runs"`
	Judges  []JudgeSel    `json:"judges,omitempty"`
}

// DecodePull decodes and validates a body of POST /scorecards/ingest/pull
// strictly (unknown members refused), as the route's binder does.
func DecodePull(body []byte) (PullRequest, error) {
	return decodeStrict[PullRequest](body, "a pull request")
}

// Validate checks what needs no store; errors name the field to fix.
func (r *PullRequest) Validate() error {
	if err := checkIngested(r.Dataset, r.Harness, r.Judges); err != nil {
		return err
	}
	src := r.Source
	switch {
	case src.Name == "" && src.Kind == "":
		return derrors.Invalidf("source is required: {name} of a trace source (GET /workspace/trace-sources; %q reads the owned trace ledger) or {kind, endpoint, authSecret?, project?, correlate?} with kind one of %s", pull.NameSVC, strings.Join(pull.Kinds, ", "))
	case src.Name != "" && (src.Kind != "" || src.Endpoint != "" || src.AuthSecret != ""):
		return derrors.Invalidf("source: give either name (a registered trace source) or kind, endpoint and authSecret, not both")
	case src.Name == pull.NameSVC && (src.Project != "" || src.Correlate != ""):
		return derrors.Invalidf("source: the owned ledger (%q) has no project or correlate; runs[].runId is the id of a sealed trajectory", pull.NameSVC)
	case src.Name != "" && src.Name != pull.NameSVC:
		if err := traces.ValidName(src.Name); err != nil {
			return derrors.Invalidf("source.name: %s", strings.TrimPrefix(err.Error(), "invalid: "))
		}
	}
	switch {
	case len(r.Runs) == 0:
		return derrors.Invalidf("runs is required: send [{caseId, runId}, ...], runId being the source's trace id")
	case len(r.Runs) > MaxIngestTraces:
		return derrors.Invalidf("at most %d runs per pull, not %d; split them into several pulls", MaxIngestTraces, len(r.Runs))
	}
	seen := make(map[string]int, len(r.Runs))
	for i, run := range r.Runs {
		switch {
		case strings.TrimSpace(run.RunID) == "":
			return derrors.Invalidf("runs[%d].runId is required: the source's id of the trace", i)
		case len(run.RunID) > maxCaseIDLen || !utf8.ValidString(run.RunID) || strings.ContainsFunc(run.RunID, isControl):
			return derrors.Invalidf("runs[%d].runId must be printable UTF-8 of at most %d bytes", i, maxCaseIDLen)
		case run.CaseID == "" && r.Dataset != nil:
			return derrors.Invalidf("runs[%d].caseId is required: the id of the dataset case the trace answers", i)
		case len(run.CaseID) > maxCaseIDLen || !utf8.ValidString(run.CaseID) || strings.ContainsFunc(run.CaseID, isControl):
			return derrors.Invalidf("runs[%d].caseId must be printable UTF-8 of at most %d bytes", i, maxCaseIDLen)
		}
		id := run.CaseID
		if id == "" {
			id = run.RunID
		}
		if j, dup := seen[id]; dup {
			return derrors.Invalidf("runs[%d] answers case %q as runs[%d] does; send one trace per case (without a dataset, the caseId defaults to the runId)", i, clip(id, 80), j)
		}
		seen[id] = i
	}
	return nil
}

// SourceReader is what a pull needs of the trace sources: a named one of
// the caller's workspace, and the check of one given inline.
type SourceReader interface {
	Get(ctx context.Context, p auth.Principal, name string) (traces.Source, error)
	Check(ctx context.Context, cfg pull.Config, prefix string) error
}

// IngestPull records a scorecard of pulled traces (POST
// /scorecards/ingest/pull) and starts its workflow, the ScorecardWorkflow
// of any batch. It follows Ingest (cases, harness, judges, admission),
// but nothing is fetched in the request: in the submit's transaction each
// child run is created queued, origin source pull, with its pull.Plan
// beside it; its case activity then fetches the trace (a retried
// activity), seals it in the ledger under the child run's id with source
// the platform's kind (svc for a copy from the ledger) and grades it as
// an ingested trace.
func (s *Service) IngestPull(ctx context.Context, p auth.Principal, req PullRequest, origin string, sources SourceReader) (eval.Scorecard, error) {
	if err := req.Validate(); err != nil {
		return eval.Scorecard{}, err
	}
	base := pull.Plan{Viewer: p.Subject}
	if req.Source.Name == pull.NameSVC {
		teams, err := identity.TeamAudiences(ctx, s.o.Store, p.Workspace, p.Subject, auth.ReachesEveryTeam(p))
		if err != nil {
			return eval.Scorecard{}, err
		}
		base.ViewerTeams = teams
	}
	switch src := req.Source; {
	case src.Name == pull.NameSVC:
		base.Name = pull.NameSVC
	case src.Name != "":
		named, err := sources.Get(ctx, p, src.Name)
		if err != nil {
			return eval.Scorecard{}, err
		}
		base.Name, base.Source = src.Name, named.Config
		if src.Project != "" {
			base.Source.Project = src.Project
		}
		if src.Correlate != "" {
			base.Source.Correlate = src.Correlate
		}
		if err := sources.Check(ctx, base.Source, "source."); err != nil {
			return eval.Scorecard{}, err
		}
	default:
		base.Source = pull.Config{Kind: src.Kind, Endpoint: strings.TrimRight(strings.TrimSpace(src.Endpoint), "/"),
			AuthSecret: src.AuthSecret, Project: src.Project, Correlate: src.Correlate}
		if err := sources.Check(ctx, base.Source, "source."); err != nil {
			return eval.Scorecard{}, err
		}
	}

	pl := plan{kind: eval.KindScorecard, concurrency: ingestConcurrency, trials: 1, policy: scoring.DefaultPolicy()}
	byCase := map[string]string{} // case id to the source's run id
	if req.Dataset != nil {
		sent := make([]string, len(req.Runs))
		for i, r := range req.Runs {
			sent[i] = r.CaseID
		}
		known, err := s.ingestDataset(ctx, p, &pl, *req.Dataset, sent, "run")
		if err != nil {
			return eval.Scorecard{}, err
		}
		for _, r := range req.Runs {
			if known[r.CaseID] {
				byCase[r.CaseID] = r.RunID
			}
		}
	} else {
		ids := make([]string, len(req.Runs))
		for i, r := range req.Runs {
			id := r.CaseID
			if id == "" {
				id = r.RunID
			}
			byCase[id] = r.RunID
			ids[i] = id
		}
		pl.traceCases(ids)
	}
	if err := s.ingestHarness(ctx, p, &pl, req.Harness); err != nil {
		return eval.Scorecard{}, err
	}
	if req.Harness != nil && !base.Ledger() {
		base.Source.Mapping = s.harnessMapping(ctx, p, req.Harness.ID, pl.harness.Spec.Harness()).Overlay(base.Source.Mapping)
	}
	if err := s.resolveJudges(ctx, p, &pl, req.Judges); err != nil {
		return eval.Scorecard{}, err
	}
	if base.Ledger() {
		team, err := s.ledgerTeam(ctx, p, base.ViewerTeams, byCase)
		if err != nil {
			return eval.Scorecard{}, err
		}
		pl.team = team
	}
	pl.inTx = func(ctx context.Context, tx store.Tx, sc eval.Scorecard) error {
		return createPulled(ctx, tx, sc, pl.cases, byCase, base)
	}
	return s.record(ctx, p, pl, origin)
}

// ledgerTeam is the private team whose trajectories (or runs) a pull from
// the ledger copies, so that the batch keeps them that team's to read: a
// copy never widens who reads a trajectory (issue 30). Trajectories of
// several teams are refused, as is a personal one of the caller's (a
// session or conversation is its member's alone); one the caller cannot
// read is left for the pull to find missing, so nothing tells it apart
// from an unknown id.
func (s *Service) ledgerTeam(ctx context.Context, p auth.Principal, teams []string, byCase map[string]string) (string, error) {
	team := ""
	for _, id := range byCase {
		audience := ""
		t, err := s.o.Store.GetTrajectory(ctx, p.Workspace, id)
		switch {
		case err == nil:
			audience = t.Audience
		case !errors.Is(err, derrors.ErrNotFound):
			return "", err
		default:
			row, err := s.o.Store.GetRun(ctx, p.Workspace, id)
			switch {
			case err == nil:
				audience = row.Audience
			case !errors.Is(err, derrors.ErrNotFound):
				return "", err
			}
		}
		switch {
		case audience == "":
		case eval.IsTeamAudience(audience):
			if !eval.VisibleTo(audience, p.Subject, teams) {
				continue
			}
			t := eval.TeamOf(audience)
			if team != "" && team != t {
				return "", derrors.Invalidf("the runs to pull are of private teams %q and %q: a batch is one team's to read; pull each team's runs into a batch of its own", team, t)
			}
			team = t
		case audience == p.Subject:
			return "", derrors.Invalidf("run %q is personal (a session or conversation of yours): its trajectory is yours alone and is not copied into a batch the workspace reads", id)
		}
	}
	return team, nil
}

// harnessMapping is a harness's effective span attribute mapping: its
// spec's, overlaid by the workspace's overlay. A pulled source's own
// mapping overlays it in turn: it says how that platform names things.
func (s *Service) harnessMapping(ctx context.Context, p auth.Principal, harnessID string, h *registry.HarnessSpec) trace.SpanAttrMapping {
	var m trace.SpanAttrMapping
	if h != nil {
		m, _ = trace.MappingFromMeta(h.Meta)
	}
	if stored, err := s.o.Store.GetSpanAttrMapping(ctx, p.Workspace, harnessID); err == nil {
		var over trace.SpanAttrMapping
		if json.Unmarshal(stored.Mapping, &over) == nil {
			m = m.Overlay(over)
		}
	}
	return m
}

// createPulled creates each case's child run queued, origin source pull,
// and writes its pull.Plan beside it, in the submit's transaction tx.
func createPulled(ctx context.Context, tx store.Tx, sc eval.Scorecard, cases []registry.EvalCase, byCase map[string]string, base pull.Plan) error {
	canonical := true
	runs := make([]store.Run, 0, len(cases))
	pulls := make([]store.TracePull, 0, len(cases))
	for _, c := range cases {
		run := eval.Run{
			ID: eval.ChildRunID(sc.Tenant, sc.ID, c.ID, 0), Tenant: sc.Tenant, Harness: sc.Harness, CaseID: c.ID,
			Status: eval.StatusQueued, CreatedAt: sc.CreatedAt, UpdatedAt: sc.CreatedAt, Kind: eval.KindEval,
			Trigger: eval.TriggerScorecard, CreatedBy: sc.CreatedBy, Origin: &eval.Origin{Source: pull.OriginSource},
			ParentScorecardID: sc.ID, Canonical: &canonical, Case: &c, AudienceTeam: sc.AudienceTeam,
		}
		plan := base
		plan.RunID = byCase[c.ID]
		doc, err := json.Marshal(plan)
		if err != nil {
			return err
		}
		pulls = append(pulls, store.TracePull{Workspace: sc.Tenant, RunID: run.ID, ScorecardID: sc.ID, CreatedAt: sc.CreatedAt, Doc: doc})
		row, err := records.Row(run)
		if err != nil {
			return err
		}
		runs = append(runs, row)
	}
	if err := tx.PutTracePulls(ctx, pulls); err != nil {
		return err
	}
	_, _, err := tx.CreateRuns(ctx, runs)
	return err
}
