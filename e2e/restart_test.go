package e2e

import (
	"syscall"
	"testing"
	"time"

	"svc/internal/testing/testwait"
)

// TestDevKeepsDataAfterKill: records written through the API of `svc dev`
// are all there after the process is killed with SIGKILL and started again
// on the same data dir, and an API key minted before the kill still works.
func TestDevKeepsDataAfterKill(t *testing.T) {
	dir := t.TempDir()
	first := start(t, devEnv(dir), true, "dev")

	var ws map[string]any
	if code := call(t, "POST", first.URL+"/workspaces", map[string]any{"id": "acme", "name": "Acme"}, &ws); code != 201 {
		t.Fatalf("POST /workspaces = %d %v, want 201", code, ws)
	}
	var key struct {
		APIKey string `json:"apiKey"`
		ID     string `json:"id"`
	}
	if code := call(t, "POST", first.URL+"/keys", map[string]any{"label": "ci", "scopes": []string{"read"}}, &key, "x-svc-workspace", "acme"); code != 201 || key.APIKey == "" {
		t.Fatalf("POST /keys = %d %+v, want 201 with apiKey", code, key)
	}

	first.signal(syscall.SIGKILL)
	first.wait(time.Minute)

	second := start(t, devEnv(dir), true, "dev")
	testwait.Until(t, 30*time.Second, "/readyz 200 after restart", func() bool { return call(t, "GET", second.URL+"/readyz", nil, nil) == 200 })

	var list []map[string]any
	if code := call(t, "GET", second.URL+"/workspaces", nil, &list); code != 200 {
		t.Fatalf("GET /workspaces = %d", code)
	}
	found := false
	for _, w := range list {
		if w["id"] == "acme" {
			found = true
		}
	}
	if !found {
		t.Fatalf("workspace acme missing after restart: %v", list)
	}
	var me map[string]any
	if code := call(t, "GET", second.URL+"/me", nil, &me, "Authorization", "Bearer "+key.APIKey); code != 200 {
		t.Fatalf("GET /me with the key minted before the kill = %d %v", code, me)
	}
	if me["workspace"] != "acme" || me["via"] != "api-key" {
		t.Fatalf("GET /me = %v, want workspace acme via api-key", me)
	}
}
