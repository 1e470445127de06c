package activities

import (
	"context"
	"fmt"
	"strings"
	"time"

	"svc/auth"
	"svc/eval"
	"svc/judges"
	"svc/models"
	"svc/registry"
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
	_, missing, err := a.Models.Resolve(ctx, who.Workspace, ref)
	if err != nil {
		return nil, err
	}
	if missing != "" {
		return judges.Skip(j.ID, missing), nil
	}
	// The token outlives the judge's timeout by a margin for the driver's
	// own start and stop; it is revoked as soon as the judge ends.
	expires := a.now().Add(r.Timeout(j.Code) + time.Minute)
	token, err := a.Models.MintProxyToken(ctx, models.ProxyGrant{Workspace: who.Workspace, Model: ref, JudgeID: j.ID, RunID: runID, ExpiresAt: expires})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := a.Models.RevokeProxyToken(context.WithoutCancel(ctx), token); err != nil {
			a.logger().Warn("revoking a judge's model proxy token; it expires by itself", append(activityAttrs(ctx),
				"workspace", who.Workspace, "run", runID, "judge", j.ID, "expiresAt", expires, "error", err)...)
		}
	}()
	env := make(map[string]string, len(r.Env)+3)
	for k, v := range r.Env {
		env[k] = v
	}
	env[EnvModelBaseURL], env[EnvModelToken], env[EnvModelName] = url, token, ref
	r.Env = env
	return r.Run(ctx, j, in, jobID)
}
