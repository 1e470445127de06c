package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/testing/testwait"
	"svc/store"
)

// TestHostileInputsThroughTheBinary is issue 30's findings 7, 8 and 9
// through the real binary: IPv6 addresses that carry a loopback, private
// or metadata IPv4 address are refused wherever a member names an address
// the service will dial; a job that prints its secret in common encodings
// leaves none of them in its run; a runner key opens no route but the
// runner routes; a JSON body nested a thousand levels deep is a 400, not a
// 500.
func TestHostileInputsThroughTheBinary(t *testing.T) {
	dataDir, scripts := t.TempDir(), jobDir(t)
	svc := start(t, devEnv(dataDir, "SVC_LOCAL_ISOLATION=none"), true, "dev")
	h := map[string]any{"id": "h", "version": "1.0.0", "kind": "process", "command": []string{"/bin/true"}}
	if code := call(t, "POST", svc.URL+"/harnesses", h, nil); code != 201 {
		t.Fatalf("POST /harnesses = %d, want 201", code)
	}

	t.Run("embedded IPv4 addresses are refused", func(t *testing.T) {
		for _, host := range []string{
			"[::127.0.0.1]",                          // IPv4-compatible loopback
			"[64:ff9b::7f00:1]",                      // NAT64 loopback
			"[64:ff9b::a9fe:a9fe]",                   // NAT64 cloud metadata
			"[64:ff9b:1::a00:1]",                     // local-use NAT64
			"[2002:a9fe:a9fe::1]",                    // 6to4 metadata
			"[2001:0:4136:e378:8000:63bf:80ff:fffe]", // Teredo, client 127.0.0.1
			"[::ffff:0:a00:1]",                       // IPv4-translated 10.0.0.1
		} {
			base := "http://" + host + ":8080"
			run := map[string]any{"harness": map[string]string{"id": "h", "version": "1.0.0"},
				"case": map[string]any{"id": "c", "task": "t"}, "webhookUrl": base + "/hook"}
			if code, body := send(t, "POST", svc.URL+"/runs", run); code != 400 || !strings.Contains(body, "refuses to call its own network") {
				t.Errorf("POST /runs with webhookUrl %s = %d %s, want 400 refusing it", base, code, body)
			}
			model := map[string]any{"provider": "openai", "baseUrl": base + "/v1", "model": "m", "keySecret": "model-key"}
			if code, body := send(t, "PUT", svc.URL+"/workspace/models/m", model); code != 400 || !strings.Contains(body, "refuses to call its own network") {
				t.Errorf("PUT /workspace/models with baseUrl %s = %d %s, want 400 refusing it", base, code, body)
			}
			source := map[string]any{"kind": "langfuse", "endpoint": base}
			if code, body := send(t, "PUT", svc.URL+"/workspace/trace-sources/s", source); code != 400 || !strings.Contains(body, "refuses to call its own network") {
				t.Errorf("PUT /workspace/trace-sources with endpoint %s = %d %s, want 400 refusing it", base, code, body)
			}
			probe := map[string]any{"id": "p", "version": "1", "kind": "nomad", "addr": base, "image": "x"}
			if code, body := send(t, "POST", svc.URL+"/runtimes/probe", probe); code != 200 || !strings.Contains(body, `"reachable":false`) || !strings.Contains(body, "SVC_PROBE_ALLOW") {
				t.Errorf("POST /runtimes/probe of %s = %d %s, want reachable false, refused by the probe guard", base, code, body)
			}
		}
	})

	t.Run("encoded secrets are masked", func(t *testing.T) {
		const secret = `p@ss/w+rd"<x>&y'z-2049`
		if code := call(t, "PUT", svc.URL+"/secrets/tok", map[string]any{"value": secret}, nil); code != 204 {
			t.Fatalf("PUT /secrets/tok = %d, want 204", code)
		}
		percent := func(s, keep string, lower bool) string {
			var b strings.Builder
			for i := 0; i < len(s); i++ {
				c := s[i]
				if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(keep, c) >= 0 {
					b.WriteByte(c)
				} else if lower {
					fmt.Fprintf(&b, "%%%02x", c)
				} else {
					fmt.Fprintf(&b, "%%%02X", c)
				}
			}
			return b.String()
		}
		jsonText, _ := json.Marshal(secret)
		// The secret 51 bytes into a document: its base64 crosses the
		// line break MIME puts after 76 characters.
		b64 := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", 50) + ":" + secret + ":suffix"))
		forms := map[string]string{
			"python quote":       percent(secret, "_.-~/", false),
			"encodeURI":          percent(secret, "-_.!~*'();/?:@&=+$,#", false),
			"encodeURIComponent": percent(secret, "-_.!~*'()", false),
			"lowercase escapes":  percent(secret, "-_.~", true),
			"query escape":       url.QueryEscape(secret),
			"html":               html.EscapeString(secret),
			"xml named":          strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace(secret),
			"numeric refs":       strings.NewReplacer("/", "&#x2F;", "+", "&#43;", "@", "&#x40;", `"`, "&#34;", "<", "&#60;", ">", "&#x3e;", "&", "&#38;", "'", "&#39;").Replace(secret),
			"json slash":         strings.ReplaceAll(string(jsonText[1:len(jsonText)-1]), "/", `\/`),
			"json u-escapes":     strings.NewReplacer("/", `\u002F`, "+", `\u002b`, "@", `\u0040`, `"`, `\u0022`, "<", `\u003c`, ">", `\u003E`, "&", `\u0026`, "'", `\u0027`).Replace(secret),
			"hex":                fmt.Sprintf("%x", secret),
			"HEX":                fmt.Sprintf("%X", secret),
		}
		var script strings.Builder
		for name, f := range forms {
			fmt.Fprintf(&script, "printf '%%s\\n' %s\n", shellQuote(name+": "+f))
		}
		for i := 0; i < len(b64); i += 76 { // base64 wrapped at 76 columns, as MIME writes it
			fmt.Fprintf(&script, "printf '%%s\\n' %s\n", shellQuote(b64[i:min(i+76, len(b64))]))
		}
		path := filepath.Join(scripts, "encoder.sh")
		if err := os.WriteFile(path, []byte(script.String()), 0o755); err != nil {
			t.Fatal(err)
		}
		enc := map[string]any{"id": "encoder", "version": "1.0.0", "kind": "process", "command": []string{"/bin/sh", path},
			"secretEnv": map[string]string{"TOKEN": "tok"}}
		if code := call(t, "POST", svc.URL+"/harnesses", enc, nil); code != 201 {
			t.Fatalf("POST /harnesses encoder = %d, want 201", code)
		}
		var run eval.Run
		body := map[string]any{"harness": map[string]string{"id": "encoder", "version": "1.0.0"}, "case": map[string]any{"id": "c", "task": "t"}}
		if code := call(t, "POST", svc.URL+"/runs", body, &run); code != 202 {
			t.Fatalf("POST /runs = %d, want 202", code)
		}
		testwait.Until(t, 2*time.Minute, "the run to end", func() bool {
			if code := call(t, "GET", svc.URL+"/runs/"+run.ID, nil, &run); code != 200 {
				t.Fatalf("GET /runs/%s = %d", run.ID, code)
			}
			return run.Status.Terminal()
		})
		// The log's last chunks may be stored a moment after the run ends.
		logs := testwait.UntilValue(t, time.Minute, "the job's output in the run's log", func() (string, bool) {
			var page struct {
				Chunks []store.RunLog `json:"chunks"`
			}
			if code := call(t, "GET", svc.URL+"/runs/"+run.ID+"/logs?limit=5000", nil, &page); code != 200 {
				t.Fatalf("GET /runs/%s/logs = %d", run.ID, code)
			}
			var b strings.Builder
			for _, c := range page.Chunks {
				b.WriteString(c.Data)
			}
			return b.String(), strings.Contains(b.String(), "python quote: ") && strings.Contains(b.String(), "HEX: ")
		})
		record := jsonStrings(t, getBody(t, svc.URL+"/runs/"+run.ID))
		if !strings.Contains(record, "python quote: ") {
			t.Fatalf("run %s ended %s (%+v); its record does not show the job's output:\n%s", run.ID, run.Status, run.Error, record)
		}
		for _, text := range []struct{ what, s string }{{"log", logs}, {"record", record}} {
			for name, f := range forms {
				if strings.Contains(text.s, f) {
					t.Errorf("the run's %s holds the secret's %s form %q", text.what, name, f)
				}
			}
			joined := strings.NewReplacer("\n", "", "\r", "").Replace(text.s)
			if frag := b64[70:95]; strings.Contains(joined, frag) {
				t.Errorf("the run's %s holds the secret's wrapped base64 (%q)", text.what, frag)
			}
		}
	})

	t.Run("a runner key opens only the runner routes", func(t *testing.T) {
		var key struct {
			RunnerKey string `json:"runnerKey"`
		}
		if code := call(t, "POST", svc.URL+"/runner-keys", map[string]string{"label": "e2e"}, &key); code != 201 {
			t.Fatalf("POST /runner-keys = %d, want 201", code)
		}
		auth := []string{"Authorization", "Bearer " + key.RunnerKey}
		for _, path := range []string{"/me", "/workspaces", "/notifications", "/runs"} {
			if code := call(t, "GET", svc.URL+path, nil, nil, auth...); code != 403 {
				t.Errorf("GET %s with a runner key = %d, want 403", path, code)
			}
		}
		list := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
		if code := call(t, "POST", svc.URL+"/mcp", list, nil, append(auth, "Accept", "application/json, text/event-stream")...); code != 403 {
			t.Errorf("MCP tools/list with a runner key = %d, want 403", code)
		}
		if code := call(t, "POST", svc.URL+"/runner/lease", map[string]any{"waitMs": 1}, nil, auth...); code != 204 {
			t.Errorf("POST /runner/lease with the runner key = %d, want 204 (no job)", code)
		}
	})

	t.Run("JSON nested 1000 deep is a 400", func(t *testing.T) {
		deep := strings.Repeat("[", 1000) + strings.Repeat("]", 1000)
		raw := `{"harness":{"id":"h","version":"1.0.0"},"case":{"id":"c","task":"t","expected":` + deep + `}}`
		code, body := sendRaw(t, "POST", svc.URL+"/runs", raw)
		if code != 400 || !strings.Contains(body, "nested deeper than 64 levels") {
			t.Errorf("POST /runs nested 1000 deep = %d %s, want 400 naming the limit", code, body)
		}
	})
}

// send sends body as JSON and returns the status and the answer's text.
func send(t *testing.T, method, url string, body any) (int, string) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return sendRaw(t, method, url, string(b))
}

// sendRaw sends raw as a JSON body and returns the status and the answer.
func sendRaw(t *testing.T, method, url, raw string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader([]byte(raw)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// jsonStrings is every string in the JSON document raw, one a line, as a
// reader of the decoded document sees them.
func jsonStrings(t *testing.T, raw string) string {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatalf("decoding %q: %v", raw, err)
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			b.WriteString(v + "\n")
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
	return b.String()
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
