package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"svc/drivers"
	"svc/internal/domain/eval"
	"svc/internal/domain/modelproxy"
	"svc/store"
)

// harnessProxyPath is the model proxy's API root for harness jobs below
// the control plane's address (the API serves
// /model-proxy/v1/chat/completions; /judge-proxy/v1 takes the same
// tokens).
const harnessProxyPath = "/model-proxy/v1"

// harnessTokenSlack is how long a harness's proxy token outlives the
// job's timeout: the time the job may wait for an admission slot or a
// runner's lease, and the driver's own start and stop. The token is
// revoked as soon as the attempt ends; the expiry is the bound when the
// worker dies first.
const harnessTokenSlack = time.Hour

// harnessModelURL is the proxy's API root as a harness job reaches it:
// the judges' proxy address (modelProxyURL) with its path made the
// harness one; "" when the worker knows no address for jobs.
func (a *Activities) harnessModelURL() string {
	u := a.modelProxyURL()
	if u == "" {
		return ""
	}
	if base, ok := strings.CutSuffix(u, proxyPath); ok {
		return base + harnessProxyPath
	}
	return u // an operator's own proxy root, which takes either token
}

// harnessModel is the model access given to one attempt's job: the
// token to revoke and meter when the attempt ends; zero when none.
type harnessModel struct {
	token     string
	workspace string
	runID     string
}

// harnessModelAccess gives job the model binding its harness declares
// (plan.model), for this attempt only (spec §7): the binding and key are
// checked, a run-scoped proxy token is minted and put in the job's
// secrets file (SVC_MODEL_TOKEN), and the proxy's address and the
// binding's name in its environment. Where the binding or its key cannot
// be resolved, a self-hosted runner's job ships without a token and a
// managed target's case fails saying what to set. Either way the run
// records what its job was given (EventHarnessModelAccess).
func (a *Activities) harnessModelAccess(ctx context.Context, run eval.Run, plan Plan, job drivers.Job) (drivers.Job, harnessModel, error) {
	binding := plan.model
	if binding == "" {
		return job, harnessModel{}, nil
	}
	var missing string
	switch url := a.harnessModelURL(); {
	case a.Models == nil:
		missing = "this worker does not configure model access"
	case url == "":
		missing = "this worker does not know the control plane's address for jobs; an operator sets SVC_PUBLIC_URL (or SVC_HARNESS_OTLP_ENDPOINT)"
	default:
		m, err := a.Models.Check(ctx, run.Tenant, binding)
		if err != nil {
			return job, harnessModel{}, err
		}
		missing = m
	}
	if missing != "" {
		if err := a.recordModelAccess(ctx, run, plan, false, missing); err != nil {
			return job, harnessModel{}, err
		}
		if plan.placement.selfReported {
			// A self-hosted runner's job ships without a key (spec §7).
			return job, harnessModel{}, nil
		}
		return job, harnessModel{}, caseErr("harness %s calls model binding %q (model.ref), and a job on a managed target cannot start without its key: %s", plan.Harness, binding, missing)
	}
	timeout := job.Timeout
	if timeout <= 0 {
		timeout = DefaultCaseTimeout
	}
	expires := a.now().Add(timeout + harnessTokenSlack)
	token, err := a.Models.MintProxyToken(ctx, modelproxy.Grant{Workspace: run.Tenant, Model: binding, Harness: plan.Harness.String(),
		Attempt: run.Attempts, RunID: run.ID, ExpiresAt: expires})
	if err != nil {
		return job, harnessModel{}, err
	}
	access := harnessModel{token: token, workspace: run.Tenant, runID: run.ID}
	if err := a.recordModelAccess(ctx, run, plan, true, ""); err != nil {
		access.end(ctx, a)
		return job, harnessModel{}, err
	}
	job.Env = maps.Clone(job.Env)
	if job.Env == nil {
		job.Env = map[string]string{}
	}
	job.Env[modelproxy.EnvBaseURL] = a.harnessModelURL()
	job.Env[modelproxy.EnvModel] = binding
	job.Secrets = maps.Clone(job.Secrets)
	if job.Secrets == nil {
		job.Secrets = map[string]string{}
	}
	job.Secrets[modelproxy.SecretToken] = token
	return job, access, nil
}

// end revokes the attempt's token and returns what its calls cost. A
// revoke that fails is logged: the token expires by itself.
func (h harnessModel) end(ctx context.Context, a *Activities) modelproxy.Usage {
	if h.token == "" {
		return modelproxy.Usage{}
	}
	ctx, cancel := detached(ctx, tokenCallTimeout)
	defer cancel()
	if err := a.Models.RevokeProxyToken(ctx, h.token); err != nil {
		a.logger().Warn("revoking a harness job's model proxy token; it expires by itself", append(activityAttrs(ctx),
			"workspace", h.workspace, "run", h.runID, "error", err)...)
	}
	u, err := a.Models.ProxyUsage(ctx, h.token)
	if err != nil {
		a.logger().Warn("reading the cost of a harness job's model calls; the run's usage.costUsd misses it", append(activityAttrs(ctx),
			"workspace", h.workspace, "run", h.runID, "error", err)...)
	}
	return u
}

// recordModelAccess appends EventHarnessModelAccess for this attempt of
// run: the binding, whether the job was given a token, and why not.
func (a *Activities) recordModelAccess(ctx context.Context, run eval.Run, plan Plan, granted bool, reason string) error {
	data := map[string]any{"runId": run.ID, "attempt": run.Attempts, "harness": plan.Harness.String(), "model": plan.model,
		"granted": granted, "selfHosted": plan.placement.selfReported}
	if reason != "" {
		data["reason"] = reason
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	_, err = a.Store.AppendEvent(ctx, store.Event{ID: fmt.Sprintf("%s:%s:%d", modelproxy.EventHarnessModelAccess, run.ID, run.Attempts),
		Workspace: run.Tenant, Type: modelproxy.EventHarnessModelAccess, Subject: "run:" + run.ID, Actor: run.CreatedBy, Data: raw, CreatedAt: a.now()})
	return err
}
