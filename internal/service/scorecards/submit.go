package scorecards

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/domain/graders"
	"svc/internal/domain/manifest"
	"svc/internal/domain/registry"
	"svc/internal/domain/scorecardwire"
	"svc/internal/domain/scoring"
	"svc/internal/platform/derrors"
	"svc/internal/platform/reqid"
	"svc/internal/service/models"
	"svc/internal/service/quota"
	"svc/internal/service/registries"
	"svc/store"
	"svc/store/records"
)

// The request bodies the client sends, defined in scorecardwire so that the
// client builds them without linking this service.
type (
	Selection     = scorecardwire.Selection
	JudgeSel      = scorecardwire.JudgeSel
	SubmitRequest = scorecardwire.SubmitRequest
	ScoreRequest  = scorecardwire.ScoreRequest
	GateRequest   = scorecardwire.GateRequest
)

// checkRef and checkCommon are the checks the submits share
// (scorecardwire's).
var (
	checkRef    = scorecardwire.CheckRef
	checkCommon = scorecardwire.CheckCommon
)

// plan is a resolved submit, ready to be recorded.
type plan struct {
	kind        string
	dataset     registries.Resolved // zero for an ad-hoc task
	datasetRef  registry.Ref
	cases       []registry.EvalCase
	adhoc       *registry.EvalCase
	subset      *eval.Subset
	harness     registries.Resolved
	runtime     string
	judges      []eval.JudgeRef
	sealed      []manifest.Judge
	graders     []registry.Grader
	ungraded    bool
	policy      eval.VerdictPolicy
	concurrency int
	trials      int
	// notes are info steps recorded with the submit step (graderNotes).
	notes []store.ScorecardStep
	// harnessRef, when set, is the batch's harness instead of harness's
	// (the `_traces` harness of an ingest names no registered harness).
	harnessRef *registry.Ref
	// inTx, when set, writes what the batch needs beside its record in
	// the submit's transaction (an ingest's sealed traces and child runs).
	inTx func(ctx context.Context, tx store.Tx, sc eval.Scorecard) error
	// team, when set, is the private team whose trajectories a pull from
	// the ledger copies: the batch is that team's to read.
	team string
}

// Submit resolves, seals and records a scorecard, then starts its workflow.
func (s *Service) Submit(ctx context.Context, p auth.Principal, req SubmitRequest, source string) (eval.Scorecard, error) {
	if err := req.Validate(); err != nil {
		return eval.Scorecard{}, err
	}
	pl := plan{kind: eval.KindScorecard, graders: req.Graders, concurrency: DefaultConcurrency, trials: 1}
	if req.Concurrency != nil {
		pl.concurrency = *req.Concurrency
	}
	if req.Trials != nil {
		pl.trials = *req.Trials
	}
	var err error
	if pl.dataset, err = s.o.Registries.Resolve(ctx, p, registry.Dataset, req.Dataset.ID, req.Dataset.Version); err != nil {
		return eval.Scorecard{}, err
	}
	pl.datasetRef = pl.dataset.Ref()
	all := pl.dataset.Spec.Dataset().Cases
	if pl.cases, pl.subset, err = selectCases(all, req.Cases); err != nil {
		return eval.Scorecard{}, err
	}
	if len(req.Graders) == 0 {
		// The cases grade with their own graders (an override replaces them).
		pl.notes = graderNotes(pl.cases)
	}
	if pl.policy, err = scoring.ComposePolicy(scoring.DefaultPolicy(), req.CriticalCases); err != nil {
		return eval.Scorecard{}, fmt.Errorf("criticalCases: %w", err)
	}
	if err := s.resolveCommon(ctx, p, &pl, req.Harness, req.Runtime, req.Judges); err != nil {
		return eval.Scorecard{}, err
	}
	return s.record(ctx, p, pl, source)
}

