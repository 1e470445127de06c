package nomad

import (
	"encoding/json"
	"strings"
	"testing"
	"text/template"

	"github.com/google/go-cmp/cmp"
)

// varItem is how Nomad's template engine (consul-template) hands a
// Variable's items to a template: a map of items with a Value field.
type varItem struct{ Key, Value string }

// render executes a job template the way Nomad's template engine would:
// Go's text/template with the template's delimiters and the nomadVar and
// toJSON functions.
func render(t *testing.T, data, left, right string, vars map[string]map[string]string) string {
	t.Helper()
	funcs := template.FuncMap{
		"nomadVar": func(path string) map[string]varItem {
			out := map[string]varItem{}
			for k, v := range vars[path] {
				out[k] = varItem{k, v}
			}
			return out
		},
		"toJSON": func(v any) (string, error) {
			b, err := json.Marshal(v)
			return string(b), err
		},
	}
	tm, err := template.New("t").Delims(left, right).Funcs(funcs).Parse(data)
	if err != nil {
		t.Fatalf("parsing %q: %v", data, err)
	}
	var b strings.Builder
	if err := tm.Execute(&b, nil); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestSecretsTemplateRendersJSON(t *testing.T) {
	for _, secrets := range []map[string]string{
		{"API_KEY": "sk-1"},
		{"A": `quote " backslash \ newline` + "\n", "B": "}} {{ end }}", "C": "é\u0000<&>", "D": ""},
	} {
		id := "svc-r1-a1"
		got := render(t, secretsTemplate(id), "{{", "}}", map[string]map[string]string{VariablePath(id): secrets})
		var decoded map[string]string
		if err := json.Unmarshal([]byte(got), &decoded); err != nil {
			t.Fatalf("rendered %q: not JSON: %v", got, err)
		}
		if diff := cmp.Diff(secrets, decoded); diff != "" {
			t.Errorf("secrets file (-want +got):\n%s", diff)
		}
	}
}

func TestLiteralTemplatesAreVerbatim(t *testing.T) {
	for _, data := range []string{
		`{"task":"say {{ hello }}","x":"{{- end }}"}`,
		"#!/bin/sh\necho ${NOMAD_TASK_DIR} {{ . }}\n",
		"<<svc already has <<svc and svc>> in it",
	} {
		tm := literal("local/x", data, "0644")
		if got := render(t, *tm.EmbeddedTmpl, *tm.LeftDelim, *tm.RightDelim, nil); got != data {
			t.Errorf("rendered %q, want %q verbatim", got, data)
		}
	}
	// Delimiters that occur in the data are not chosen.
	l, r := delimiters("x")
	data := l + " and " + r
	l2, r2 := delimiters(data)
	if strings.Contains(data, l2) || strings.Contains(data, r2) {
		t.Errorf("delimiters %q %q occur in %q", l2, r2, data)
	}
}
