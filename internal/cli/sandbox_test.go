package cli

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/client"
)

// sandboxRecord is a session as the service answers it (sandboxes.View).
func sandboxRecord(id, status string, world string) map[string]any {
	sess := map[string]any{
		"expiresAt": "2030-01-02T03:04:05Z", "ttlSeconds": 1800, "busy": false, "hibernate": world != "",
		"snapshots": []any{}, "image": "busybox:1@sha256:abc", "host": "h1",
	}
	if world != "" {
		sess["world"] = map[string]any{"id": world}
	}
	rec := map[string]any{
		"id": id, "status": status, "kind": "sandbox", "lifetime": "session", "createdAt": "2030-01-02T02:34:05Z",
		"session": sess,
		"live":    map[string]any{"expiresAt": "2030-01-02T03:04:05Z", "busy": world != "", "open": status == "running", "secondsLeft": 1800, "tasks": []any{}},
	}
	return rec
}

// jsonBody decodes a recorded request body into a generic value (nil for
// no body), so a test compares what went on the wire, field by field.
func jsonBody(t *testing.T, r *recorded) any {
	t.Helper()
	if len(r.body) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("%s %s body %q is not JSON: %v", r.method, r.path, r.body, err)
	}
	return v
}

// TestSandboxCreate: the flags become the body of POST /sandboxes (ttl
// in seconds, hibernate only when given, the world's version as a
// number); the id is printed, or the record with --json; a command line
// naming nothing to run is a usage error that sends nothing.
func TestSandboxCreate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		wantBody string
		wantOut  string
		wantCode int
		wantErr  string
	}{
		{"image", []string{"--image", "busybox:1@sha256:abc", "--ttl", "30m"}, `{"image":"busybox:1@sha256:abc","ttl":1800}`, "sb_1\n", 0, ""},
		{"world rollback", []string{"--world", "dev", "--world-version", "v2", "--hibernate=false", "--ttl", "90"},
			`{"world":{"id":"dev","version":2},"hibernate":false,"ttl":90}`, "sb_1\n", 0, ""},
		{"world with first image, runtime, repo", []string{"--world", "dev", "--image", "base:1", "--runtime", "rt", "--repo", "https://git.example/r.git", "--repo-ref", "main"},
			`{"image":"base:1","runtime":"rt","world":{"id":"dev"},"repo":{"git":"https://git.example/r.git","ref":"main"}}`, "sb_1\n", 0, ""},
		{"json", []string{"--image", "busybox:1", "--json"}, `{"image":"busybox:1"}`, "", 0, ""},
		{"nothing to run", []string{"--ttl", "5m"}, "", "", exitProblem, "svc sandbox: usage: name what the session runs: --image REF (svc image import prints one) or --world ID\n"},
		{"bad ttl", []string{"--image", "x", "--ttl", "soon"}, "", "", exitProblem, "invalid value \"soon\" for flag -ttl: want a positive duration"},
		{"bad version", []string{"--world", "dev", "--world-version", "v0"}, "", "", exitProblem, "--world-version \"v0\": want v1, v2, ..."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, map[string]http.HandlerFunc{"POST /sandboxes": answer(201, sandboxRecord("sb_1", "running", ""))})
			out, errOut, code := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}.run(t, "sandbox", RunSandbox, append([]string{"create"}, tc.args...)...)
			if code != tc.wantCode || !strings.Contains(errOut, tc.wantErr) || (tc.wantErr == "" && errOut != "") {
				t.Fatalf("exit %d stderr %q, want exit %d stderr containing %q", code, errOut, tc.wantCode, tc.wantErr)
			}
			if tc.wantBody == "" {
				if n := len(api.requests()); n != 0 {
					t.Errorf("a refused command line sent %d requests", n)
				}
				return
			}
			var want any
			json.Unmarshal([]byte(tc.wantBody), &want)
			if diff := cmp.Diff(want, jsonBody(t, api.last("POST", "/sandboxes"))); diff != "" {
				t.Errorf("POST /sandboxes body (-want +got):\n%s", diff)
			}
			if strings.Contains(strings.Join(tc.args, " "), "--json") {
				var rec map[string]any
				if err := json.Unmarshal([]byte(out), &rec); err != nil || rec["id"] != "sb_1" || rec["live"] == nil {
					t.Errorf("--json stdout %q is not the record as sent (%v)", out, err)
				}
			} else if out != tc.wantOut {
				t.Errorf("stdout %q, want %q", out, tc.wantOut)
			}
		})
	}
}