// selectCases applies a selection (spec §4.5): ids (unknown id 400), then
// tags (any match), then limit; an empty result is 400. subset is nil for
// the full dataset.
func selectCases(all []registry.EvalCase, sel *Selection) ([]registry.EvalCase, *eval.Subset, error) {
	if sel == nil || (len(sel.IDs) == 0 && len(sel.Tags) == 0 && sel.Limit == 0) {
		if len(all) == 0 {
			return nil, nil, derrors.Invalidf("the dataset has no cases; register a version with cases")
		}
		return all, nil, nil
	}
	out := all
	if len(sel.IDs) > 0 {
		byID := make(map[string]bool, len(sel.IDs))
		for _, id := range sel.IDs {
			byID[id] = true
		}
		found := map[string]bool{}
		var picked []registry.EvalCase
		for _, c := range out {
			if byID[c.ID] {
				picked = append(picked, c)
				found[c.ID] = true
			}
		}
		for _, id := range sel.IDs {
			if !found[id] {
				return nil, nil, derrors.Invalidf("cases.ids: case %q is not in the dataset; GET the dataset version to list its case ids", id)
			}
		}
		out = picked
	}
	if len(sel.Tags) > 0 {
		var picked []registry.EvalCase
		for _, c := range out {
			if slices.ContainsFunc(c.Tags, func(t string) bool { return slices.Contains(sel.Tags, t) }) {
				picked = append(picked, c)
			}
		}
		out = picked
	}
	if sel.Limit > 0 && len(out) > sel.Limit {
		out = out[:sel.Limit]
	}
	if len(out) == 0 {
		return nil, nil, derrors.Invalidf("the case selection is empty: no case matches ids %v and tags %v; widen it or omit cases", sel.IDs, sel.Tags)
	}
	sub := &eval.Subset{Total: len(all), Selected: len(out), IDs: sel.IDs, Tags: sel.Tags, Limit: sel.Limit}
	if len(out) == len(all) {
		sub = nil
	}
	return out, sub, nil
}

// resolveCommon resolves the harness (a process harness), the runtime (a
// local, nomad or k8s one, able to run the cases as they declare) and the judges (exact versions now, sealed with their spec
// digests and closures).
func (s *Service) resolveCommon(ctx context.Context, p auth.Principal, pl *plan, harness registry.Ref, runtime string, judges []JudgeSel) error {
	var err error
	if pl.harness, err = s.o.Registries.Resolve(ctx, p, registry.Harness, harness.ID, harness.Version); err != nil {
		return err
	}
	if hs := pl.harness.Spec.Harness(); hs == nil || hs.Kind == registry.HarnessService {
		return derrors.Invalidf("harness %s is a service harness, which needs a topology-capable nomad or k8s runtime; this deployment runs process harnesses only", pl.harness.Ref())
	}
	var rtSpec *registry.RuntimeSpec // nil: the deployment's local runtime
	if runtime != "" {
		rt, err := s.o.Registries.Resolve(ctx, p, registry.Runtime, runtime, "latest")
		if errors.Is(err, derrors.ErrNotFound) {
			return derrors.NotFoundf("runtime %q is not registered in this workspace or among shared ones; register it (POST /runtimes) or omit runtime", runtime)
		}
		if err != nil {
			return err
		}
		spec := rt.Spec.Runtime()
		cases := pl.cases
		if pl.adhoc != nil {
			cases = []registry.EvalCase{*pl.adhoc}
		}
		if err := spec.CheckDeclared(&pl.harness.Spec.Harness().HarnessConfig, cases); err != nil {
			return err
		}
		pl.runtime = runtime
		rtSpec = spec
	}
	// The model-key rule (spec §7): a managed target needs the key of the
	// binding the harness calls; a self-hosted one ships without.
	if err := s.models().CheckHarness(ctx, p.Workspace, pl.harness.Ref(), &pl.harness.Spec.Harness().HarnessConfig, runtime, rtSpec); err != nil {
		return err
	}
	return s.resolveJudges(ctx, p, pl, judges)
}

// resolveJudges resolves each judge of a batch (latest when it names no
// version) and seals it with its closure.
func (s *Service) resolveJudges(ctx context.Context, p auth.Principal, pl *plan, judges []JudgeSel) error {
	for _, j := range judges {
		v := j.Version
		if v == "" {
			v = "latest"
		}
		r, err := s.o.Registries.Resolve(ctx, p, registry.Judge, j.ID, v)
		if err != nil {
			return err
		}
		pl.judges = append(pl.judges, eval.JudgeRef{ID: j.ID, Version: v, Resolved: r.Version})
		pl.sealed = append(pl.sealed, manifest.Judge{Spec: r.Spec, Closure: s.judgeClosure(ctx, p, r.Spec.Judge())})
	}
	return nil
}

