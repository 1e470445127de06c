package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/gate"
	"svc/internal/domain/manifest"
	"svc/internal/domain/registry"
	"svc/internal/domain/runnerwire"
	"svc/internal/domain/scorecardwire"
)

// call is one request whose answer decodes into a T: the record, and the
// body as the service sent it.
func call[T any](ctx context.Context, c *Client, method, path string, body any) (T, json.RawMessage, error) {
	var v T // fresh: decoding does not clear absent fields
	raw, err := c.Do(ctx, method, path, body, &v)
	return v, raw, err
}

// The registries (datasets, harnesses, judges): collection is the
// registry's path, "/datasets", "/harnesses" or "/judges".

// Register is POST <collection>: registers a version (idempotent for the
// same content).
func (c *Client) Register(ctx context.Context, collection string, doc any) (registry.VersionInfo, json.RawMessage, error) {
	return call[registry.VersionInfo](ctx, c, http.MethodPost, collection, doc)
}

// Validation is the answer of POST <collection>/validate: a dry run of a
// registration.
type Validation struct {
	Valid     bool               `json:"valid"`
	Kind      string             `json:"kind"`
	ID        string             `json:"id"`
	Version   string             `json:"version"`
	Digest    string             `json:"digest"`
	Problems  []registry.Problem `json:"problems"`
	Identical bool               `json:"identical"`
	Conflict  bool               `json:"conflict"`
	Stored    string             `json:"storedDigest"`
}

// Validate is POST <collection>/validate.
func (c *Client) Validate(ctx context.Context, collection string, doc any) (Validation, json.RawMessage, error) {
	return call[Validation](ctx, c, http.MethodPost, collection+"/validate", doc)
}

// RegistryEntry is one entry of a registry's list.
type RegistryEntry struct {
	Owner    string   `json:"owner"`
	ID       string   `json:"id"`
	TeamID   string   `json:"teamId"`
	Versions []string `json:"versions"`
	Latest   string   `json:"latest"`
}

// ListRegistry is GET <collection>.
func (c *Client) ListRegistry(ctx context.Context, collection string) ([]RegistryEntry, json.RawMessage, error) {
	return call[[]RegistryEntry](ctx, c, http.MethodGet, collection, nil)
}

// DatasetDiff is GET /datasets/:id/diff between two versions (each may be
// "latest").
func (c *Client) DatasetDiff(ctx context.Context, id, base, candidate string) (registry.DatasetDiff, json.RawMessage, error) {
	q := url.Values{"base": {base}, "candidate": {candidate}}
	return call[registry.DatasetDiff](ctx, c, http.MethodGet, "/datasets/"+url.PathEscape(id)+"/diff?"+q.Encode(), nil)
}

// Scorecards.

func scorecardPath(id string) string { return "/scorecards/" + url.PathEscape(id) }

// SubmitScorecard is POST /scorecards.
func (c *Client) SubmitScorecard(ctx context.Context, req scorecardwire.SubmitRequest) (eval.Scorecard, json.RawMessage, error) {
	return call[eval.Scorecard](ctx, c, http.MethodPost, "/scorecards", req)
}

// Scorecard is GET /scorecards/:id: the record with its per-case table.
func (c *Client) Scorecard(ctx context.Context, id string) (eval.Scorecard, json.RawMessage, error) {
	return call[eval.Scorecard](ctx, c, http.MethodGet, scorecardPath(id), nil)
}

// ScorecardSummary is GET /scorecards/:id?view=summary: the record
// without its per-case table (a service that does not know the view
// answers 400).
func (c *Client) ScorecardSummary(ctx context.Context, id string) (eval.Scorecard, json.RawMessage, error) {
	return call[eval.Scorecard](ctx, c, http.MethodGet, scorecardPath(id)+"?view=summary", nil)
}

// ScorecardFilter selects the scorecards of a list; empty fields select
// all.
type ScorecardFilter struct {
	Status, DatasetID, HarnessID, Kind, Cursor string
	Limit                                      int
}

