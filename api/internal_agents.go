package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/service/notifications"
)

// The internal routes of an external agent runtime (spec §4.9): the
// operator token (x-internal-token) authenticates the runtime; the body
// names the workspace and member. Handlers call package notifications.

func (s *Server) internalAgentRoutes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/internal/agent-run-events", Action: auth.Internal,
			Summary: "Operator: an external agent run's event; awaiting_approval parks the action and notifies the run's creator", Handler: s.agentRunEvent},
		{Method: http.MethodPost, Path: "/internal/notifications/approval-clear", Action: auth.Internal,
			Summary: "Operator: delete an agent_approval_requested notification", Handler: s.approvalClear},
	}
}

// agentRunEvent answers 201 when the report parked a new approval and 200
// when it repeated one already parked.
func (s *Server) agentRunEvent(c echo.Context) error {
	var req notifications.AgentRunEvent
	if err := Bind(c, &req); err != nil {
		return err
	}
	res, err := s.notifications.AgentRunEvent(c.Request().Context(), req)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	// The parked call's principal is never shown.
	res.Approval.Principal = nil
	return c.JSON(status, res)
}

func (s *Server) approvalClear(c echo.Context) error {
	var req notifications.ApprovalClearRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	id, err := s.notifications.ApprovalClear(c.Request().Context(), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"cleared": id})
}