// judgeClosure is what a judge depends on beyond its spec, resolved as p
// sees it now (manifest.JudgeClosure): its model binding, rubric reference
// and delegated agent, each 'id@version' or "unresolved". A re-score's
// revision seals through the same function.
func (s *Service) judgeClosure(ctx context.Context, p auth.Principal, j *registry.JudgeSpec) map[string]string {
	return manifest.JudgeClosure(j, models.JudgeResolver(ctx, s.models(), s.o.Registries, p))
}

// record seals the manifest, writes the batch queued and starts its
// workflow; a workflow that cannot start fails the record (phase
// dispatch), so nothing is left queued forever.
func (s *Service) record(ctx context.Context, p auth.Principal, pl plan, source string) (eval.Scorecard, error) {
	if s.o.Orchestrator == nil {
		return eval.Scorecard{}, derrors.Unavailablef("no workflow orchestrator is configured, so batches cannot be started; run `svc dev`, or `svc serve` with TEMPORAL_ADDRESS")
	}
	now := s.o.Now().UTC()
	cases := pl.cases
	if pl.adhoc != nil {
		cases = []registry.EvalCase{*pl.adhoc}
	}
	m, err := manifest.Seal(manifest.Input{
		Dataset: pl.dataset.Spec, Cases: cases, Harness: pl.harness.Spec, Graders: pl.graders,
		Judges: pl.sealed, Policy: pl.policy, Runtime: pl.runtime,
		HarnessModel: harnessModelClosure(ctx, s.models(), p, pl.harness.Spec),
	}, now)
	if err != nil {
		return eval.Scorecard{}, err
	}
	stamp := scoring.Stamp(pl.policy)
	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = c.ID
	}
	sc := eval.Scorecard{
		ID: eval.NewID("sc"), Tenant: p.Workspace, Kind: pl.kind, Dataset: pl.datasetRef, Harness: pl.harness.Ref(),
		Status: eval.ScorecardQueued, CreatedBy: p.Subject, CreatedAt: now, UpdatedAt: now, Subset: pl.subset,
		VerdictPolicy: &stamp, Manifest: &m,
		Orchestration: &eval.Orchestration{Graders: pl.graders, Ungraded: pl.ungraded, Judges: pl.judges,
			DatasetOwner: pl.dataset.Owner, CaseIDs: ids, AdhocCase: pl.adhoc},
		Publication: &eval.Publication{State: "pending", Artifacts: []string{}, Exports: []string{}},
		Origin:      eval.NewOrigin(source, p.Subject, p.Agent, false), JudgeModels: judgeModels(pl.sealed),
		Runtime: pl.runtime, Concurrency: pl.concurrency, Trials: pl.trials,
		Progress: eval.Progress{Total: len(cases) * pl.trials},
	}
	if pl.harnessRef != nil {
		sc.Harness = *pl.harnessRef
	}
	// A batch made from a private team's dataset (else harness) is that
	// team's to read, with its child runs: they show the cases' tasks and
	// expected answers (issue 30, finding 6).
	if sc.AudienceTeam = pl.dataset.PrivateTeam; sc.AudienceTeam == "" {
		sc.AudienceTeam = pl.harness.PrivateTeam
	}
	if pl.team != "" {
		if sc.AudienceTeam != "" && sc.AudienceTeam != pl.team {
			return eval.Scorecard{}, derrors.Invalidf("the pulled trajectories are team %q's and the dataset or harness team %q's: a batch is one team's to read; pull them into a batch over assets of the same team", pl.team, sc.AudienceTeam)
		}
		sc.AudienceTeam = pl.team
	}
	row, err := records.ScorecardRow(sc, 0)
	if err != nil {
		return eval.Scorecard{}, err
	}
	// The batch spends the workspace's budget as its case-trials would as
	// runs, all at its submit: admitted whole or not created.
	var admitted error
	err = s.o.Store.Transact(ctx, func(tx store.Tx) error {
		if admitted = quota.AdmitRuns(ctx, tx, p.Workspace, now, s.o.TenantRuns, sc.Progress.Total); admitted != nil {
			return admitted
		}
		if admitted = quota.AdmitQueue(ctx, tx, p.Workspace, s.o.QueueMax, sc.Progress.Total); admitted != nil {
			return admitted
		}
		if _, err := tx.CreateScorecard(ctx, row); err != nil || pl.inTx == nil {
			return err
		}
		return pl.inTx(ctx, tx, sc)
	})
	if admitted != nil {
		return eval.Scorecard{}, admitted
	}
	if err != nil {
		return eval.Scorecard{}, err
	}
	steps := []store.ScorecardStep{{Workspace: sc.Tenant, ScorecardID: sc.ID, Key: "submit",
		TS: now, Phase: "submit", Status: "succeeded", Message: fmt.Sprintf("%d cases x %d trials, concurrency %d", len(cases), pl.trials, pl.concurrency)}}
	for _, n := range pl.notes {
		n.Workspace, n.ScorecardID, n.TS = sc.Tenant, sc.ID, now
		steps = append(steps, n)
	}
	s.appendSteps(ctx, steps)
	err = s.o.Orchestrator.StartScorecard(ctx, flows.ScorecardInput{
		Workspace: sc.Tenant, ScorecardID: sc.ID, Total: sc.Progress.Total, Trials: pl.trials,
		Concurrency: pl.concurrency, Judged: len(pl.judges) > 0,
	})
	if err != nil {
		return eval.Scorecard{}, s.failStart(ctx, sc, err)
	}
	return summaryView(sc), nil
}

