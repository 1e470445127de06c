package cli

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"svc/internal/client"

	"github.com/google/go-cmp/cmp"
)

// TestLoadDataset: JSON (a dataset or an array of cases), JSONL and CSV
// files become the same dataset document; the flags complete it.
func TestLoadDataset(t *testing.T) {
	dir := t.TempDir()
	twoCases := []any{
		map[string]any{"id": "q1", "task": "say ok", "expected": "ok", "tags": []any{"smoke", "fast"}},
		map[string]any{"id": "q2", "task": "say no", "expected": "no"},
	}
	for _, tc := range []struct {
		name, file, content string
		typ                 string
		want                any // the cases
		wantErr             string
	}{
		{"json dataset", "qa.json", `{"id":"qa","version":"1.0.0","cases":[{"id":"q1","task":"say ok","expected":"ok","tags":["smoke","fast"]},{"id":"q2","task":"say no","expected":"no"}]}`, "", twoCases, ""},
		{"json array", "qa.json", `[{"id":"q1","task":"say ok","expected":"ok","tags":["smoke","fast"]},{"id":"q2","task":"say no","expected":"no"}]`, "", twoCases, ""},
		{"jsonl with a blank line", "qa.jsonl", "{\"id\":\"q1\",\"task\":\"say ok\",\"expected\":\"ok\",\"tags\":[\"smoke\",\"fast\"]}\n\n{\"id\":\"q2\",\"task\":\"say no\",\"expected\":\"no\"}\n", "", twoCases, ""},
		{"csv with Inspect's names", "qa.csv", "id,input,target,tags\nq1,say ok,ok,smoke;fast\nq2,say no,no,\n", "", twoCases, ""},
		{"csv with a BOM and promptfoo's names", "qa.csv", "\ufeffid,prompt,__expected,tags\nq1,say ok,ok,\"smoke,fast\"\nq2,say no,no,\n", "", twoCases, ""},
		{"csv read by --type", "qa.txt", "id,task,expected,tags\nq1,say ok,ok,smoke;fast\nq2,say no,no,\n", "csv", twoCases, ""},
		{"csv: ids from row numbers, object tasks, graders, timeouts", "x.csv",
			"task.question,task.context,expected,graders,timeoutSec\nwhat?,ctx,42,exact;exit_code,30\nwhy?,,,\"[{\"\"id\"\":\"\"a\"\",\"\"kind\"\":\"\"contains\"\"}]\",\n", "",
			[]any{
				map[string]any{"id": "1", "task": map[string]any{"question": "what?", "context": "ctx"}, "expected": "42",
					"graders": []any{map[string]any{"id": "exact"}, map[string]any{"id": "exit_code"}}, "timeoutSec": 30},
				map[string]any{"id": "2", "task": map[string]any{"question": "why?"}, "graders": []any{map[string]any{"id": "a", "kind": "contains"}}},
			}, ""},
		{"csv: an unknown column", "x.csv", "id,question\nq1,what?\n", "", nil, `column "question" is not a case field`},
		{"csv: task twice", "x.csv", "task,task.q\na,b\n", "", nil, "both fill the case's task"},
		{"csv: a bad timeout", "x.csv", "id,timeoutSec\nq1,soon\n", "", nil, `row 1: timeoutSec "soon" is not a whole number`},
		{"csv: no rows", "x.csv", "id,task\n", "", nil, "no rows under the header"},
		{"jsonl: not an object", "x.jsonl", "{\"id\":\"q1\"}\n[1]\n", "", nil, "line 2: not a JSON object"},
		{"json: an object without cases", "x.json", `{"id":"qa"}`, "", nil, "this object has no cases"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			doc, err := loadDataset(path, tc.typ)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Compare as JSON: numbers read as json.Number.
			got, _ := json.Marshal(doc["cases"])
			want, _ := json.Marshal(tc.want)
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("cases (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCompleteDataset: the id defaults to the file's name, flags win over
// the file, --grader reaches only the cases without graders, and a
// missing version is a usage error.
func TestCompleteDataset(t *testing.T) {
	doc := map[string]any{"version": "0.9.0", "cases": []any{
		map[string]any{"id": "a"},
		map[string]any{"id": "b", "graders": []any{map[string]any{"id": "regex", "pattern": "x"}}},
	}}
	if err := completeDataset(doc, "data/qa.jsonl", "", "1.0.0", "smoke set", []any{map[string]any{"id": "exact"}}); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(doc)
	want := `{"cases":[{"graders":[{"id":"exact"}],"id":"a"},{"graders":[{"id":"regex","pattern":"x"}],"id":"b"}],"description":"smoke set","id":"qa","version":"1.0.0"}`
	if string(got) != want {
		t.Errorf("dataset\n %s\nwant\n %s", got, want)
	}
	err := completeDataset(map[string]any{"cases": []any{}}, "qa.csv", "", "", "", nil)
	if err == nil || !strings.Contains(err.Error(), "qa.csv has no version: give --version") {
		t.Errorf("no version: %v", err)
	}
}

// TestDatasetPush: push sends the document and prints one line; an
// invalid spec prints each problem and exits 2.
func TestDatasetPush(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "qa.csv")
	os.WriteFile(csvPath, []byte("id,task,expected\nq1,say ok,ok\n"), 0o644)
	api := newFakeAPI(t, map[string]http.HandlerFunc{
		"POST /datasets": func(w http.ResponseWriter, r *http.Request) {
			var doc map[string]any
			json.NewDecoder(r.Body).Decode(&doc)
			if doc["version"] == "bad" {
				writeJSONBody(w, 400, map[string]any{"error": map[string]any{"code": "BAD_REQUEST", "message": "dataset spec: 1 problem",
					"requestId": "req-7", "details": map[string]any{"problems": []any{map[string]any{"path": "cases[0].task", "message": "must be a string"}}}}})
				return
			}
			writeJSONBody(w, 201, map[string]any{"kind": "dataset", "id": doc["id"], "version": doc["version"], "digest": "sha256:0123456789abcdef0123", "caseCount": 1, "created": true})
		},
	})
	env := map[string]string{client.EnvURL: api.srv.URL}
	out, errOut, code := invocation{env: env}.run(t, "dataset", RunDataset, "push", csvPath, "--version", "1.0.0", "--grader", "exact")
	if code != 0 || out != "dataset qa@1.0.0 registered (1 case, sha256:0123456789ab…)\n" {
		t.Errorf("exit %d stdout %q stderr %q", code, out, errOut)
	}
	var sent map[string]any
	json.Unmarshal(api.last("POST", "/datasets").body, &sent)
	if want := `[{"expected":"ok","graders":[{"id":"exact"}],"id":"q1","task":"say ok"}]`; mustJSON(sent["cases"]) != want {
		t.Errorf("sent cases %s, want %s", mustJSON(sent["cases"]), want)
	}
	_, errOut, code = invocation{env: env}.run(t, "dataset", RunDataset, "push", csvPath, "--version", "bad")
	if want := "svc: the dataset is not valid:\n  cases[0].task: must be a string\nsvc dataset: the dataset was refused (request req-7)\n"; code != 2 || errOut != want {
		t.Errorf("exit %d stderr %q, want 2 and %q", code, errOut, want)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestCodeJudgeSpec: the source goes in as it is; the language follows
// the extension unless given.
func TestCodeJudgeSpec(t *testing.T) {
	dir := t.TempDir()
	src := "import json, sys\nprint(json.dumps({\"metric\": \"judge\", \"value\": 1, \"detail\": \"a \\\"quoted\\\" \\\\ path\"}))\n"
	py := filepath.Join(dir, "tone.py")
	os.WriteFile(py, []byte(src), 0o644)
	doc, err := codeJudgeSpec(py, codeJudgeOptions{version: "1.0.0", timeoutSec: 30})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"kind": "code", "id": "tone", "version": "1.0.0", "language": "python", "code": src, "timeoutSec": 30}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	other := filepath.Join(dir, "judge.txt")
	os.WriteFile(other, []byte("console.log(1)"), 0o644)
	if _, err := codeJudgeSpec(other, codeJudgeOptions{version: "1"}); err == nil || !strings.Contains(err.Error(), "give --language python or node") {
		t.Errorf("unknown extension: %v", err)
	}
	doc, err = codeJudgeSpec(other, codeJudgeOptions{version: "1", language: "node", id: "len"})
	if err != nil || doc["language"] != "node" || doc["id"] != "len" {
		t.Errorf("--language node --id len: %v %v", doc, err)
	}
	if _, err := codeJudgeSpec(py, codeJudgeOptions{}); err == nil || !strings.Contains(err.Error(), "has no version") {
		t.Errorf("no version: %v", err)
	}
}
