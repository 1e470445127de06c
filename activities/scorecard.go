package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"svc/auth"
	"svc/derrors"
	"svc/eval"
	"svc/flows"
	"svc/judges"
	"svc/records"
	"svc/registry"
	"svc/scoring"
	"svc/store"
	"svc/traces"
)

// ScorecardRef names a batch.
type ScorecardRef struct {
	Workspace   string `json:"workspace"`
	ScorecardID string `json:"scorecardId"`
}

// CaseItem is one (case, trial) of a batch.
type CaseItem struct {
	ScorecardRef
	CaseID string `json:"caseId"`
	Trial  int    `json:"trial"`
	// RunID is the child run, when the caller knows it.
	RunID string `json:"runId,omitempty"`
}

// CasePageInput asks for the case ids of a batch's selection from
// position From.
type CasePageInput struct {
	ScorecardRef
	From  int `json:"from"`
	Limit int `json:"limit"`
}

// JudgeInput judges one case.
type JudgeInput struct {
	CaseItem
	// Judges are the judges to run; nil means the batch's own.
	Judges []flows.JudgeUse `json:"judges,omitempty"`
	// Replace re-runs a judge that already has verdicts on the case (a
	// detached pass); without it a judge already judged is skipped, which
	// makes a retried activity cheap and idempotent.
	Replace bool `json:"replace,omitempty"`
}

// FinishInput ends a batch.
type FinishInput struct {
	ScorecardRef
	Cancelled bool   `json:"cancelled,omitempty"`
	Phase     string `json:"phase,omitempty"` // set when an infrastructure error fails the batch
	Message   string `json:"message,omitempty"`
}

// ChildPageInput pages a batch's canonical child runs.
type ChildPageInput struct {
	ScorecardRef
	After string `json:"after,omitempty"` // cursor: the last child run id of the previous page
	Limit int    `json:"limit"`
}

// ChildPage is one page of child runs that have results.
type ChildPage struct {
	Items []CaseItem `json:"items"`
	More  bool       `json:"more"`
}

// FinishScoreInput ends a detached scoring pass.
type FinishScoreInput struct {
	ScorecardRef
	Pass      string           `json:"pass"`
	Judges    []flows.JudgeUse `json:"judges"`
	CreatedBy string           `json:"createdBy,omitempty"`
	Aborted   bool             `json:"aborted,omitempty"`
	Message   string           `json:"message,omitempty"`
}

func (a *Activities) update(ctx context.Context, ref ScorecardRef, fn func(sc *eval.Scorecard) error) (eval.Scorecard, error) {
	return records.UpdateScorecard(ctx, a.Store, ref.Workspace, ref.ScorecardID, func(sc *eval.Scorecard) error {
		if err := fn(sc); err != nil {
			return err
		}
		sc.UpdatedAt = a.now()
		return nil
	})
}

func (a *Activities) step(ctx context.Context, ref ScorecardRef, key, phase, status, msg, caseID string) error {
	return a.Store.AppendScorecardSteps(ctx, []store.ScorecardStep{{
		Workspace: ref.Workspace, ScorecardID: ref.ScorecardID, Key: key, TS: a.now(),
		Phase: phase, Status: status, Message: clip(msg, 1000), CaseID: caseID,
	}})
}

// batchPlan returns the batch's record, decoded once per version. Callers must
// not modify what it returns.
func (a *Activities) batchPlan(ctx context.Context, ws, id string) (eval.Scorecard, error) {
	return a.plans.Plan(ctx, a.Store, ws, id)
}

// errStop is returned by an update function that decided to change nothing.
var errStop = errors.New("no change")