// ListScorecards is GET /scorecards, newest first, with the cursor of the
// next page (empty on the last).
func (c *Client) ListScorecards(ctx context.Context, f ScorecardFilter) (list []eval.Scorecard, raw json.RawMessage, next string, err error) {
	q := url.Values{"limit": {strconv.Itoa(f.Limit)}}
	for k, v := range map[string]string{"status": f.Status, "datasetId": f.DatasetID, "harnessId": f.HarnessID, "kind": f.Kind, "cursor": f.Cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	raw, h, err := c.DoHeader(ctx, http.MethodGet, "/scorecards?"+q.Encode(), nil, &list)
	if err != nil {
		return nil, nil, "", err
	}
	return list, raw, h.Get("X-Svc-Next-Cursor"), nil
}

// ScoreScorecard is POST /scorecards/:id/score: a scoring pass of the
// selected judges.
func (c *Client) ScoreScorecard(ctx context.Context, id string, req scorecardwire.ScoreRequest) (eval.Scorecard, json.RawMessage, error) {
	return call[eval.Scorecard](ctx, c, http.MethodPost, scorecardPath(id)+"/score", req)
}

// CancelScorecard is POST /scorecards/:id/cancel.
func (c *Client) CancelScorecard(ctx context.Context, id string) (eval.Scorecard, json.RawMessage, error) {
	return call[eval.Scorecard](ctx, c, http.MethodPost, scorecardPath(id)+"/cancel", nil)
}

// Gate is POST /scorecards/gate.
func (c *Client) Gate(ctx context.Context, req scorecardwire.GateRequest) (gate.Decision, json.RawMessage, error) {
	return call[gate.Decision](ctx, c, http.MethodPost, "/scorecards/gate", req)
}

// ScorecardDiff is GET /scorecards/diff.
func (c *Client) ScorecardDiff(ctx context.Context, baseline, candidate string) (gate.ScorecardDiff, json.RawMessage, error) {
	q := url.Values{"baseline": {baseline}, "candidate": {candidate}}
	return call[gate.ScorecardDiff](ctx, c, http.MethodGet, "/scorecards/diff?"+q.Encode(), nil)
}

// VerifyManifest is POST /scorecards/:id/verify-manifest.
func (c *Client) VerifyManifest(ctx context.Context, id string) (manifest.Verification, json.RawMessage, error) {
	return call[manifest.Verification](ctx, c, http.MethodPost, scorecardPath(id)+"/verify-manifest", nil)
}

// Runs.

func runPath(id string) string { return "/runs/" + url.PathEscape(id) }

// Run is GET /runs/:id.
func (c *Client) Run(ctx context.Context, id string) (eval.Run, json.RawMessage, error) {
	return call[eval.Run](ctx, c, http.MethodGet, runPath(id), nil)
}

// LogPage is one answer of GET /runs/:id/logs.
type LogPage struct {
	RunID  string `json:"runId"`
	Status string `json:"status"`
	Live   bool   `json:"live"`
	Chunks []struct {
		Seq    int64  `json:"seq"`
		Stream string `json:"stream"`
		Data   string `json:"data"`
	} `json:"chunks"`
	LastSeq int64 `json:"lastSeq"`
}

// RunLogs is GET /runs/:id/logs: up to limit chunks after sequence after.
func (c *Client) RunLogs(ctx context.Context, id string, after int64, limit int) (LogPage, json.RawMessage, error) {
	q := url.Values{"after": {strconv.FormatInt(after, 10)}, "limit": {strconv.Itoa(limit)}}
	return call[LogPage](ctx, c, http.MethodGet, runPath(id)+"/logs?"+q.Encode(), nil)
}

// Trajectory is the answer of GET /runs/:id/trajectory: the sealed trace's
// meta and its events, as sent.
type Trajectory struct {
	Meta struct {
		RunID      string     `json:"runId"`
		Source     string     `json:"source"`
		EventCount int        `json:"eventCount"`
		SealedAt   *time.Time `json:"sealedAt"`
	} `json:"meta"`
	Events []json.RawMessage `json:"events"`
}

// Trajectory is GET /runs/:id/trajectory.
func (c *Client) Trajectory(ctx context.Context, id string) (Trajectory, json.RawMessage, error) {
	return call[Trajectory](ctx, c, http.MethodGet, runPath(id)+"/trajectory", nil)
}

// A self-hosted runner's calls (its token is a runner key).

func runnerJobPath(jobID string) string { return "/runner/jobs/" + url.PathEscape(jobID) }

// Lease is POST /runner/lease: a job, or nil when none came within the
// long poll (the service answers no body).
func (c *Client) Lease(ctx context.Context, req runnerwire.LeaseRequest) (*runnerwire.Lease, error) {
	raw, err := c.Do(ctx, http.MethodPost, "/runner/lease", req, nil)
	if err != nil || len(raw) == 0 {
		return nil, err
	}
	var lease runnerwire.Lease
	if err := json.Unmarshal(raw, &lease); err != nil {
		return nil, fmt.Errorf("the lease answer is not the expected JSON: %v", err)
	}
	return &lease, nil
}

// Heartbeat is POST /runner/jobs/:id/heartbeat: renews the lease; the
// reply says whether the job was cancelled.
func (c *Client) Heartbeat(ctx context.Context, jobID string, hb runnerwire.Heartbeat) (runnerwire.HeartbeatReply, error) {
	reply, _, err := call[runnerwire.HeartbeatReply](ctx, c, http.MethodPost, runnerJobPath(jobID)+"/heartbeat", hb)
	return reply, err
}

// PostLogs is POST /runner/jobs/:id/logs: a batch of a running job's output.
func (c *Client) PostLogs(ctx context.Context, jobID string, b runnerwire.LogBatch) error {
	_, err := c.Do(ctx, http.MethodPost, runnerJobPath(jobID)+"/logs", b, nil)
	return err
}

// PostResult is POST /runner/jobs/:id/result.
func (c *Client) PostResult(ctx context.Context, jobID string, done runnerwire.Completion) error {
	_, err := c.Do(ctx, http.MethodPost, runnerJobPath(jobID)+"/result", done, nil)
	return err
}
