package probe

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestClean(t *testing.T) {
	got := Clean("bad token\n  s3cr3t at\thost "+strings.Repeat("x", 600), "s3cr3t", "")
	if strings.Contains(got, "s3cr3t") || strings.ContainsAny(got, "\n\t") {
		t.Errorf("Clean left a credential or a line break: %q", got)
	}
	if len(got) > maxDetail+3 {
		t.Errorf("Clean kept %d bytes, want at most %d", len(got), maxDetail+3)
	}
}

func TestLimitAndGaveUp(t *testing.T) {
	parent, cancelParent := context.WithTimeout(context.Background(), time.Hour)
	defer cancelParent()
	ctx, cancel, limit := Limit(parent, WithTimeout(time.Millisecond))
	defer cancel()
	if limit != time.Millisecond {
		t.Errorf("limit = %v, want the 1ms cap", limit)
	}
	<-ctx.Done()
	if why, ok := GaveUp(ctx, limit); !ok || !strings.Contains(why, "no answer within 1ms") {
		t.Errorf("GaveUp = %q, %v", why, ok)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	if _, _, limit := Limit(short); limit > 50*time.Millisecond {
		t.Errorf("limit = %v, want the caller's earlier deadline", limit)
	}
	if _, ok := GaveUp(context.Background(), Timeout); ok {
		t.Error("GaveUp on a live context")
	}
}
