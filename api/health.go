package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/platform/derrors"
)

// Checker is one dependency that /readyz probes, such as "database" or "temporal".
type Checker interface {
	Name() string
	Check(ctx context.Context) error
}

// defaultCheckTimeout bounds each readiness check, so that a hung
// dependency turns /readyz into a prompt 503 instead of a hung prober.
const defaultCheckTimeout = 2 * time.Second

// Check results as /readyz reports them. Only these words reach the client:
// the check's own error (a connection string, a host) stays in the log.
const (
	checkOK          = "ok"
	checkUnreachable = "unreachable"
	checkTimeout     = "timeout"
)

func (s *Server) healthRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/healthz", Action: auth.Public,
			Summary: "Liveness: the process is up and serving HTTP", Handler: s.healthz},
		{Method: http.MethodGet, Path: "/readyz", Action: auth.Public,
			Summary: "Readiness: the database and Temporal answer", Handler: s.readyz},
	}
}

// healthz answers as long as the process serves HTTP; it checks nothing
// else, so that a slow database never gets a live process restarted.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]bool{"ok": true})
}

// readyResponse is the body of a ready /readyz.
type readyResponse struct {
	OK     bool              `json:"ok"`
	Checks map[string]string `json:"checks"`
}

// readyz runs every checker at once, each under its own deadline, and
// answers 503 naming the dependencies that did not answer.
func (s *Server) readyz(c echo.Context) error {
	ctx := c.Request().Context()
	results := make(map[string]string, len(s.checkers))
	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		failed []string
	)
	for _, ch := range s.checkers {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, s.checkTimeout)
			defer cancel()
			err := ch.Check(cctx)
			result := checkOK
			if err != nil {
				result = checkUnreachable
				if errors.Is(err, context.DeadlineExceeded) || cctx.Err() != nil {
					result = checkTimeout
				}
				s.logger.LogAttrs(ctx, slog.LevelWarn, "readiness check failed",
					slog.String("request_id", RequestID(ctx)),
					slog.String("check", ch.Name()),
					slog.String("error", err.Error()))
			}
			mu.Lock()
			defer mu.Unlock()
			results[ch.Name()] = result
			if err != nil {
				failed = append(failed, ch.Name()+" "+result)
			}
		})
	}
	wg.Wait()

	if len(failed) > 0 {
		sort.Strings(failed)
		return WithDetails(
			derrors.Unavailablef("not ready: %s; details.checks has every dependency", strings.Join(failed, ", ")),
			map[string]any{"checks": results})
	}
	return c.JSON(http.StatusOK, readyResponse{OK: true, Checks: results})
}
