package orchestration_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"svc/internal/orchestration"
	"svc/internal/platform/derrors"
)

// closedAddr returns a loopback address on which nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func TestDialFailsNamingTheSetting(t *testing.T) {
	addr := closedAddr(t)
	tests := []struct {
		name     string
		hostPort string
		wantErr  error
		wantText string
	}{
		{"empty address", "", derrors.ErrInvalid, "TEMPORAL_ADDRESS is empty"},
		{"nothing listening", addr, derrors.ErrUnavailable, "TEMPORAL_ADDRESS=" + addr + ": cannot reach Temporal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A short deadline keeps the test quick; Dial's own bound is DialTimeout.
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			c, err := orchestration.Dial(ctx, orchestration.ClientOptions{
				HostPort: tt.hostPort,
				Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
			})
			if err == nil {
				c.Close()
				t.Fatalf("Dial(%q) succeeded, want an error", tt.hostPort)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Dial(%q) = %v, want errors.Is %v", tt.hostPort, err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), tt.wantText) {
				t.Errorf("Dial(%q) error = %q, want prefix %q", tt.hostPort, err, tt.wantText)
			}
			if testing.Verbose() {
				t.Log(err)
			}
		})
	}
}
