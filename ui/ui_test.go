package ui

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, target string, hdr ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// TestServe: each asset with its content type, the app for any path
// without an extension, 404 for a missing file, and the headers that
// keep the page from running anything but its own scripts.
func TestServe(t *testing.T) {
	h := New()
	for _, tc := range []struct {
		method, target string
		status         int
		contentType    string
		bodyHas        string
	}{
		{"GET", "/ui/", 200, "text/html; charset=utf-8", `<script type="module" src="/ui/js/app.js">`},
		{"GET", "/ui/index.html", 200, "text/html; charset=utf-8", `<main id="main"`},
		{"GET", "/ui/scorecards/sc_1", 200, "text/html; charset=utf-8", `<main id="main"`},
		{"GET", "/ui/js/app.js", 200, "text/javascript; charset=utf-8", "export function go"},
		{"GET", "/ui/js/pages/scorecard.js", 200, "text/javascript; charset=utf-8", "export async function render"},
		{"GET", "/ui/js/pages/sandboxes.js", 200, "text/javascript; charset=utf-8", "GET /sandboxes"},
		{"GET", "/ui/js/pages/worlds.js", 200, "text/javascript; charset=utf-8", "GET /worlds/:id"},
		{"GET", "/ui/sandboxes/sbx_1", 200, "text/html; charset=utf-8", `data-nav="sandboxes"`},
		{"GET", "/ui/js/pages/approvals.js", 200, "text/javascript; charset=utf-8", "POST /approvals/:id/decide"},
		{"GET", "/ui/js/pages/root.js", 200, "text/javascript; charset=utf-8", "?conversation="},
		{"GET", "/ui/approvals/ap_1", 200, "text/html; charset=utf-8", `data-nav="approvals"`},
		{"GET", "/ui/style.css", 200, "text/css; charset=utf-8", "prefers-color-scheme: dark"},
		{"HEAD", "/ui/style.css", 200, "text/css; charset=utf-8", ""},
		{"GET", "/ui/js/nope.js", 404, "text/plain; charset=utf-8", "not found"},
		{"POST", "/ui/", 405, "text/plain; charset=utf-8", "method not allowed"},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			res := get(t, h, tc.method, tc.target)
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.status)
			}
			if got := res.Header.Get("Content-Type"); got != tc.contentType {
				t.Errorf("Content-Type %q, want %q", got, tc.contentType)
			}
			if !strings.Contains(string(body), tc.bodyHas) {
				t.Errorf("body lacks %q", tc.bodyHas)
			}
			if got := res.Header.Get("Content-Security-Policy"); got != ContentSecurityPolicy {
				t.Errorf("Content-Security-Policy %q, want %q", got, ContentSecurityPolicy)
			}
			if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q, want nosniff", got)
			}
			if tc.status == 200 && res.Header.Get("Cache-Control") != "no-cache" {
				t.Errorf("Cache-Control %q, want no-cache", res.Header.Get("Cache-Control"))
			}
		})
	}
}

// TestRedirectAndRevalidate: /ui goes to /ui/, and a browser holding the
// current ETag gets a 304 without a body.
func TestRedirectAndRevalidate(t *testing.T) {
	h := New()
	res := get(t, h, "GET", "/ui")
	if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/ui/" {
		t.Fatalf("GET /ui: %d Location %q, want 301 /ui/", res.StatusCode, res.Header.Get("Location"))
	}
	first := get(t, h, "GET", "/ui/js/api.js")
	etag := first.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	again := get(t, h, "GET", "/ui/js/api.js", "If-None-Match", etag)
	if again.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidation with the ETag: %d, want 304", again.StatusCode)
	}
}

// TestAssetsNeedNothingElse: every module the pages import, and every
// file index.html links, is embedded; and no asset loads anything from
// another origin or runs inline code, which the CSP would block.
func TestAssetsNeedNothingElse(t *testing.T) {
	h := New()
	importRE := regexp.MustCompile(`(?:from\s+|import\()\s*'(\.{1,2}/[^']+)'`)
	for name, a := range h.assets {
		if name == "" {
			continue
		}
		body := string(a.body)
		if strings.Contains(body, "http://") || strings.Contains(body, "https://") {
			if !strings.Contains(body, "http://www.w3.org/2000/svg") {
				t.Errorf("%s names another origin", name)
			}
		}
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		for _, m := range importRE.FindAllStringSubmatch(body, -1) {
			target := path.Join(path.Dir(name), m[1])
			if _, ok := h.assets[target]; !ok {
				t.Errorf("%s imports %s, which is not embedded (%s)", name, m[1], target)
			}
		}
	}
	index := string(h.assets["index.html"].body)
	for _, m := range regexp.MustCompile(`(?:src|href)="/ui/([^"]+)"`).FindAllStringSubmatch(index, -1) {
		if _, ok := h.assets[m[1]]; !ok {
			t.Errorf("index.html links /ui/%s, which is not embedded", m[1])
		}
	}
	if regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]+</script>|\sstyle="|\son[a-z]+="`).MatchString(index) {
		t.Error("index.html has inline script, style or event handler attributes, which the CSP blocks")
	}
	if _, err := fs.Stat(static, "static/index.html"); err != nil {
		t.Fatal(err)
	}
}