// TestSandboxExec: the words after the id (or after --) go to the
// container's shell as written; the command's stdout and stderr come out
// on the streams they were written to, unchanged, and its exit code is
// the command's exit code; a timeout says so; the service's refusal is
// its message and exit 2.
func TestSandboxExec(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		answer   http.HandlerFunc
		wantBody string
		wantOut  string
		wantErr  string
		wantCode int
	}{
		{"exit code and streams", []string{"sb_1", "--", "sh", "-c", "echo hi; echo oops >&2; exit 3"},
			answer(200, map[string]any{"exitCode": 3, "stdout": "hi\n", "stderr": "oops\n", "durationMs": 4.2, "eventSeq": 7}),
			`{"command":"sh -c 'echo hi; echo oops >&2; exit 3'"}`, "hi\n", "oops\n", 3},
		{"flags after the id, no --", []string{"sb_1", "--timeout", "5s", "ls", "-l", "/"},
			answer(200, map[string]any{"exitCode": 0, "stdout": "bin\netc", "stderr": ""}),
			`{"command":"ls -l /","timeoutSec":5}`, "bin\netc", "", 0},
		{"json keeps the exit code", []string{"--json", "sb_1", "--", "false"},
			answer(200, map[string]any{"exitCode": 1, "stdout": "", "stderr": ""}),
			`{"command":"false"}`, `{"exitCode":1,"stderr":"","stdout":""}` + "\n", "", 1},
		{"timed out", []string{"sb_1", "--timeout", "2s", "--", "sleep", "9"},
			answer(200, map[string]any{"exitCode": 137, "stdout": "", "stderr": "", "timedOut": true}),
			`{"command":"sleep 9","timeoutSec":2}`, "", "svc sandbox exec: the command ran past its timeout (2s) and was killed; give a longer --timeout\n", 137},
		{"truncated", []string{"sb_1", "--", "yes"},
			answer(200, map[string]any{"exitCode": 0, "stdout": "y\ny\n", "stdoutTruncated": true}),
			`{"command":"yes"}`, "y\ny\n", "svc sandbox exec: the service kept only the start of the command's output (svc runs trace sb_1 shows what it recorded)\n", 0},
		{"closed session", []string{"sb_1", "--", "true"},
			func(w http.ResponseWriter, _ *http.Request) {
				writeError(w, http.StatusConflict, "CONFLICT", "sandbox session sb_1 is closed (expired): create a new one")
			},
			`{"command":"true"}`, "", "svc sandbox: sandbox session sb_1 is closed (expired): create a new one (request req-42)\n", exitProblem},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, map[string]http.HandlerFunc{"POST /sandboxes/sb_1/exec": tc.answer})
			out, errOut, code := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}.run(t, "sandbox", RunSandbox, append([]string{"exec"}, tc.args...)...)
			if code != tc.wantCode || out != tc.wantOut || errOut != tc.wantErr {
				t.Errorf("exit %d stdout %q stderr %q, want %d %q %q", code, out, errOut, tc.wantCode, tc.wantOut, tc.wantErr)
			}
			var want any
			json.Unmarshal([]byte(tc.wantBody), &want)
			if diff := cmp.Diff(want, jsonBody(t, api.last("POST", "/sandboxes/sb_1/exec"))); diff != "" {
				t.Errorf("exec body (-want +got):\n%s", diff)
			}
		})
	}
	api := newFakeAPI(t, nil)
	for _, args := range [][]string{{"exec"}, {"exec", "sb_1"}, {"exec", "sb_1", "--timeout", "2h", "true"}} {
		if _, errOut, code := (invocation{env: map[string]string{client.EnvURL: api.srv.URL}}).run(t, "sandbox", RunSandbox, args...); code != exitProblem || !strings.Contains(errOut, "usage: ") {
			t.Errorf("svc sandbox %q: exit %d stderr %q, want a usage error", args, code, errOut)
		}
	}
	if n := len(api.requests()); n != 0 {
		t.Errorf("usage errors sent %d requests", n)
	}
}

// TestShellJoinRunsTheWordsAsWritten: the command line shellJoin builds
// makes /bin/sh run exactly the words given, whatever they hold.
func TestShellJoinRunsTheWordsAsWritten(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on this machine")
	}
	words := []string{"printf", "[%s]", "plain", "two words", "it's", `"dq"`, "$HOME", "`id`", "a;b", "*", "", "back\\slash", "new\nline", "--flag=x"}
	out, err := exec.Command(sh, "-c", shellJoin(words)).Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", shellJoin(words), err)
	}
	var want strings.Builder
	for _, w := range words[2:] {
		want.WriteString("[" + w + "]")
	}
	if string(out) != want.String() {
		t.Errorf("sh ran %q as %q, want %q", shellJoin(words), out, want.String())
	}
}

