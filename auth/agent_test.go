package auth_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/platform/derrors"
)

func TestDeclaredAgent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    *eval.Agent
		wantErr string // the header the refusal names
	}{
		{name: "none"},
		{name: "all", headers: map[string]string{auth.AgentIDHeader: "claude-code", auth.AgentNameHeader: "Claude Code", auth.ConversationIDHeader: "conv:42"},
			want: &eval.Agent{ID: "claude-code", Name: "Claude Code", Conversation: "conv:42"}},
		{name: "id only", headers: map[string]string{auth.AgentIDHeader: "bot"}, want: &eval.Agent{ID: "bot"}},
		{name: "name without id", headers: map[string]string{auth.AgentNameHeader: "x"}, wantErr: auth.AgentIDHeader},
		{name: "colon in id", headers: map[string]string{auth.AgentIDHeader: "a:b"}, wantErr: auth.AgentIDHeader},
		{name: "long id", headers: map[string]string{auth.AgentIDHeader: strings.Repeat("a", 129)}, wantErr: auth.AgentIDHeader},
		{name: "control in name", headers: map[string]string{auth.AgentIDHeader: "a", auth.AgentNameHeader: "x\x01y"}, wantErr: auth.AgentNameHeader},
		{name: "space in conversation", headers: map[string]string{auth.AgentIDHeader: "a", auth.ConversationIDHeader: "c d"}, wantErr: auth.ConversationIDHeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.headers {
				h.Set(k, v)
			}
			got, err := auth.DeclaredAgent(h)
			if tc.wantErr != "" {
				if !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrInvalid naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("agent (-want +got):\n%s", d)
			}
		})
	}
}

func TestMCPClientAgent(t *testing.T) {
	got := auth.MCPClientAgent("My Agent", "", "SESS1")
	want := &eval.Agent{ID: "My-Agent", Name: "My Agent", Conversation: "SESS1"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("agent (-want +got):\n%s", d)
	}
	if got := auth.MCPClientAgent("c", "Client C", ""); got.Name != "Client C" {
		t.Errorf("name = %q, want the title", got.Name)
	}
	if got := auth.MCPClientAgent("  ", "", "s"); got != nil {
		t.Errorf("blank client name = %+v, want nil", got)
	}
}
