package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"svc/activities/judges"
	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/modelproxy"
	"svc/internal/domain/registry"
	"svc/store"
)

// Environment variables a code judge that names a model is given: the
// OpenAI SDKs read the first two as they are, so a judge calls its model
// with an unchanged client. The "key" is the run-scoped proxy token.
const (
	EnvModelBaseURL = "OPENAI_BASE_URL"
	EnvModelToken   = "OPENAI_API_KEY"
	EnvModelName    = "SVC_JUDGE_MODEL"
)

// proxyPath is the model proxy's API root below the control plane's
// address (the API serves /judge-proxy/v1/chat/completions).
const proxyPath = "/judge-proxy/v1"

// modelProxyURL is the model proxy's API root as a judge process reaches
// it: ModelProxyURL, else below the address harnesses export their spans
// to (the control plane's, OTLPEndpoint); "" when neither is set.
func (a *Activities) modelProxyURL() string {
	if a.ModelProxyURL != "" {
		return strings.TrimRight(a.ModelProxyURL, "/")
	}
	if a.OTLPEndpoint != "" {
		return strings.TrimRight(a.OTLPEndpoint, "/") + proxyPath
	}
	return ""
}

// runCodeJudge runs judge j over in with r (a copy made for this
// execution). A code judge that names a model gets model access for this
// execution only: its binding is checked, a run-scoped proxy token is
// minted and given to the process with the proxy's address (never the
// key), and revoked when the judge ends. A binding or key the workspace
// lacks, or a worker with no proxy address, is the judge's skip score.
func (a *Activities) runCodeJudge(ctx context.Context, r judges.Runner, who auth.Principal, j *registry.JudgeSpec, in judges.Input, jobID, runID string) ([]eval.Score, error) {
	if j == nil || j.Kind != registry.JudgeCode || j.Code == nil || j.Code.Model == nil || j.Code.Model.Ref == "" {
		return r.Run(ctx, j, in, jobID)
	}
	ref := j.Code.Model.Ref
	if a.Models == nil {
		return judges.Skip(j.ID, fmt.Sprintf("judge %s calls model %q, and this worker does not configure model access", j.ID, ref)), nil
	}
	url := a.modelProxyURL()
	if url == "" {
		return judges.Skip(j.ID, fmt.Sprintf("judge %s calls model %q through the control plane's model proxy, and this worker does not know the control plane's address for jobs; an operator sets SVC_PUBLIC_URL (or SVC_HARNESS_OTLP_ENDPOINT)", j.ID, ref)), nil
	}
	_, missing, err := a.Models.JudgeEndpoint(ctx, who.Workspace, ref)
	if err != nil {
		return nil, err
	}
	if missing != "" {
		return judges.Skip(j.ID, missing), nil
	}
	// The token outlives the judge's timeout by a margin for the driver's
	// own start and stop; it is revoked as soon as the judge ends.
	expires := a.now().Add(r.Timeout(j.Code) + time.Minute)
	token, err := a.Models.MintProxyToken(ctx, modelproxy.Grant{Workspace: who.Workspace, Model: ref, JudgeID: j.ID, RunID: runID, ExpiresAt: expires})
	if err != nil {
		return nil, err
	}
	defer func() {
		rctx, cancel := detached(ctx, tokenCallTimeout)
		defer cancel()
		if err := a.Models.RevokeProxyToken(rctx, token); err != nil {
			a.logger().Warn("revoking a judge's model proxy token; it expires by itself", append(activityAttrs(ctx),
				"workspace", who.Workspace, "run", runID, "judge", j.ID, "expiresAt", expires, "error", err)...)
		}
	}()
	// The grant is recorded before the judge can call: its sequence number
	// is where the judge's calls are looked for when it ends.
	mark, err := a.recordJudgeModelAccess(ctx, who, j.ID, ref, runID, jobID)
	if err != nil {
		return nil, err
	}
	env := make(map[string]string, len(r.Env)+3)
	for k, v := range r.Env {
		env[k] = v
	}
	env[EnvModelBaseURL], env[EnvModelToken], env[EnvModelName] = url, token, ref
	r.Env = env
	scores, err := r.Run(ctx, j, in, jobID)
	if err != nil {
		return nil, err
	}
	uctx, cancel := detached(ctx, tokenCallTimeout)
	u, err := a.judgeModelUsage(uctx, who.Workspace, mark, runID, j.ID)
	cancel()
	if err != nil {
		// The scores stand without their usage; the calls are in the event log.
		a.logger().Warn("summing a code judge's model calls", append(activityAttrs(ctx),
			"workspace", who.Workspace, "run", runID, "judge", j.ID, "error", err)...)
		return scores, nil
	}
	a.logger().Info("code judge model usage", append(activityAttrs(ctx), "workspace", who.Workspace, "run", runID,
		"judge", j.ID, "model", ref, "calls", u.Calls, "inputTokens", u.InputTokens, "outputTokens", u.OutputTokens, "costUsd", u.CostUSD)...)
	return judges.WithModelUsage(j.ID, ref, u, scores), nil
}