// TestSandboxSnapshotCloseTouch: snapshot prints the pinned reference
// (and what retention pruned), close sends {snapshot:false} only for
// --no-snapshot and prints how the session ended, touch sends the ttl in
// seconds and prints the new deadline.
func TestSandboxSnapshotCloseTouch(t *testing.T) {
	closed := sandboxRecord("sb_1", "succeeded", "dev")
	closed["session"].(map[string]any)["closedReason"] = "closed"
	closed["session"].(map[string]any)["snapshots"] = []any{map[string]any{"version": 3, "ref": "dev:v3@sha256:ccc", "at": "2030-01-02T03:00:00Z", "reason": "hibernate"}}
	closed["live"].(map[string]any)["open"] = false
	touched := sandboxRecord("sb_1", "running", "")
	touched["live"].(map[string]any)["expiresAt"] = "2030-01-02T05:00:00Z"
	api := newFakeAPI(t, map[string]http.HandlerFunc{
		"POST /sandboxes/sb_1/snapshot": answer(201, map[string]any{"world": "dev", "version": 4, "tag": "v4", "digest": "sha256:ddd",
			"ref": "dev:v4@sha256:ddd", "bytes": 3 << 20, "prunedVersions": []string{"v1", "v2"}}),
		"POST /sandboxes/sb_1/close": answer(200, closed),
		"POST /sandboxes/sb_1/touch": answer(200, touched),
	})
	env := map[string]string{client.EnvURL: api.srv.URL}
	for _, tc := range []struct {
		args             []string
		path             string
		wantBody         string
		wantOut, wantErr string
	}{
		{[]string{"snapshot", "sb_1"}, "/sandboxes/sb_1/snapshot", "", "dev:v4@sha256:ddd\n", "world dev version 4 published (3.0 MiB compressed)\nretention pruned v1, v2\n"},
		{[]string{"close", "sb_1"}, "/sandboxes/sb_1/close", "", "sb_1 succeeded (closed)\nlast snapshot: dev:v3@sha256:ccc\n", ""},
		{[]string{"close", "--no-snapshot", "sb_1"}, "/sandboxes/sb_1/close", `{"snapshot":false}`, "sb_1 succeeded (closed)\nlast snapshot: dev:v3@sha256:ccc\n", ""},
		{[]string{"touch", "sb_1", "--ttl", "1h"}, "/sandboxes/sb_1/touch", `{"ttl":3600}`, "sb_1 expires at 2030-01-02T05:00:00Z\n", ""},
		{[]string{"touch", "sb_1"}, "/sandboxes/sb_1/touch", "", "sb_1 expires at 2030-01-02T05:00:00Z\n", ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := invocation{env: env}.run(t, "sandbox", RunSandbox, tc.args...)
			if code != 0 || out != tc.wantOut || errOut != tc.wantErr {
				t.Errorf("exit %d stdout %q stderr %q, want 0 %q %q", code, out, errOut, tc.wantOut, tc.wantErr)
			}
			var want any
			if tc.wantBody != "" {
				json.Unmarshal([]byte(tc.wantBody), &want)
			}
			if diff := cmp.Diff(want, jsonBody(t, api.last("POST", tc.path))); diff != "" {
				t.Errorf("%s body (-want +got):\n%s", tc.path, diff)
			}
		})
	}
}

