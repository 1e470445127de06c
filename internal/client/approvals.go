package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"svc/internal/domain/approvalwire"
)

// Approvals (docs/approvals.md): an agent's parked call, decided by a
// person. The bodies are the service's own (internal/domain/approvalwire).

func approvalPath(id string) string { return "/approvals/" + url.PathEscape(id) }

// ListApprovals is GET /approvals, newest first, of one status when status
// is not empty.
func (c *Client) ListApprovals(ctx context.Context, status string) ([]approvalwire.Approval, json.RawMessage, error) {
	path := "/approvals"
	if status != "" {
		path += "?" + url.Values{"status": {status}}.Encode()
	}
	return call[[]approvalwire.Approval](ctx, c, http.MethodGet, path, nil)
}

// Approval is GET /approvals/:id.
func (c *Client) Approval(ctx context.Context, id string) (approvalwire.Approval, json.RawMessage, error) {
	return call[approvalwire.Approval](ctx, c, http.MethodGet, approvalPath(id), nil)
}

// DecideApproval is POST /approvals/:id/decide: settles a pending approval
// once (a second decision is 409).
func (c *Client) DecideApproval(ctx context.Context, id string, req approvalwire.DecideRequest) (approvalwire.Approval, json.RawMessage, error) {
	return call[approvalwire.Approval](ctx, c, http.MethodPost, approvalPath(id)+"/decide", req)
}

// ApprovalPolicies is GET /approval-policies.
func (c *Client) ApprovalPolicies(ctx context.Context) (approvalwire.Policies, json.RawMessage, error) {
	return call[approvalwire.Policies](ctx, c, http.MethodGet, "/approval-policies", nil)
}

// PutApprovalPolicies is PUT /approval-policies with doc, the body as the
// caller wrote it ({policies, defaultOff}), sent unchanged so the service
// judges every field.
func (c *Client) PutApprovalPolicies(ctx context.Context, doc json.RawMessage) (approvalwire.Policies, json.RawMessage, error) {
	return call[approvalwire.Policies](ctx, c, http.MethodPut, "/approval-policies", doc)
}
