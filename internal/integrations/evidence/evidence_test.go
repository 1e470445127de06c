package evidence

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"svc/internal/domain/eval"
	"svc/internal/domain/judge"
	"svc/internal/domain/registry"
	"svc/internal/platform/netguard"
)

// guard admits loopback, as SVC_WEBHOOK_ALLOW=127.0.0.1 does.
func guard(t *testing.T, allow string) *netguard.Guard {
	t.Helper()
	g, err := netguard.New(allow, netguard.Names{Setting: "SVC_WEBHOOK_ALLOW", Field: "ref", Target: "artifact server"})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// artifacts serves /notes.md, /big.txt (over 1 MB), /shot.png and a 404.
func artifacts(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/notes.md":
			_, _ = w.Write([]byte("# Notes\nthe sum is 391"))
		case "/big.txt":
			_, _ = w.Write([]byte(strings.Repeat("é", MaxArtifact))) // 2 MB
		case "/shot.png":
			_, _ = w.Write([]byte("\x89PNG\r\n\x1a\nfake"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestBind(t *testing.T) {
	srv := artifacts(t)
	ev := &eval.Evidence{Artifacts: []eval.Artifact{
		{Name: "notes.md", Ref: srv.URL + "/notes.md", MediaType: "text/markdown"},
		{Name: "log", Role: "build_log", Ref: srv.URL + "/big.txt", MediaType: "text/plain; charset=utf-8"},
		{Name: "shot", Ref: srv.URL + "/shot.png", MediaType: "image/png"},
		{Name: "gone", Ref: srv.URL + "/gone", MediaType: "text/plain"},
		{Name: "local", Ref: "file:///etc/passwd"},
	}}
	f := Fetcher{Guard: guard(t, "127.0.0.1")}
	slots := []string{"notes_md", "build_log", "shot", "gone", "local", "unmatched", "given"}
	got, warnings := f.Bind(t.Context(), slots, map[string]string{"given": "pasted"}, ev)
	if got["notes_md"] != "# Notes\nthe sum is 391" {
		t.Errorf("{notes_md} = %q", got["notes_md"])
	}
	if got["given"] != "pasted" {
		t.Errorf("a given slot was replaced: %q", got["given"])
	}
	if n := len(got["build_log"]); n > MaxArtifact+2 || n < MaxArtifact-4 || !strings.HasPrefix(got["build_log"], "éé") {
		t.Errorf("{build_log} holds %d bytes, want about 1 MB", n)
	}
	for _, name := range []string{"shot", "gone", "local", "unmatched"} {
		if _, ok := got[name]; ok {
			t.Errorf("{%s} is bound: %q", name, got[name])
		}
	}
	all := strings.Join(warnings, "\n")
	for _, want := range []string{`{build_log}: artifact "log" was cut to 1 MB`, `{shot}: artifact "shot" is image/png, not text`,
		`{gone}: artifact "gone" answered HTTP 404`, `{local}: artifact "local" is not an http(s) URL`} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}

	// Without loopback in the allow list, the guard refuses the fetch.
	got, warnings = Fetcher{Guard: guard(t, "")}.Bind(t.Context(), []string{"notes_md"}, nil, ev)
	if _, ok := got["notes_md"]; ok || len(warnings) != 1 || !strings.Contains(warnings[0], "refused by the outbound address guard") {
		t.Errorf("unguarded loopback fetch: slots %v, warnings %v", got, warnings)
	}
}

// Resolve binds a custom template's slots and fetches a screenshotRef
// when the judge's inputs name the screenshot; Render then sends it as an
// image part and reports it.
func TestResolveScreenshotAndSlots(t *testing.T) {
	srv := artifacts(t)
	eff := judge.Effective{PromptTemplate: "Notes: {notes_md}\n{verdict_instruction}", Inputs: []string{registry.InputScreenshot}}
	ev := judge.Evidence{
		Snapshot: &eval.Snapshot{Kind: "browser", ScreenshotRef: srv.URL + "/shot.png"},
		Evidence: &eval.Evidence{Artifacts: []eval.Artifact{{Name: "notes.md", Ref: srv.URL + "/notes.md"}}},
	}
	got, warnings := Fetcher{Guard: guard(t, "127.0.0.1")}.Resolve(t.Context(), eff, ev)
	if len(warnings) != 0 {
		t.Errorf("warnings: %v", warnings)
	}
	if ev.Snapshot.Screenshot != "" {
		t.Error("Resolve modified its input's snapshot")
	}
	r := judge.Render(eff, got)
	if !strings.HasPrefix(r.Prompt, "Notes: # Notes\nthe sum is 391\n") {
		t.Errorf("prompt = %q", r.Prompt)
	}
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nfake"))
	if len(r.Images) != 1 || r.Images[0] != want {
		t.Errorf("images = %v, want the fetched screenshot", r.Images)
	}
	var shot *judge.Slot
	for i := range r.Slots {
		if r.Slots[i].Name == "screenshot" {
			shot = &r.Slots[i]
		}
	}
	if shot == nil || !shot.Present || !shot.Attachment {
		t.Errorf("the screenshot slot is %+v", shot)
	}
}