// TestSandboxListAndGet: ls is a table of id, image or world, status,
// expiry and busy (csv for scripts, --json as sent); get prints the
// record's fields; an unknown session is the service's 404 and exit 2.
func TestSandboxListAndGet(t *testing.T) {
	long := sandboxRecord("sb_3", "running", "")
	long["session"].(map[string]any)["image"] = "busybox:1@sha256:" + strings.Repeat("0123456789abcdef", 4)
	world := sandboxRecord("sb_2", "running", "dev")
	world["session"].(map[string]any)["world"] = map[string]any{"id": "dev", "version": 2}
	api := newFakeAPI(t, map[string]http.HandlerFunc{
		"GET /sandboxes":      answer(200, []any{sandboxRecord("sb_1", "running", ""), world, long}),
		"GET /sandboxes/sb_1": answer(200, sandboxRecord("sb_1", "running", "")),
		"GET /sandboxes/sb_9": func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusNotFound, "NOT_FOUND", "sandbox session sb_9 not found")
		},
	})
	env := map[string]string{client.EnvURL: api.srv.URL}
	for _, tc := range []struct {
		args             []string
		wantOut, wantErr string
		wantCode         int
	}{
		{[]string{"ls"}, "ID    IMAGE/WORLD                    STATUS   EXPIRES           BUSY\n" +
			"sb_1  busybox:1@sha256:abc           running  2030-01-02 03:04  no\n" +
			"sb_2  world dev:v2                   running  2030-01-02 03:04  yes\n" +
			"sb_3  busybox:1@sha256:0123456789ab  running  2030-01-02 03:04  no\n", "", 0},
		{[]string{"ls", "--format", "csv"}, "id,source,status,expiresAt,busy\n" +
			"sb_1,busybox:1@sha256:abc,running,2030-01-02 03:04,no\n" +
			"sb_2,world dev:v2,running,2030-01-02 03:04,yes\n" +
			"sb_3,busybox:1@sha256:" + strings.Repeat("0123456789abcdef", 4) + ",running,2030-01-02 03:04,no\n", "", 0},
		{[]string{"get", "sb_1"}, "id            sb_1\nstatus        running\nsource        busybox:1@sha256:abc\nhost          h1\nopen          yes\n" +
			"seconds left  1800\nexpires       2030-01-02T03:04:05Z\nbusy          no\ncreated       2030-01-02 02:34\n", "", 0},
		{[]string{"get", "sb_9"}, "", "svc sandbox: sandbox session sb_9 not found (request req-42)\n", exitProblem},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := invocation{env: env}.run(t, "sandbox", RunSandbox, tc.args...)
			if code != tc.wantCode || errOut != tc.wantErr {
				t.Errorf("exit %d stderr %q, want %d %q", code, errOut, tc.wantCode, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantOut, out); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
		})
	}
	out, _, code := invocation{env: env}.run(t, "sandbox", RunSandbox, "ls", "--json")
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != 3 || list[1]["live"] == nil {
		t.Errorf("ls --json: exit %d stdout %q (%v), want the list as sent", code, out, err)
	}
	empty := newFakeAPI(t, map[string]http.HandlerFunc{"GET /sandboxes": answer(200, []any{})})
	out, errOut, code := invocation{env: map[string]string{client.EnvURL: empty.srv.URL}}.run(t, "sandbox", RunSandbox, "ls")
	if code != 0 || out != "" || !strings.Contains(errOut, "no live sandbox sessions") {
		t.Errorf("empty ls: exit %d stdout %q stderr %q", code, out, errOut)
	}
}

// TestWorldList: ls lists the worlds with their latest version; ls ID a
// world's versions; a world with no version is the service's 404.
func TestWorldList(t *testing.T) {
	created := time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)
	v := func(n int, d string) map[string]any {
		return map[string]any{"version": n, "tag": "v" + string(rune('0'+n)), "digest": d, "ref": "dev:v" + string(rune('0'+n)) + "@" + d, "publishedBy": "ann", "created": created}
	}
	api := newFakeAPI(t, map[string]http.HandlerFunc{
		"GET /worlds":     answer(200, []any{map[string]any{"id": "dev", "latest": v(2, "sha256:bbb"), "versions": []any{}}}),
		"GET /worlds/dev": answer(200, map[string]any{"id": "dev", "latest": v(2, "sha256:bbb"), "versions": []any{v(1, "sha256:aaa"), v(2, "sha256:bbb")}}),
		"GET /worlds/nope": func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusNotFound, "NOT_FOUND", "world nope has no version in this workspace")
		},
	})
	env := map[string]string{client.EnvURL: api.srv.URL}
	for _, tc := range []struct {
		args             []string
		wantOut, wantErr string
		wantCode         int
	}{
		{[]string{"ls"}, "WORLD  LATEST  REF                PUBLISHED BY  CREATED\ndev    v2      dev:v2@sha256:bbb  ann           2030-01-02 03:04\n", "", 0},
		{[]string{"ls", "dev"}, "VERSION  TAG  REF                PUBLISHED BY  CREATED\n" +
			"1        v1   dev:v1@sha256:aaa  ann           2030-01-02 03:04\n" +
			"2        v2   dev:v2@sha256:bbb  ann           2030-01-02 03:04\n", "", 0},
		{[]string{"ls", "dev", "--format", "jsonl"}, `{"version":1,"tag":"v1","ref":"dev:v1@sha256:aaa","publishedBy":"ann","created":"2030-01-02T03:04:00Z"}` + "\n" +
			`{"version":2,"tag":"v2","ref":"dev:v2@sha256:bbb","publishedBy":"ann","created":"2030-01-02T03:04:00Z"}` + "\n", "", 0},
		{[]string{"ls", "nope"}, "", "svc world: world nope has no version in this workspace (request req-42)\n", exitProblem},
		{[]string{"ls", "a", "b"}, "", "svc world: usage: want at most one world id, got 2 arguments\nrun `svc world -h` for its flags\n", exitProblem},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := invocation{env: env}.run(t, "world", RunWorld, tc.args...)
			if code != tc.wantCode || errOut != tc.wantErr {
				t.Errorf("exit %d stderr %q, want %d %q", code, errOut, tc.wantCode, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantOut, out); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
		})
	}
}
