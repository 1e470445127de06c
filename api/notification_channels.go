package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/service/notifications"
)

// Notification channels (issue 33, beyond the spec): a member's own
// delivery of their notifications to a signed webhook or a Slack-compatible
// URL. Self-scoped like /notifications: no role gate, another member's
// channel is 404. Handlers call package notifications.

func (s *Server) notificationChannelRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/notification-channels", Action: auth.Authenticated,
			Summary: "List my notification delivery channels", Handler: s.listNotificationChannels},
		{Method: http.MethodPost, Path: "/notification-channels", Action: auth.Authenticated,
			Summary: "Subscribe a webhook or Slack channel to kinds of my notifications; a webhook's secret is shown once", Handler: s.createNotificationChannel},
		{Method: http.MethodDelete, Path: "/notification-channels/:id", Action: auth.Authenticated,
			Summary: "Delete one of my notification channels", Handler: s.deleteNotificationChannel},
		{Method: http.MethodPost, Path: "/notification-channels/:id/enable", Action: auth.Authenticated,
			Summary: "Re-enable one of my notification channels after it was disabled for failing", Handler: s.enableNotificationChannel},
	}
}

func (s *Server) listNotificationChannels(c echo.Context) error {
	list, err := s.notifications.ListChannels(c.Request().Context(), principal(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

func (s *Server) createNotificationChannel(c echo.Context) error {
	var req notifications.CreateChannelRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	ch, err := s.notifications.CreateChannel(c.Request().Context(), principal(c), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, ch)
}

func (s *Server) deleteNotificationChannel(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	if err := s.notifications.DeleteChannel(c.Request().Context(), principal(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) enableNotificationChannel(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	ch, err := s.notifications.EnableChannel(c.Request().Context(), principal(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ch)
}