// StartScorecard marks a queued batch running.
func (a *Activities) StartScorecard(ctx context.Context, ref ScorecardRef) error {
	_, err := a.update(ctx, ref, func(sc *eval.Scorecard) error {
		if sc.Status != eval.ScorecardQueued {
			return errStop
		}
		sc.Status = eval.ScorecardRunning
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	return a.step(ctx, ref, "dispatch:started", "dispatch", "started", "dispatching cases", "")
}

// CasePage returns the case ids of the batch's selection from in.From.
func (a *Activities) CasePage(ctx context.Context, in CasePageInput) ([]string, error) {
	sc, err := a.batchPlan(ctx, in.Workspace, in.ScorecardID)
	if err != nil {
		return nil, err
	}
	ids := sc.Orchestration.CaseIDs
	if in.From >= len(ids) {
		return nil, nil
	}
	return ids[in.From:min(len(ids), in.From+in.Limit)], nil
}

// RunCase runs one (case, trial) of a batch: it creates the child run (or
// finds the one a previous attempt made) and dispatches it as DispatchRun
// does, so a case finishes exactly once whatever restarts.
func (a *Activities) RunCase(ctx context.Context, item CaseItem) (RunStatus, error) {
	ctx, stop := keepLease(ctx, nil)
	defer stop()
	sc, err := a.batchPlan(ctx, item.Workspace, item.ScorecardID)
	if err != nil {
		return RunStatus{}, err
	}
	id := records.ChildRunID(item.Workspace, item.ScorecardID, item.CaseID, item.Trial)
	row, err := a.Store.GetRun(ctx, item.Workspace, id)
	var run eval.Run
	switch {
	case err == nil:
		if run, err = records.FromRow(row); err != nil {
			return RunStatus{}, err
		}
	case errors.Is(err, derrors.ErrNotFound):
		if run, err = a.newChild(ctx, sc, item, id); err != nil {
			return RunStatus{}, err
		}
	default:
		return RunStatus{}, err
	}
	if sc.Status == eval.ScorecardCancelled || sc.Status == eval.ScorecardSuperseded {
		// The batch was stopped: no further case fires.
		return RunStatus{Status: string(run.Status)}, temporal.NewCanceledError("batch stopped")
	}
	o := sc.Orchestration
	if o == nil {
		o = &eval.Orchestration{}
	}
	st, err := a.dispatch(ctx, run, grading{graders: o.Graders, ungraded: o.Ungraded})
	if err != nil {
		return st, err
	}
	if st.Status == string(eval.StatusFailed) {
		if r, err := a.loadRun(ctx, RunRef{Workspace: item.Workspace, RunID: id}); err == nil && r.Error != nil {
			_ = a.step(ctx, item.ScorecardRef, "case:"+id, "case", "failed", r.Error.Message, item.CaseID)
		}
	}
	return st, nil
}

// newChild creates the child run of item, with the case read from the
// batch's dataset version (or its ad-hoc task).
func (a *Activities) newChild(ctx context.Context, sc eval.Scorecard, item CaseItem, id string) (eval.Run, error) {
	var c registry.EvalCase
	o := sc.Orchestration
	switch {
	case o != nil && o.AdhocCase != nil && o.AdhocCase.ID == item.CaseID:
		c = *o.AdhocCase
	default:
		owner := sc.Tenant
		if o != nil && o.DatasetOwner != "" {
			owner = o.DatasetOwner
		}
		cases, err := a.Store.ListDatasetCases(ctx, owner, sc.Dataset.ID, sc.Dataset.Version, store.CaseFilter{IDs: []string{item.CaseID}})
		if err != nil {
			return eval.Run{}, err
		}
		if len(cases) == 0 {
			return eval.Run{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("case %s is not in dataset %s", item.CaseID, sc.Dataset), "CaseMissing", nil)
		}
		if err := json.Unmarshal(cases[0].Doc, &c); err != nil {
			return eval.Run{}, fmt.Errorf("case %s of dataset %s does not decode: %w", item.CaseID, sc.Dataset, err)
		}
	}
	run, _, err := a.createChild(ctx, sc, item, id, c, false)
	return run, err
}

// createChild creates the child run of item for case c: queued, or, with
// running, already running its first attempt (fresh reports that this
// call created it so; a concurrent attempt may have made it first, and
// then that run is returned as it is).
func (a *Activities) createChild(ctx context.Context, sc eval.Scorecard, item CaseItem, id string, c registry.EvalCase, running bool) (run eval.Run, fresh bool, err error) {
	if sc.Runtime != "" {
		if c.Placement == nil {
			c.Placement = &registry.Placement{}
		} else {
			p := *c.Placement
			c.Placement = &p
		}
		c.Placement.Target = sc.Runtime
	}
	now := a.now()
	canonical := true
	run = eval.Run{
		ID: id, Tenant: sc.Tenant, Harness: sc.Harness, CaseID: item.CaseID, Status: eval.StatusQueued,
		CreatedAt: now, UpdatedAt: now, Kind: eval.KindEval, Trigger: eval.TriggerScorecard,
		CreatedBy: sc.CreatedBy, Origin: &eval.Origin{Source: "scorecard"},
		ParentScorecardID: sc.ID, Trial: item.Trial, Canonical: &canonical, Runtime: sc.Runtime, Case: &c,
	}
	if running {
		run.Status, run.Attempts, run.StartedAt = eval.StatusRunning, 1, &now
	}
	row, err := records.Row(run)
	if err != nil {
		return eval.Run{}, false, err
	}
	stored, err := a.Store.CreateRun(ctx, row)
	switch {
	case errors.Is(err, derrors.ErrConflict):
		// A concurrent attempt made it first: use that one.
		if stored, err = a.Store.GetRun(ctx, sc.Tenant, id); err != nil {
			return eval.Run{}, false, err
		}
	case err != nil:
		return eval.Run{}, false, err
	default:
		fresh = running
	}
	run, err = records.FromRow(stored)
	return run, fresh, err
}

// JudgeCase runs judges over one finished case and stores their verdicts
// in the child run's scores, replacing each judge's earlier ones and
// keeping every other score. Judge problems are skip scores, not errors.
func (a *Activities) JudgeCase(ctx context.Context, in JudgeInput) error {
	sc, err := a.batchPlan(ctx, in.Workspace, in.ScorecardID)
	if err != nil {
		return err
	}
	uses := in.Judges
	if uses == nil && sc.Orchestration != nil {
		for _, j := range sc.Orchestration.Judges {
			uses = append(uses, flows.JudgeUse{ID: j.ID, Version: j.Resolved})
		}
	}
	if len(uses) == 0 {
		return nil
	}
	id := in.RunID
	if id == "" {
		id = records.ChildRunID(in.Workspace, in.ScorecardID, in.CaseID, in.Trial)
	}
	run, err := a.loadRun(ctx, RunRef{Workspace: in.Workspace, RunID: id})
	if err != nil {
		return err
	}
	if run.Result == nil {
		return nil
	}
	who := auth.Principal{Subject: sc.CreatedBy, Workspace: sc.Tenant, Roles: []auth.Role{auth.RoleMember}}
	input := judges.Input{Trace: run.Result.Trace, Snapshot: run.Result.Snapshot, Evidence: run.Result.Evidence}
	if run.Case != nil {
		input.Case = *run.Case
	}
	var fresh []eval.Score
	var judged []string
	for _, u := range uses {
		prefix := "judge:" + u.ID
		if !in.Replace && hasMetric(run.Result.Scores, prefix) {
			continue
		}
		heartbeat(ctx)
		var scores []eval.Score
		spec, err := a.Registries.Resolve(ctx, who, registry.Judge, u.ID, u.Version)
		switch {
		case errors.Is(err, derrors.ErrNotFound):
			scores = judges.Skip(u.ID, fmt.Sprintf("judge %s@%s is no longer registered or visible to the batch's creator", u.ID, u.Version))
		case err != nil:
			return err
		default:
			jobID := fmt.Sprintf("%s-%s-a%d", id, u.ID, activity.GetInfo(ctx).Attempt)
			if scores, err = a.Judges.Run(ctx, spec.Spec.Judge(), input, jobID); err != nil {
				return err
			}
		}
		fresh = append(fresh, scores...)
		judged = append(judged, prefix)
	}
	if len(judged) == 0 {
		return nil
	}
	return a.Store.Transact(ctx, func(tx store.Tx) error {
		row, err := tx.GetRun(ctx, in.Workspace, id)
		if err != nil {
			return err
		}
		cur, err := records.FromRow(row)
		if err != nil {
			return err
		}
		if cur.Result == nil {
			return nil
		}
		kept := cur.Result.Scores[:0:0]
		for _, s := range cur.Result.Scores {
			if !judgedBy(s.Metric, judged) {
				kept = append(kept, s)
			}
		}
		cur.Result.Scores = append(kept, fresh...)
		cur.Result.Pass = cur.Error == nil && passes(cur.Result.Scores)
		cur.UpdatedAt = a.now()
		next, err := records.Row(cur)
		if err != nil {
			return err
		}
		_, err = tx.PutRun(ctx, next)
		return err
	})
}

// passes is allPass without skip scores: a skipped judge says nothing
// about the case, and the verdict basis reports the skip.
func passes(scores []eval.Score) bool {
	for _, s := range scores {
		if s.Pass != nil && !*s.Pass && !judges.IsSkip(s) {
			return false
		}
	}
	return true
}

func hasMetric(scores []eval.Score, prefix string) bool {
	for _, s := range scores {
		if judgedBy(s.Metric, []string{prefix}) {
			return true
		}
	}
	return false
}

// judgedBy reports whether metric belongs to one of the judges (metric
// judge:<id> or judge:<id>:<sub>).
func judgedBy(metric string, prefixes []string) bool {
	for _, p := range prefixes {
		if metric == p || strings.HasPrefix(metric, p+":") {
			return true
		}
	}
	return false
}

// ChildRunPage returns a page of the batch's canonical child runs that have
// results, in run-id order, after in.After.
func (a *Activities) ChildRunPage(ctx context.Context, in ChildPageInput) (ChildPage, error) {
	rows, err := records.ListChildren(ctx, a.Store, in.Workspace, in.ScorecardID)
	if err != nil {
		return ChildPage{}, err
	}
	var out ChildPage
	for _, r := range rows {
		if r.ID <= in.After || r.Result == nil {
			continue
		}
		if len(out.Items) == in.Limit {
			out.More = true
			break
		}
		out.Items = append(out.Items, CaseItem{ScorecardRef: in.ScorecardRef, CaseID: r.CaseID, Trial: r.Trial, RunID: r.ID})
	}
	return out, nil
}

// FinishScorecard ends a batch: it rebuilds the per-case table from the
// child runs, computes the summary, appends scoring revision 1 (for a
// scorecard that finished), writes the terminal status with the final
// progress and the publication plan, and notifies the creator
// (scorecard_completed or scorecard_failed; a cancelled batch notifies no
// one).
func (a *Activities) FinishScorecard(ctx context.Context, in FinishInput) error {
	children, err := records.ListChildren(ctx, a.Store, in.Workspace, in.ScorecardID)
	if err != nil {
		return err
	}
	heartbeat(ctx)
	var final eval.Scorecard
	changed := false
	final, err = a.update(ctx, in.ScorecardRef, func(sc *eval.Scorecard) error {
		if eval.ScorecardTerminal(sc.Status) && sc.Status != eval.ScorecardCancelled && sc.Status != eval.ScorecardSuperseded {
			return errStop // finished by an earlier attempt
		}
		policy, _ := scoring.ResolvePolicy(sc.VerdictPolicy, sc.Manifest)
		rows := make([]eval.CaseRow, 0, len(children))
		for _, r := range children {
			rows = append(rows, scoring.CaseRow(policy, r))
		}
		sc.Summary = scoring.Summarize(rows)
		sc.RunIDs = nil
		for _, r := range children {
			sc.RunIDs = append(sc.RunIDs, r.ID)
		}
		now := a.now()
		sc.FinishedAt = &now
		// The final counts and pace, so lists show them without counting.
		sc.Progress = records.CountProgress(sc.Progress.Total, records.CountChildren(children), now)
		switch {
		case sc.Status == eval.ScorecardCancelled || sc.Status == eval.ScorecardSuperseded:
			// Stopped through the API: the status is already written.
		case in.Cancelled:
			sc.Status = eval.ScorecardCancelled
		case in.Phase != "":
			sc.Status = eval.ScorecardFailed
			sc.Error = &eval.Error{Code: "BATCH_FAILED", Phase: in.Phase, Message: clip(in.Message, 2000)}
		case dispatchFailedAll(children) != "":
			// Not one case reached its harness (a command that does not
			// exist, a harness that cannot be resolved): the batch
			// measured nothing, and says why.
			sc.Status = eval.ScorecardFailed
			sc.Error = &eval.Error{Code: "BATCH_FAILED", Phase: eval.PhaseDispatch,
				Message: clip(fmt.Sprintf("no case could be dispatched (%d of %d case runs): %s", len(children), sc.Progress.Total, dispatchFailedAll(children)), 2000)}
		default:
			sc.Status = eval.ScorecardSucceeded
			if sc.Kind == eval.KindScorecard && len(sc.Scoring) == 0 {
				sc.Scoring = append(sc.Scoring, eval.ScoringRevision{
					Revision: 1, Kind: "initial", Judges: sealedJudges(sc), ScorePlaneDigest: scoring.ScorePlaneDigest(rows),
					AnalysisRef: records.AnalysisRef(sc.ID, 1), CreatedAt: now, CreatedBy: sc.CreatedBy,
				})
				sc.AnalysisRef = records.AnalysisRef(sc.ID, 1)
			}
		}
		sc.Publication = &eval.Publication{State: "published", Artifacts: []string{}, Exports: []string{}}
		if sc.AnalysisRef != "" {
			sc.Publication.Artifacts = append(sc.Publication.Artifacts, sc.AnalysisRef)
		}
		changed = true
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	if !changed {
		if final, _, err = records.LoadScorecard(ctx, a.Store, in.Workspace, in.ScorecardID); err != nil {
			return err
		}
	}
	if err := a.freezeAnalysis(ctx, final, caseRows(final, children)); err != nil {
		return err
	}
	return a.announce(ctx, final)
}

// dispatchFailedAll returns the error message of the first child when
// every child of a batch failed to be dispatched (and there is one), else
// "".
func dispatchFailedAll(children []eval.Run) string {
	if len(children) == 0 {
		return ""
	}
	for _, r := range children {
		if r.Error == nil || r.Error.Code != eval.CodeDispatch {
			return ""
		}
	}
	return children[0].Error.Message
}

// caseRows is the per-case table of sc over its children, under the
// policy the batch stamped.
func caseRows(sc eval.Scorecard, children []eval.Run) []eval.CaseRow {
	policy, _ := scoring.ResolvePolicy(sc.VerdictPolicy, sc.Manifest)
	rows := make([]eval.CaseRow, 0, len(children))
	for _, r := range children {
		rows = append(rows, scoring.CaseRow(policy, r))
	}
	return rows
}

func sealedJudges(sc *eval.Scorecard) []eval.SealedJudge {
	if sc.Manifest != nil && len(sc.Manifest.Judges) > 0 {
		return sc.Manifest.Judges
	}
	return []eval.SealedJudge{}
}

// announce sends the outward effects of a terminal batch: the step, the
// event and the creator's notification, each with a deterministic key.
func (a *Activities) announce(ctx context.Context, sc eval.Scorecard) error {
	ref := ScorecardRef{Workspace: sc.Tenant, ScorecardID: sc.ID}
	msg := fmt.Sprintf("%d of %d case runs finished", len(sc.RunIDs), sc.Progress.Total)
	if sc.Error != nil {
		msg = sc.Error.Message
	}
	if err := a.step(ctx, ref, "finish", "finalize", string(sc.Status), msg, ""); err != nil {
		return err
	}
	return a.Store.Transact(ctx, func(tx store.Tx) error {
		data, _ := json.Marshal(map[string]any{"scorecardId": sc.ID, "status": sc.Status, "kind": sc.Kind})
		if _, err := tx.AppendEvent(ctx, store.Event{ID: "scorecard.finished:" + sc.ID, Workspace: sc.Tenant,
			Type: "scorecard." + string(sc.Status), Subject: "scorecard:" + sc.ID, Actor: sc.CreatedBy, Data: data}); err != nil {
			return err
		}
		if sc.CreatedBy == "" || (sc.Status != eval.ScorecardSucceeded && sc.Status != eval.ScorecardFailed) {
			return nil
		}
		kind, verb := eval.NotifyScorecardCompleted, "completed"
		if sc.Status == eval.ScorecardFailed {
			kind, verb = eval.NotifyScorecardFailed, "failed"
		}
		if sc.Origin != nil && sc.Origin.Source == "schedule" {
			kind = strings.Replace(kind, "scorecard_", "schedule_", 1)
		}
		body := fmt.Sprintf("%s of %s on %s %s.", sc.Kind, sc.Harness, sc.Dataset, verb)
		if pr, ok := sc.Summary["casePass"]; ok && pr.PassRate != nil {
			body += fmt.Sprintf(" Pass rate %.1f%% over %d cases.", *pr.PassRate*100, pr.Count)
		}
		link, _ := json.Marshal(map[string]string{"scorecardId": sc.ID, "resourceType": "scorecard", "resourceId": sc.ID})
		_, _, err := tx.AddNotification(ctx, store.Notification{ID: kind + ":" + sc.ID, Workspace: sc.Tenant, Recipient: sc.CreatedBy,
			Kind: kind, Title: fmt.Sprintf("Scorecard %s %s", sc.ID, verb), Body: clip(body, 500), Link: link})
		return err
	})
}

// FinishScore ends a detached scoring pass: on success it appends a
// scoring revision (initial for a batch that had none, else rescore),
// flips an experiment into a scorecard, refreshes the summary and emits
// scorecard.scored; an aborted pass adds no revision. Either way the batch
// is released for the next pass.
func (a *Activities) FinishScore(ctx context.Context, in FinishScoreInput) error {
	children, err := records.ListChildren(ctx, a.Store, in.Workspace, in.ScorecardID)
	if err != nil {
		return err
	}
	// Seal the judges as they resolve now: their spec digests.
	cur, _, err := records.LoadScorecard(ctx, a.Store, in.Workspace, in.ScorecardID)
	if err != nil {
		return err
	}
	who := auth.Principal{Subject: cur.CreatedBy, Workspace: cur.Tenant, Roles: []auth.Role{auth.RoleMember}}
	var sealed []eval.SealedJudge
	for _, j := range in.Judges {
		d := "unresolved"
		if r, err := a.Registries.Resolve(ctx, who, registry.Judge, j.ID, j.Version); err == nil {
			d = r.Digest
		}
		sealed = append(sealed, eval.SealedJudge{ID: j.ID, Version: j.Version, Digest: d})
	}
	var revision int
	sc, err := a.update(ctx, in.ScorecardRef, func(sc *eval.Scorecard) error {
		if sc.ScoringInFlight != in.Pass {
			return errStop // settled by an earlier attempt
		}
		sc.ScoringInFlight = ""
		// Judges may have turned verdicts, even in a pass that aborted.
		sc.Progress = records.Recount(sc.Progress, records.CountChildren(children))
		if in.Aborted {
			revision = 0
			return nil
		}
		policy, _ := scoring.ResolvePolicy(sc.VerdictPolicy, sc.Manifest)
		rows := make([]eval.CaseRow, 0, len(children))
		for _, r := range children {
			rows = append(rows, scoring.CaseRow(policy, r))
		}
		sc.Summary = scoring.Summarize(rows)
		kind := "rescore"
		if len(sc.Scoring) == 0 {
			kind = "initial"
		}
		revision = len(sc.Scoring) + 1
		sc.Scoring = append(sc.Scoring, eval.ScoringRevision{Revision: revision, Kind: kind, Judges: sealed, JudgeRun: in.Pass,
			ScorePlaneDigest: scoring.ScorePlaneDigest(rows), AnalysisRef: records.AnalysisRef(sc.ID, revision), CreatedAt: a.now(), CreatedBy: in.CreatedBy})
		sc.AnalysisRef = records.AnalysisRef(sc.ID, revision)
		sc.Kind = eval.KindScorecard
		return nil
	})
	if errors.Is(err, errStop) {
		return nil
	}
	if err != nil {
		return err
	}
	ref := in.ScorecardRef
	if !in.Aborted {
		if err := a.freezeAnalysis(ctx, sc, caseRows(sc, children)); err != nil {
			return err
		}
	}
	if in.Aborted {
		return a.step(ctx, ref, "score:"+in.Pass, "judges", "failed", "scoring pass "+in.Pass+" added no revision: "+in.Message, "")
	}
	if err := a.step(ctx, ref, "score:"+in.Pass, "judges", "succeeded", fmt.Sprintf("scoring revision %d by pass %s", revision, in.Pass), ""); err != nil {
		return err
	}
	data, _ := json.Marshal(map[string]any{"scorecardId": sc.ID, "revision": revision, "pass": in.Pass, "judges": in.Judges})
	_, err = a.Store.AppendEvent(ctx, store.Event{ID: "scorecard.scored:" + in.Pass, Workspace: sc.Tenant, Type: "scorecard.scored",
		Subject: "scorecard:" + sc.ID, Actor: in.CreatedBy, Data: data})
	return err
}

// freezeAnalysis stores the bundle of the batch's last revision, once.
func (a *Activities) freezeAnalysis(ctx context.Context, sc eval.Scorecard, rows []eval.CaseRow) error {
	if len(sc.Scoring) == 0 {
		return nil
	}
	rev := sc.Scoring[len(sc.Scoring)-1]
	doc, digest, err := traces.BuildAnalysis(sc, rows, rev)
	if err != nil {
		return err
	}
	_, _, err = a.Store.PutAnalysis(ctx, store.Analysis{Workspace: sc.Tenant, ScorecardID: sc.ID, Revision: rev.Revision,
		Digest: digest, Doc: doc, CreatedAt: rev.CreatedAt})
	return err
}
