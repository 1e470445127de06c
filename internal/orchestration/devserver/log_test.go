package devserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/server/common/log/tag"
)

func TestServerLoggerLevels(t *testing.T) {
	var buf bytes.Buffer
	l := newServerLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	nexus := ""
	for msg := range benign {
		nexus = msg
	}

	l.Debug("debug dropped")
	l.Info("info dropped")
	l.Warn("a warning", tag.NewStringTag("wf-id", "w1"))
	l.With(tag.NewStringTag("service", "history")).Error("an error", tag.Error(errors.New("boom")))
	l.Warn(nexus)
	l.quietDown()
	l.Warn("warning while stopping")

	type line struct {
		Level, Msg, Component string
		WfID                  string `json:"wf-id"`
		Service               string
		Error                 string
	}
	var got []line
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var ln line
		if err := dec.Decode(&ln); err != nil {
			t.Fatal(err)
		}
		got = append(got, ln)
	}
	const c = "temporal-server"
	want := []line{
		{Level: "WARN", Msg: "a warning", Component: c, WfID: "w1"},
		{Level: "ERROR", Msg: "an error", Component: c, Service: "history", Error: "boom"},
		{Level: "DEBUG", Msg: nexus, Component: c},
		{Level: "DEBUG", Msg: "warning while stopping", Component: c},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("logged lines (-want +got):\n%s", diff)
	}
}

func TestCatchFatal(t *testing.T) {
	l := newServerLogger(slog.New(slog.DiscardHandler))
	cause := fmt.Errorf("listen tcp 127.0.0.1:7233: %w", syscall.EADDRINUSE)
	tests := []struct {
		name    string
		f       func() error
		wantErr error
	}{
		{"returns", func() error { return nil }, nil},
		{"fatal with an error tag", func() error { l.Fatal("Failed to start gRPC listener", tag.Error(cause)); return nil }, syscall.EADDRINUSE},
		{"panic", func() error { l.Panic("bad state"); return nil }, fatalError{msg: "bad state"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := catchFatal(tt.f)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("catchFatal() = %v, want errors.Is %v", err, tt.wantErr)
			}
		})
	}
}