// failMarkTimeout bounds the writes that undo or mark failed what a
// workflow that could not be started left (a batch queued, a scoring pass
// in flight): they outlive the request, not a store that does not answer.
const failMarkTimeout = 30 * time.Second

// failStart marks the batch sc failed (phase dispatch) after its workflow
// could not be started, so that nothing is left queued forever, and
// returns the 503 the client reads (the log gets the causes too). When the
// mark cannot be written either, the batch stays queued: that is logged
// with the request id and returned with the start error, and the client
// is told.
func (s *Service) failStart(ctx context.Context, sc eval.Scorecard, startErr error) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), failMarkTimeout)
	defer cancel()
	_, err := records.UpdateScorecard(wctx, s.o.Store, sc.Tenant, sc.ID, func(x *eval.Scorecard) error {
		x.Status = eval.ScorecardFailed
		x.Error = &eval.Error{Code: eval.CodeBatchFailed, Phase: eval.PhaseDispatch, Message: "the batch's workflow could not be started"}
		x.UpdatedAt = s.o.Now().UTC()
		return nil
	})
	if err != nil {
		s.o.Logger.LogAttrs(ctx, slog.LevelError, "a batch whose workflow could not be started is left queued: marking it failed did not work",
			reqid.Attr(ctx), slog.String("workspace", sc.Tenant), slog.String("scorecard", sc.ID),
			slog.String("start_error", startErr.Error()), slog.String("error", err.Error()))
		return errors.Join(derrors.Unavailablef("the batch %s was recorded but its workflow could not be started, and it could not be marked failed; it may show queued: submit it again", sc.ID),
			startErr, fmt.Errorf("marking scorecard %s failed: %w", sc.ID, err))
	}
	return errors.Join(derrors.Unavailablef("the batch %s was recorded but its workflow could not be started; it is marked failed, submit it again", sc.ID), startErr)
}

// maxGraderNotes bounds the grader notes of one submit, as the checker
// bounds its problems.
const maxGraderNotes = 20

// graderNotes returns an info step for each problem the grader checker
// finds in the cases' stored graders. A dataset version registered before
// registration ran the checker keeps its graders and grades leniently (a
// grader of an unknown kind or with a bad parameter scores as a skip, a
// member the kind does not know is ignored); the notes tell the reader of
// the batch's detail why, and how to fix it. At most maxGraderNotes, then
// one counting the rest.
func graderNotes(cases []registry.EvalCase) []store.ScorecardStep {
	var notes []store.ScorecardStep
	more := 0
	for _, c := range cases {
		for _, p := range graders.Problems(c.Graders) {
			if len(notes) == maxGraderNotes {
				more++
				continue
			}
			effect := "grading ignores this member"
			if p.Skips {
				effect = "the grader scores as a skip, failing the case,"
			}
			notes = append(notes, store.ScorecardStep{Key: fmt.Sprintf("submit:graders:%d", len(notes)), Phase: "submit", Status: "info", CaseID: c.ID,
				Message: fmt.Sprintf("case %q graders[%d]: %s (the dataset version was registered before graders were checked: %s until a fixed version is registered; POST /datasets/validate lists every problem)",
					c.ID, p.Index, p, effect)})
		}
	}
	if more > 0 {
		notes = append(notes, store.ScorecardStep{Key: "submit:graders:more", Phase: "submit", Status: "info",
			Message: fmt.Sprintf("and %d more grader problems in this dataset version's cases; POST the version's spec to /datasets/validate to list them all", more)})
	}
	return notes
}

