package devserver

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
	"go.uber.org/zap/zapcore"
)

// serverLogger routes the embedded server's logs into the service's slog
// logger. Debug and Info are dropped: the server writes many lines a second
// at those levels about its own services and task queues, none of which an
// svc user can act on. Warnings and errors pass, except while stopping (see
// quietDown) and the few in benign.
type serverLogger struct {
	l *slog.Logger
	// stopping is shared by every logger derived with With.
	stopping *atomic.Bool
}

// benign are warnings the embedded server logs on every start although
// nothing is wrong for svc; they go to Debug.
var benign = map[string]bool{
	// svc does not use Nexus, so the frontend has no HTTP port.
	"HTTP API port has not been set. Nexus HTTP endpoints will not be available. To enable Nexus, follow these instructions: https://github.com/temporalio/temporal/blob/main/docs/architecture/nexus.md#enabling-nexus.": true,
}

var (
	_ log.Logger     = serverLogger{}
	_ log.WithLogger = serverLogger{}
)

func newServerLogger(l *slog.Logger) serverLogger {
	return serverLogger{l: l.With("component", "temporal-server"), stopping: new(atomic.Bool)}
}

// quietDown sends every later line to Debug. A stopping server's internal
// workers and clients warn about each connection its own services close,
// about ten lines on every clean shutdown that report nothing wrong.
func (s serverLogger) quietDown() { s.stopping.Store(true) }

// fatalError is what Panic and Fatal panic with. The server calls Fatal
// when it cannot go on (for example a port it cannot bind) and never expects
// it to return; Start recovers it into an error instead of letting it exit
// the whole process, as the server's own zap logger would.
type fatalError struct {
	msg string
	err error // the first error among the tags, so errors.Is sees the cause
}

func (e fatalError) Error() string { return "temporal server: " + e.msg }
func (e fatalError) Unwrap() error { return e.err }

func newFatalError(msg string, tags []tag.Tag) fatalError {
	fe := fatalError{msg: msg + tagText(tags)}
	for _, t := range tags {
		if err, ok := tagValue(t).(error); ok {
			fe.err = err
			break
		}
	}
	return fe
}

// catchFatal runs f and turns a Fatal or Panic logged during it into an error.
func catchFatal(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			fe, ok := r.(fatalError)
			if !ok {
				panic(r)
			}
			err = fe
		}
	}()
	return f()
}

func (s serverLogger) Debug(string, ...tag.Tag) {}
func (s serverLogger) Info(string, ...tag.Tag)  {}

func (s serverLogger) Warn(msg string, tags ...tag.Tag)   { s.log(slog.LevelWarn, msg, tags) }
func (s serverLogger) Error(msg string, tags ...tag.Tag)  { s.log(slog.LevelError, msg, tags) }
func (s serverLogger) DPanic(msg string, tags ...tag.Tag) { s.log(slog.LevelError, msg, tags) }

func (s serverLogger) Panic(msg string, tags ...tag.Tag) {
	s.log(slog.LevelError, msg, tags)
	panic(newFatalError(msg, tags))
}

func (s serverLogger) Fatal(msg string, tags ...tag.Tag) {
	s.log(slog.LevelError, msg, tags)
	panic(newFatalError(msg, tags))
}

// With returns a logger that adds tags to every line.
func (s serverLogger) With(tags ...tag.Tag) log.Logger {
	return serverLogger{l: s.l.With(attrs(tags)...), stopping: s.stopping}
}

func (s serverLogger) log(level slog.Level, msg string, tags []tag.Tag) {
	// No request context reaches a logger call inside the server.
	ctx := context.Background()
	if s.stopping.Load() || benign[msg] {
		level = slog.LevelDebug
	}
	if !s.l.Enabled(ctx, level) {
		return
	}
	s.l.Log(ctx, level, msg, attrs(tags)...)
}

func attrs(tags []tag.Tag) []any {
	out := make([]any, 0, len(tags))
	for _, t := range tags {
		out = append(out, slog.Any(t.Key(), tagValue(t)))
	}
	return out
}

// tagValue keeps an error an error (tag.Value would flatten a zap error
// field to one of its several encoded keys).
func tagValue(t tag.Tag) any {
	if zt, ok := t.(tag.ZapTag); ok {
		if f := zt.Field(); f.Type == zapcore.ErrorType {
			if err, ok := f.Interface.(error); ok {
				return err
			}
		}
	}
	return t.Value()
}

// tagText renders tags for a fatal error's message, which is all a caller
// of Start sees of it.
func tagText(tags []tag.Tag) string {
	var s string
	for _, t := range tags {
		s += fmt.Sprintf(" %s=%v", t.Key(), tagValue(t))
	}
	return s
}
