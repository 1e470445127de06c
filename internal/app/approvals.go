package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"svc/api"
	"svc/internal/domain/flows"
	"svc/internal/platform/config"
	"svc/internal/platform/derrors"
	"svc/internal/service/approvals"
	"svc/store"
)

// localAPIs are the API servers of this process by their store: under svc
// dev (and a test stack) the worker runs an approved call in process
// rather than over HTTP.
var localAPIs sync.Map // store.Store -> *api.Server

// approvalRunner is activities.ApprovalRunner: an expiry is settled in the
// store; an approved call runs through the API (in process when the API
// shares the process, else POST /internal/approvals/:id/execute under
// SVC_PUBLIC_URL with SVC_INTERNAL_TOKEN).
type approvalRunner struct {
	svc   *approvals.Service
	store store.Store
	url   string // the API's root; "" when unknown
	token string
	http  *http.Client
}

func newApprovalRunner(cfg config.Config, st store.Store, role string) approvalRunner {
	u := strings.TrimSuffix(ModelProxyURL(cfg, role), "/judge-proxy/v1")
	return approvalRunner{svc: approvals.New(approvals.Options{Store: st}), store: st, url: u, token: cfg.InternalToken,
		http: &http.Client{Timeout: 2 * time.Minute}}
}

func (r approvalRunner) ExpireApproval(ctx context.Context, workspace, id string) (flows.ApprovalStatus, error) {
	a, err := r.svc.Expire(ctx, workspace, id)
	return flows.ApprovalStatus(a.Status), err
}

func (r approvalRunner) ExecuteApproval(ctx context.Context, workspace, id string) (flows.ApprovalExecuted, error) {
	if v, ok := localAPIs.Load(r.store); ok {
		return v.(*api.Server).ExecuteApproval(ctx, workspace, id)
	}
	if r.url == "" || r.token == "" {
		// Retried: the API of this process may not be up yet (svc dev at
		// start), or the operator sets the two and restarts the worker.
		return flows.ApprovalExecuted{}, fmt.Errorf("approval %s is approved but this worker cannot reach the API to run it: set SVC_PUBLIC_URL and SVC_INTERNAL_TOKEN", id)
	}
	body, _ := json.Marshal(map[string]string{"workspace": workspace})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url+"/internal/approvals/"+id+"/execute", bytes.NewReader(body))
	if err != nil {
		return flows.ApprovalExecuted{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-internal-token", r.token)
	res, err := r.http.Do(req)
	if err != nil {
		return flows.ApprovalExecuted{}, fmt.Errorf("running approval %s through the API: %w", id, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	switch {
	case res.StatusCode == http.StatusOK:
		var out flows.ApprovalExecuted
		return out, json.Unmarshal(b, &out)
	case res.StatusCode == http.StatusForbidden:
		return flows.ApprovalExecuted{}, derrors.Forbiddenf("approval %s: %s", id, b)
	case res.StatusCode == http.StatusNotFound:
		return flows.ApprovalExecuted{}, derrors.NotFoundf("approval %s: %s", id, b)
	}
	return flows.ApprovalExecuted{}, fmt.Errorf("running approval %s through the API: %s: %s", id, res.Status, b)
}