// judgeModels lists the models the batch's judges use, as sealed in
// their closures ("name@version", or the name when it did not resolve),
// each once.
func judgeModels(js []manifest.Judge) []string {
	out := []string{}
	for _, j := range js {
		m, ok := j.Closure[manifest.ClosureModel]
		if !ok || m == "none" {
			continue
		}
		if m == manifest.Unresolved {
			switch spec := j.Spec.Judge(); {
			case spec != nil && spec.Code != nil && spec.Code.Model != nil:
				m = spec.Code.Model.Ref
			case spec != nil && spec.Model != nil:
				m = spec.Model.Model
			}
		}
		if m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// GroupRequest is the body of POST /groups: an ungraded experiment.
type GroupRequest struct {
	Harness registry.Ref  `json:"harness"`
	Dataset *registry.Ref `json:"dataset,omitempty"`
	Task    *struct {
		Prompt string `json:"prompt"`
	} `json:"task,omitempty"`
	Trials      *int   `json:"trials,omitempty"`
	Runtime     string `json:"runtime,omitempty"`
	Concurrency *int   `json:"concurrency,omitempty"`
}

// Validate refuses neither or both of dataset and task (spec §4.5).
func (r *GroupRequest) Validate() error {
	switch {
	case r.Dataset == nil && r.Task == nil:
		return derrors.Invalidf("send a dataset ({id, version}) or a task ({prompt}): an experiment needs one")
	case r.Dataset != nil && r.Task != nil:
		return derrors.Invalidf("send a dataset or a task, not both")
	}
	if r.Dataset != nil {
		if err := checkRef("dataset", *r.Dataset); err != nil {
			return err
		}
	}
	if r.Task != nil && strings.TrimSpace(r.Task.Prompt) == "" {
		return derrors.Invalidf("task.prompt is required: the prompt of the one-off task")
	}
	if err := checkRef("harness", r.Harness); err != nil {
		return err
	}
	return checkCommon(r.Concurrency, r.Trials, r.Runtime, nil)
}

// SubmitGroup records an experiment (kind experiment, graders stripped) and
// starts its workflow. A task makes a one-case `_adhoc` dataset.
func (s *Service) SubmitGroup(ctx context.Context, p auth.Principal, req GroupRequest, source string) (eval.Scorecard, error) {
	if err := req.Validate(); err != nil {
		return eval.Scorecard{}, err
	}
	pl := plan{kind: eval.KindExperiment, ungraded: true, concurrency: DefaultConcurrency, trials: 1, policy: scoring.DefaultPolicy()}
	if req.Concurrency != nil {
		pl.concurrency = *req.Concurrency
	}
	if req.Trials != nil {
		pl.trials = *req.Trials
	}
	if req.Dataset != nil {
		var err error
		if pl.dataset, err = s.o.Registries.Resolve(ctx, p, registry.Dataset, req.Dataset.ID, req.Dataset.Version); err != nil {
			return eval.Scorecard{}, err
		}
		pl.datasetRef = pl.dataset.Ref()
		if pl.cases, pl.subset, err = selectCases(pl.dataset.Spec.Dataset().Cases, nil); err != nil {
			return eval.Scorecard{}, err
		}
	} else {
		sum := sha256.Sum256([]byte(req.Task.Prompt))
		pl.adhoc = &registry.EvalCase{ID: "task", Task: req.Task.Prompt}
		pl.datasetRef = registry.Ref{ID: eval.DatasetAdhoc, Version: hex.EncodeToString(sum[:6])}
	}
	if err := s.resolveCommon(ctx, p, &pl, req.Harness, req.Runtime, nil); err != nil {
		return eval.Scorecard{}, err
	}
	return s.record(ctx, p, pl, source)
}

// harnessModelClosure is the closure of the model binding harness h
// calls, as p's workspace resolves it now ("name@version"), "" when it
// calls none or it is not declared (sealed as unresolved). The submit and
// verify-manifest seal through it alike.
func harnessModelClosure(ctx context.Context, ms *models.Service, p auth.Principal, h registry.Spec) string {
	hs := h.Harness()
	if hs == nil {
		return ""
	}
	return ms.HarnessClosure(ctx, p.Workspace, &hs.HarnessConfig)
}