// Event types of a code judge's model access: the grant (appended when its
// token is minted) and each call (appended by the API's model proxy).
const (
	EventJudgeModelAccess = "judge.model_access"
	EventJudgeModelCall   = "judge.model_call"
)

// recordJudgeModelAccess appends judge.model_access for one execution of a
// code judge (run, judge, model; never the token) and returns its sequence
// number. Its id is per execution, so a retried activity appends it once.
func (a *Activities) recordJudgeModelAccess(ctx context.Context, who auth.Principal, judgeID, model, runID, jobID string) (int64, error) {
	data, err := json.Marshal(map[string]any{"runId": runID, "judge": judgeID, "model": model, "job": jobID})
	if err != nil {
		return 0, err
	}
	e, err := a.Store.AppendEvent(ctx, store.Event{ID: EventJudgeModelAccess + ":" + jobID, Workspace: who.Workspace,
		Type: EventJudgeModelAccess, Subject: "run:" + runID, Actor: "judge:" + judgeID, Data: data, CreatedAt: a.now()})
	if err != nil {
		return 0, err
	}
	return e.Seq, nil
}

// judgeModelUsage sums the judge.model_call events of one judge on one
// run appended after sequence number after.
func (a *Activities) judgeModelUsage(ctx context.Context, workspace string, after int64, runID, judgeID string) (judges.ModelUsage, error) {
	var u judges.ModelUsage
	for {
		page, err := a.Store.ListEvents(ctx, store.EventFilter{Workspace: workspace, Type: EventJudgeModelCall, AfterSeq: after, Limit: 500})
		if err != nil {
			return u, err
		}
		for _, e := range page {
			var d struct {
				RunID        string   `json:"runId"`
				Judge        string   `json:"judge"`
				InputTokens  int64    `json:"inputTokens"`
				OutputTokens int64    `json:"outputTokens"`
				CostUSD      *float64 `json:"costUsd"`
			}
			if json.Unmarshal(e.Data, &d) != nil || d.RunID != runID || d.Judge != judgeID {
				continue
			}
			u.Calls++
			u.InputTokens += d.InputTokens
			u.OutputTokens += d.OutputTokens
			if d.CostUSD != nil {
				u.CostUSD += *d.CostUSD
				u.Priced = true
			}
		}
		if len(page) < 500 {
			return u, nil
		}
		after = page[len(page)-1].Seq
	}
}

// judgeRunner is the runner of a code judge in a batch: the worker's, on
// the local driver, unless the judge names a runtime; then the job is
// placed on that runtime as a run's would be (its driver, admission and
// credentials), and a nomad, k8s or runner runtime runs the judge's image
// entrypoint. reason, when not empty, is why the judge cannot run there
// (its skip reason): the runtime gone or unusable.
func (a *Activities) judgeRunner(ctx context.Context, who auth.Principal, j *registry.JudgeSpec, source eval.Run) (judges.Runner, string, error) {
	r := *a.Judges
	if j == nil || j.Code == nil || j.Code.Runtime == "" {
		return r, "", nil
	}
	at := eval.Run{ID: source.ID, Tenant: source.Tenant, CreatedBy: source.CreatedBy, Runtime: j.Code.Runtime}
	// The judge's job declares no resources of its own: the case's are
	// its harness's, not the judge's.
	pl, err := a.place(ctx, at, who, &registry.HarnessSpec{ID: j.ID}, registry.EvalCase{ID: source.CaseID})
	if isCaseProblem(err) {
		return r, fmt.Sprintf("judge %s cannot run on runtime %q: %v", j.ID, j.Code.Runtime, err), nil
	}
	if err != nil {
		return r, "", err
	}
	r.Driver, r.Images = pl.driver, pl.remote
	return r, "", nil
}
