package registry

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
)

func TestParseExamples(t *testing.T) {
	for _, name := range specFiles(t) {
		t.Run(name, func(t *testing.T) {
			legacy := name == "judge-model" || name == "judge-harness"
			s, err := Parse(kindOfFile(name), readSpec(t, name), !legacy)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if s.Kind() != kindOfFile(name) || s.ID() == "" || s.Version() == "" {
				t.Errorf("Spec = kind %q id %q version %q", s.Kind(), s.ID(), s.Version())
			}
			if s.Value() == nil {
				t.Error("Value() = nil")
			}
			if got := Digest(s.Canonical()); got != s.Digest() {
				t.Errorf("Digest() = %s, want Digest(Canonical()) = %s", s.Digest(), got)
			}
			// Reading the stored canonical form back gives the same spec.
			again, err := Parse(s.Kind(), s.Canonical(), false)
			if err != nil {
				t.Fatalf("Parse(Canonical()): %v", err)
			}
			if !bytes.Equal(again.Canonical(), s.Canonical()) {
				t.Errorf("canonical form is not a fixed point:\n%s\n%s", s.Canonical(), again.Canonical())
			}
			// It is what MarshalJSON serves.
			if got, _ := s.MarshalJSON(); !bytes.Equal(got, s.Canonical()) {
				t.Errorf("MarshalJSON = %s", got)
			}
		})
	}
}

func TestParseTypedAccessors(t *testing.T) {
	for _, tc := range []struct {
		name string
		get  func(Spec) bool
	}{
		{"dataset", func(s Spec) bool { return s.Dataset() != nil && s.Harness() == nil }},
		{"harness-process", func(s Spec) bool { return s.Harness() != nil && s.Dataset() == nil }},
		{"harness-template", func(s Spec) bool { return s.HarnessTemplate() != nil && s.Harness() == nil }},
		{"judge-code", func(s Spec) bool { return s.Judge() != nil && s.Judge().Code != nil && s.Rubric() == nil }},
		{"rubric", func(s Spec) bool { return s.Rubric() != nil && s.Judge() == nil }},
		{"runtime-k8s", func(s Spec) bool { return s.Runtime() != nil && s.Rubric() == nil }},
	} {
		if !tc.get(mustParse(t, tc.name, false)) {
			t.Errorf("%s: typed accessors disagree with the kind", tc.name)
		}
	}
}

func TestParseUnknownKind(t *testing.T) {
	_, err := Parse(Kind("widget"), []byte(`{}`), true)
	if !errors.Is(err, derrors.ErrInvalid) {
		t.Fatalf("Parse(widget) = %v, want ErrInvalid", err)
	}
}

// TestParseRefusals states every validation rule once: a valid example, an
// edit that breaks one rule, and the problem the client reads.
func TestParseRefusals(t *testing.T) {
	long := func(n int) string { return `"` + strings.Repeat("a", n) + `"` }
	deep := strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70)
	for _, tc := range []struct {
		name     string
		file     string
		edits    []edit
		raw      string // instead of file+edits
		kind     Kind   // with raw
		legacyOK bool   // parse as a stored spec (forNewRegistration false)
		path     string
		msg      string
	}{
		// Document level.
		{name: "malformed", raw: `{"id": "a",`, kind: Rubric, path: "", msg: "malformed JSON"},
		{name: "not an object", raw: `["a"]`, kind: Rubric, path: "", msg: "must be a JSON object"},
		{name: "trailing data", raw: `{"id":"a","version":"1","text":"t"} {}`, kind: Rubric, path: "", msg: "unexpected data after the JSON value"},
		{name: "duplicate member", raw: `{"id":"a","id":"b","version":"1","text":"t"}`, kind: Rubric, path: "id", msg: "duplicate member"},
		{name: "invalid UTF-8", raw: "{\"id\":\"a\xff\",\"version\":\"1\",\"text\":\"t\"}", kind: Rubric, path: "", msg: "not valid UTF-8"},
		{name: "NUL", raw: `{"id":"a","version":"1","text":"t\u0000"}`, kind: Rubric, path: "text", msg: "NUL"},
		{name: "too deep", file: "dataset", edits: []edit{{"cases[0].expected", deep}}, path: "cases[0].expected" + strings.Repeat(".a", 62), msg: "nested deeper than 64"},
		{name: "huge number", file: "dataset", edits: []edit{{"meta.n", "1e999999"}}, path: "meta.n", msg: "out of range"},

		// Shared identity rules.
		{name: "id missing", file: "rubric", edits: []edit{{"id", ""}}, path: "id", msg: "required"},
		{name: "id reserved owner", file: "rubric", edits: []edit{{"id", `"_shared"`}}, path: "id", msg: "starting with a letter or digit"},
		{name: "id slash", file: "rubric", edits: []edit{{"id", `"a/b"`}}, path: "id", msg: "must be 1 to 128"},
		{name: "id too long", file: "rubric", edits: []edit{{"id", long(129)}}, path: "id", msg: "must be 1 to 128"},
		{name: "version missing", file: "rubric", edits: []edit{{"version", ""}}, path: "version", msg: "required"},
		{name: "version latest", file: "rubric", edits: []edit{{"version", `"latest"`}}, path: "version", msg: "reserved"},
		{name: "version Latest", file: "rubric", edits: []edit{{"version", `"Latest"`}}, path: "version", msg: "reserved"},
		{name: "version whitespace", file: "rubric", edits: []edit{{"version", `"1.0 beta"`}}, path: "version", msg: "no '/' or whitespace"},
		{name: "version slash", file: "rubric", edits: []edit{{"version", `"1/2"`}}, path: "version", msg: "no '/' or whitespace"},
		{name: "version too long", file: "rubric", edits: []edit{{"version", long(65)}}, path: "version", msg: "1 to 64"},
		{name: "version number", file: "rubric", edits: []edit{{"version", `1`}}, path: "version", msg: "must be a string, not a number"},
		{name: "unknown member", file: "rubric", edits: []edit{{"extra", `1`}}, path: "extra", msg: "unknown field"},
		{name: "member case differs", file: "rubric", edits: []edit{{"Text", `"x"`}}, path: "Text", msg: "unknown field"},
		{name: "tag empty", file: "runtime-nomad", edits: []edit{{"tags", `["ok", " "]`}}, path: "tags[1]", msg: "must not be empty"},
		{name: "tag padded", file: "runtime-nomad", edits: []edit{{"tags", `[" ok"]`}}, path: "tags[0]", msg: "whitespace"},
		{name: "tag too long", file: "runtime-nomad", edits: []edit{{"tags", `[` + long(61) + `]`}}, path: "tags[0]", msg: "at most 60"},
		{name: "too many tags", file: "runtime-nomad", edits: []edit{{"tags", `["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17","18","19","20","21"]`}}, path: "tags", msg: "at most 20"},

		// Datasets.
		{name: "no cases", file: "dataset", edits: []edit{{"cases", `[]`}}, path: "cases", msg: "at least one case"},
		{name: "case id missing", file: "dataset", edits: []edit{{"cases[1].id", ""}}, path: "cases[1].id", msg: "required"},
		{name: "case id space", file: "dataset", edits: []edit{{"cases[1].id", `"a b"`}}, path: "cases[1].id", msg: "without whitespace"},
		{name: "case id duplicate", file: "dataset", edits: []edit{{"cases[2].id", `"fix-typo"`}}, path: "cases[2].id", msg: "duplicate case id"},
		{name: "case unknown member", file: "dataset", edits: []edit{{"cases[0].prompt", `"x"`}}, path: "cases[0].prompt", msg: "unknown field"},
		{name: "task missing", file: "dataset", edits: []edit{{"cases[1].task", ""}}, path: "cases[1].task", msg: "required"},
		{name: "task number", file: "dataset", edits: []edit{{"cases[1].task", `5`}}, path: "cases[1].task", msg: "prompt string or an object"},
		{name: "task blank", file: "dataset", edits: []edit{{"cases[1].task", `"  "`}}, path: "cases[1].task", msg: "must not be empty"},
		{name: "grader id missing", file: "dataset", edits: []edit{{"cases[1].graders", `[{"kind":"x"}]`}}, path: "cases[1].graders[0].id", msg: "required"},
		{name: "grader id number", file: "dataset", edits: []edit{{"cases[1].graders", `[{"id":1}]`}}, path: "cases[1].graders[0].id", msg: "must be a string"},
		{name: "grader id duplicate", file: "dataset", edits: []edit{{"cases[1].graders", `[{"id":"a"},{"id":"a"}]`}}, path: "cases[1].graders[1].id", msg: "duplicate grader id"},
		{name: "grader not object", file: "dataset", edits: []edit{{"cases[1].graders", `["a"]`}}, path: "cases[1].graders[0]", msg: "must be a JSON object"},
		{name: "timeout negative", file: "dataset", edits: []edit{{"cases[0].timeoutSec", `-1`}}, path: "cases[0].timeoutSec", msg: "between 0 and 604800"},
		{name: "timeout fraction", file: "dataset", edits: []edit{{"cases[0].timeoutSec", `1.5`}}, path: "cases[0].timeoutSec", msg: "must be an integer"},
		{name: "timeout overflow", file: "dataset", edits: []edit{{"cases[0].timeoutSec", `1e30`}}, path: "cases[0].timeoutSec", msg: "must be an integer"},
		{name: "cpu negative", file: "dataset", edits: []edit{{"cases[0].resources.cpu", `-1`}}, path: "cases[0].resources.cpu", msg: "between 0"},
		{name: "memory negative", file: "dataset", edits: []edit{{"cases[0].resources.memoryMb", `-5`}}, path: "cases[0].resources.memoryMb", msg: "between 0"},
		{name: "gpu negative", file: "dataset", edits: []edit{{"cases[0].resources.gpu", `-1`}}, path: "cases[0].resources.gpu", msg: "between 0"},
		{name: "placement target", file: "dataset", edits: []edit{{"cases[0].placement.target", `"no such/runtime"`}}, path: "cases[0].placement.target", msg: "runtime id"},
		{name: "placement os", file: "dataset", edits: []edit{{"cases[0].placement.os", `"Linux"`}}, path: "cases[0].placement.os", msg: "lowercase"},
		{name: "case image", file: "dataset", edits: []edit{{"cases[0].image", `"https://x/y"`}}, path: "cases[0].image", msg: "OCI image reference"},
		{name: "milestone id colon", file: "dataset", edits: []edit{{"cases[0].milestones[1].id", `"a:b"`}}, path: "cases[0].milestones[1].id", msg: "must be 1 to 128"},
		{name: "milestone duplicate", file: "dataset", edits: []edit{{"cases[0].milestones[1].id", `"open-file"`}}, path: "cases[0].milestones[1].id", msg: "duplicate milestone id"},
		{name: "env kind missing", file: "dataset", edits: []edit{{"cases[0].env.kind", ""}}, path: "cases[0].env.kind", msg: "required"},
		{name: "repo without files", file: "dataset", edits: []edit{{"cases[0].env.source", `{}`}}, path: "cases[0].env.source.files", msg: "required"},
		{name: "repo file escapes", file: "dataset", edits: []edit{{`cases[0].env.source.files["../etc/passwd"]`, `"x"`}}, path: `cases[0].env.source.files["../etc/passwd"]`, msg: "inside the work tree"},
		{name: "repo file content", file: "dataset", edits: []edit{{`cases[0].env.source.files["a.txt"]`, `1`}}, path: `cases[0].env.source.files["a.txt"]`, msg: "must be a string"},

		// Harnesses.
		{name: "harness kind missing", file: "harness-process", edits: []edit{{"kind", ""}}, path: "kind", msg: "required"},
		{name: "harness kind unknown", file: "harness-process", edits: []edit{{"kind", `"docker"`}}, path: "kind", msg: "must be one of process, service"},
		{name: "process command missing", file: "harness-process", edits: []edit{{"command", ""}}, path: "command", msg: "required"},
		{name: "process empty program", file: "harness-process", edits: []edit{{"command", `[""]`}}, path: "command[0]", msg: "must not be empty"},
		{name: "process command string", file: "harness-process", edits: []edit{{"command", `"python main.py"`}}, path: "command", msg: "must be a JSON array"},
		{name: "process with services", file: "harness-process", edits: []edit{{"services", `{"a":{"image":"x"}}`}}, path: "services", msg: "not a field of a process harness"},
		{name: "env credential name", file: "harness-process", edits: []edit{{"env.GITHUB_TOKEN", `"x"`}}, path: "env.GITHUB_TOKEN", msg: "secretEnv"},
		{name: "env api key name", file: "harness-process", edits: []edit{{"env.OPENAI_API_KEY", `"x"`}}, path: "env.OPENAI_API_KEY", msg: "looks like a credential"},
		{name: "env credential value", file: "harness-process", edits: []edit{{"env.HELPER", `"ghp_0123456789abcdefghijklmnop"`}}, path: "env.HELPER", msg: "value looks like a credential"},
		{name: "env driver variable", file: "harness-process", edits: []edit{{"env.SVC_CASE_FILE", `"/x"`}}, path: "env.SVC_CASE_FILE", msg: "set by the driver"},
		{name: "env bad name", file: "harness-process", edits: []edit{{`env["1BAD"]`, `"x"`}}, path: "env.1BAD", msg: "environment variable names"},
		{name: "env in both", file: "harness-process", edits: []edit{{"env.ANTHROPIC_API_KEY", `"x"`}}, path: "env.ANTHROPIC_API_KEY", msg: "both env and secretEnv"},
		{name: "secretEnv value", file: "harness-process", edits: []edit{{"secretEnv.X", `"sk-live abc"`}}, path: "secretEnv.X", msg: "NAME of a workspace secret"},
		{name: "service none", file: "harness-service", edits: []edit{{"services", ""}, {"deps", ""}}, path: "services", msg: "at least one service"},
		{name: "service name", file: "harness-service", edits: []edit{{"services.Tools_1", `{"image":"a/b"}`}}, path: "services.Tools_1", msg: "DNS label"},
		{name: "service image missing", file: "harness-service", edits: []edit{{"services.tools.image", ""}}, path: "services.tools.image", msg: "required"},
		{name: "service port", file: "harness-service", edits: []edit{{"services.tools.ports", `[0]`}}, path: "services.tools.ports[0]", msg: "between 1 and 65535"},
		{name: "front door missing", file: "harness-service", edits: []edit{{"frontDoor", ""}}, path: "frontDoor", msg: "required"},
		{name: "front door service", file: "harness-service", edits: []edit{{"frontDoor.service", `"nope"`}}, path: "frontDoor.service", msg: "not one of services"},
		{name: "front door port", file: "harness-service", edits: []edit{{"frontDoor.port", `9999`}}, path: "frontDoor.port", msg: "not one of the ports"},
		{name: "front door path", file: "harness-service", edits: []edit{{"frontDoor.path", `"task"`}}, path: "frontDoor.path", msg: "start with '/'"},
		{name: "dep unknown", file: "harness-service", edits: []edit{{"deps.agent", `["db"]`}}, path: "deps.agent[0]", msg: "not one of services"},
		{name: "dep self", file: "harness-service", edits: []edit{{"deps.agent", `["agent"]`}}, path: "deps.agent[0]", msg: "itself"},
		{name: "dep cycle", file: "harness-service", edits: []edit{{"deps.tools", `["agent"]`}}, path: "deps", msg: "cycle: agent -> tools -> agent"},
		{name: "acquire capacity", file: "harness-service", edits: []edit{{"target.acquire.capacity", `0`}}, path: "target.acquire.capacity", msg: "between 1"},
		{name: "scale order", file: "harness-service", edits: []edit{{"capacity.scale.min", `5`}}, path: "capacity.scale", msg: "must not exceed max"},
		{name: "service with image", file: "harness-service", edits: []edit{{"image", `"a/b"`}}, path: "image", msg: "not a field of a service harness"},
		{name: "trace source", file: "harness-service", edits: []edit{{"traceSource", `"a b"`}}, path: "traceSource", msg: "trace source name"},
		{name: "instance with config", file: "harness-instance", edits: []edit{{"command", `["x"]`}}, path: "command", msg: "only template and pins"},
		{name: "instance template latest", file: "harness-instance", edits: []edit{{"template.version", `"latest"`}}, path: "template.version", msg: "reserved"},
		{name: "instance bad pin path", file: "harness-instance", edits: []edit{{`pins["a..b"]`, `1`}}, path: `pins["a..b"]`, msg: "not a parameter path"},
		{name: "pins without template", file: "harness-process", edits: []edit{{"pins", `{"model":"x"}`}}, path: "pins", msg: "need a template"},

		// Harness templates.
		{name: "template param kind", file: "harness-template", edits: []edit{{"parameters[1].path", `"kind"`}}, path: "parameters[1].path", msg: "kind cannot be a parameter"},
		{name: "template param unknown", file: "harness-template", edits: []edit{{"parameters[1].path", `"nope.x"`}}, path: "parameters[1].path", msg: "not a member"},
		{name: "template param overlap", file: "harness-template", edits: []edit{{"parameters[1].path", `"services"`}}, path: "parameters[1].path", msg: "overlaps"},
		{name: "template param spelling", file: "harness-template", edits: []edit{{"parameters[1].path", `"[\"model\"]"`}}, path: "parameters[1].path", msg: `write the path as "model"`},
		{name: "template hole not a parameter", file: "harness-template", edits: []edit{{"parameters[0].required", `false`}}, path: "harness.services.agent.image", msg: "required"},
		{name: "template kind missing", file: "harness-template", edits: []edit{{"harness.kind", ""}}, path: "harness.kind", msg: "required"},

		// Judges.
		{name: "legacy model refused", file: "judge-model", path: "kind", msg: "only code judges can be registered"},
		{name: "legacy harness refused", file: "judge-harness", path: "kind", msg: "only code judges can be registered"},
		{name: "judge kind unknown", file: "judge-code", edits: []edit{{"kind", `"llm"`}}, path: "kind", msg: "must be one of code"},
		{name: "judge kind missing", file: "judge-code", edits: []edit{{"kind", ""}}, path: "kind", msg: "required"},
		{name: "code judge foreign member", file: "judge-code", edits: []edit{{"rubric", `"x"`}}, path: "rubric", msg: "unknown field"},
		{name: "language", file: "judge-code", edits: []edit{{"language", `"ruby"`}}, path: "language", msg: "python or node"},
		{name: "code and entrypoint", file: "judge-code", edits: []edit{{"entrypoint", `"/judge.py"`}, {"image", `"acme/judge:1"`}}, path: "code", msg: "not both"},
		{name: "neither code nor entrypoint", file: "judge-code", edits: []edit{{"code", ""}}, path: "code", msg: "required"},
		{name: "entrypoint without image", file: "judge-code", edits: []edit{{"code", ""}, {"entrypoint", `"/judge.py"`}}, path: "image", msg: "required"},
		{name: "judge timeout", file: "judge-code", edits: []edit{{"timeoutSec", `-5`}}, path: "timeoutSec", msg: "between 0"},
		{name: "judge runtime", file: "judge-code", edits: []edit{{"runtime", `"a b"`}}, path: "runtime", msg: "runtime id"},
		{name: "judge model ref", file: "judge-code", edits: []edit{{"model.ref", `""`}}, path: "model.ref", msg: "model binding"},
		{name: "evidence kind", file: "judge-code", edits: []edit{{"requires[0].kind", `"html"`}}, path: "requires[0].kind", msg: "must be one of final_answer"},
		{name: "span without name", file: "judge-code", edits: []edit{{"requires[3].name", ""}}, path: "requires[3].name", msg: "required"},
		{name: "final answer with name", file: "judge-code", edits: []edit{{"requires[0].name", `"x"`}}, path: "requires[0]", msg: "takes no name or role"},
		{name: "prompt template", file: "judge-model", legacyOK: true, edits: []edit{{"promptTemplate", `"Judge {task}"`}}, path: "promptTemplate", msg: "{verdict_instruction}"},
		{name: "pass threshold", file: "judge-model", legacyOK: true, edits: []edit{{"passThreshold", `1.5`}}, path: "passThreshold", msg: "between 0 and 1"},
		{name: "inputs", file: "judge-model", legacyOK: true, edits: []edit{{"inputs[1]", `"html"`}}, path: "inputs[1]", msg: "trace, dom, screenshot"},
		{name: "criterion weight zero", file: "judge-model", legacyOK: true, edits: []edit{{"criteria[0].weight", `0`}}, path: "criteria[0].weight", msg: "greater than 0"},
		{name: "criterion duplicate", file: "judge-model", legacyOK: true, edits: []edit{{"criteria[1].id", `"correct"`}}, path: "criteria[1].id", msg: "duplicate criterion id"},
		{name: "rubric wrong type", file: "judge-model", legacyOK: true, edits: []edit{{"rubric", `5`}}, path: "rubric", msg: "rubric text (a string) or a reference"},
		{name: "rubric ref member", file: "judge-model", legacyOK: true, edits: []edit{{"rubric.name", `"x"`}}, path: "rubric.name", msg: "unknown field"},
		{name: "rubric ref version", file: "judge-model", legacyOK: true, edits: []edit{{"rubric.version", `"a b"`}}, path: "rubric.version", msg: "no '/' or whitespace"},
		{name: "model judge model", file: "judge-model", legacyOK: true, edits: []edit{{"model", ""}}, path: "model", msg: "required"},
		{name: "harness judge ref", file: "judge-harness", legacyOK: true, edits: []edit{{"harness.id", `""`}}, path: "harness.id", msg: "required"},

		// Rubrics.
		{name: "rubric text", file: "rubric", edits: []edit{{"text", `""`}}, path: "text", msg: "required"},
		{name: "rubric template", file: "rubric", edits: []edit{{"promptTemplate", `"{task}"`}}, path: "promptTemplate", msg: "{verdict_instruction}"},
		{name: "rubric weight", file: "rubric", edits: []edit{{"criteria[0].weight", `-1`}}, path: "criteria[0].weight", msg: "greater than 0"},
		{name: "rubric criterion threshold", file: "rubric", edits: []edit{{"criteria[0].passThreshold", `2`}}, path: "criteria[0].passThreshold", msg: "between 0 and 1"},
		{name: "rubric criterion id", file: "rubric", edits: []edit{{"criteria[0].id", ""}}, path: "criteria[0].id", msg: "required"},

		// Runtimes.
		{name: "runtime kind missing", file: "runtime-local", edits: []edit{{"kind", ""}}, path: "kind", msg: "required"},
		{name: "runtime kind unknown", file: "runtime-local", edits: []edit{{"kind", `"docker"`}}, path: "kind", msg: "local, nomad, k8s"},
		{name: "local with addr", file: "runtime-local", edits: []edit{{"addr", `"http://x"`}}, path: "addr", msg: "not a field of a local runtime"},
		{name: "local trace source", file: "runtime-local", edits: []edit{{"traceSource", `"svc"`}}, path: "traceSource", msg: "not a field of a local runtime"},
		{name: "nomad addr missing", file: "runtime-nomad", edits: []edit{{"addr", ""}}, path: "addr", msg: "required"},
		{name: "nomad addr scheme", file: "runtime-nomad", edits: []edit{{"addr", `"ftp://nomad:4646"`}}, path: "addr", msg: "http:// or https://"},
		{name: "nomad addr user info", file: "runtime-nomad", edits: []edit{{"addr", `"https://root:hunter2@nomad:4646"`}}, path: "addr", msg: "must not carry credentials"},
		{name: "nomad addr query", file: "runtime-nomad", edits: []edit{{"addr", `"https://nomad:4646/?token=abc"`}}, path: "addr", msg: "query"},
		{name: "nomad image missing", file: "runtime-nomad", edits: []edit{{"image", ""}}, path: "image", msg: "required"},
		{name: "max concurrent zero", file: "runtime-nomad", edits: []edit{{"maxConcurrent", `0`}}, path: "maxConcurrent", msg: "between 1 and 1000"},
		{name: "max concurrent high", file: "runtime-nomad", edits: []edit{{"maxConcurrent", `1001`}}, path: "maxConcurrent", msg: "between 1 and 1000"},
		{name: "memory budget", file: "runtime-nomad", edits: []edit{{"memoryBudgetMb", `0`}}, path: "memoryBudgetMb", msg: "between 1"},
		{name: "runtime gpu", file: "runtime-nomad", edits: []edit{{"gpu", `-1`}}, path: "gpu", msg: "between 0"},
		{name: "cpu mhz zero", file: "runtime-nomad", edits: []edit{{"cpuMhzPerCore", `0`}}, path: "cpuMhzPerCore", msg: "between 1"},
		{name: "auth secret value", file: "runtime-nomad", edits: []edit{{"authSecret", `"ghp_0123456789abcdefABCDEF"`}}, path: "authSecret", msg: "looks like a credential value"},
		{name: "auth secret whitespace", file: "runtime-nomad", edits: []edit{{"authSecret", `"Bearer abc"`}}, path: "authSecret", msg: "NAME of a workspace secret"},
		{name: "auth secret long", file: "runtime-nomad", edits: []edit{{"authSecret", long(65)}}, path: "authSecret", msg: "NAME of a workspace secret"},
		{name: "auth secret jwt", file: "runtime-nomad", edits: []edit{{"authSecret", `"eyJhbGciOiJIUzI1NiJ9.e30.x"`}}, path: "authSecret", msg: "credential"},
		{name: "constraint operator", file: "runtime-nomad", edits: []edit{{"constraints[0].operator", `"~"`}}, path: "constraints[0].operator", msg: "must be one of"},
		{name: "constraint value", file: "runtime-nomad", edits: []edit{{"constraints[0].value", ""}}, path: "constraints[0].value", msg: "required"},
		{name: "constraint attribute", file: "runtime-nomad", edits: []edit{{"constraints[2].attribute", ""}}, path: "constraints[2].attribute", msg: "required"},
		{name: "nomad runtime driver", file: "runtime-nomad", edits: []edit{{"runtime", `"Docker"`}}, path: "runtime", msg: "lowercase"},
		{name: "k8s image missing", file: "runtime-k8s", edits: []edit{{"image", ""}}, path: "image", msg: "required"},
		{name: "k8s cpu mhz", file: "runtime-k8s", edits: []edit{{"cpuMhzPerCore", `2000`}}, path: "cpuMhzPerCore", msg: "not a field of a k8s runtime"},
		{name: "k8s addr", file: "runtime-k8s", edits: []edit{{"addr", `"http://x"`}}, path: "addr", msg: "not a field of a k8s runtime"},
		{name: "k8s namespace", file: "runtime-k8s", edits: []edit{{"namespace", `"Evals"`}}, path: "namespace", msg: "DNS label"},
		{name: "k8s server without token", file: "runtime-k8s", edits: []edit{{"authSecret", ""}, {"kubeconfigSecret", ""}}, path: "authSecret", msg: "required"},
		{name: "k8s token without server", file: "runtime-k8s", edits: []edit{{"server", ""}}, path: "server", msg: "required"},
		{name: "k8s kubeconfig value", file: "runtime-k8s", edits: []edit{{"kubeconfigSecret", `"apiVersion: v1\nclusters: []"`}}, path: "kubeconfigSecret", msg: "NAME of a workspace secret"},
		{name: "node selector key", file: "runtime-k8s", edits: []edit{{`nodeSelector["-bad"]`, `"x"`}}, path: "nodeSelector.-bad", msg: "label key"},
		{name: "node selector value", file: "runtime-k8s", edits: []edit{{"nodeSelector.pool", `"a b"`}}, path: "nodeSelector.pool", msg: "label value"},
		{name: "node selector shape", file: "runtime-k8s", edits: []edit{{"nodeSelector", `["pool=eval"]`}}, path: "nodeSelector", msg: "must be a JSON object"},
		{name: "toleration exists value", file: "runtime-k8s", edits: []edit{{"tolerations[0].value", `"x"`}}, path: "tolerations[0].value", msg: "empty with operator Exists"},
		{name: "toleration seconds", file: "runtime-k8s", edits: []edit{{"tolerations[1].effect", `"NoSchedule"`}}, path: "tolerations[1].tolerationSeconds", msg: "NoExecute"},
		{name: "toleration effect", file: "runtime-k8s", edits: []edit{{"tolerations[0].effect", `"Never"`}}, path: "tolerations[0].effect", msg: "NoSchedule"},
		{name: "toleration empty key", file: "runtime-k8s", edits: []edit{{"tolerations[1].key", ""}}, path: "tolerations[1].key", msg: "needs operator Exists"},
		{name: "toleration shape", file: "runtime-k8s", edits: []edit{{"tolerations", `{"key":"x"}`}}, path: "tolerations", msg: "must be a JSON array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, kind := []byte(tc.raw), tc.kind
			if tc.file != "" {
				raw, kind = edited(t, tc.file, tc.edits...), kindOfFile(tc.file)
			}
			_, err := Parse(kind, raw, !tc.legacyOK)
			wantProblem(t, err, tc.path, tc.msg)
		})
	}
}

func TestParseLegacyJudgesReadable(t *testing.T) {
	for _, name := range []string{"judge-model", "judge-harness"} {
		s := mustParse(t, name, false)
		if _, err := Parse(Judge, s.Canonical(), true); err == nil {
			t.Errorf("%s: registering a legacy judge succeeded", name)
		}
	}
	j := mustParse(t, "judge-model", false).Judge()
	want := &RubricInput{Ref: &Ref{ID: "helpful", Version: "latest"}}
	if diff := cmp.Diff(want, j.Model.Rubric); diff != "" {
		t.Errorf("model judge rubric (-want +got):\n%s", diff)
	}
	h := mustParse(t, "judge-harness", false).Judge()
	if h.Harness.Rubric.Text != "Be strict about correctness." || h.Harness.Rubric.Ref != nil {
		t.Errorf("harness judge rubric = %+v, want the inline text", h.Harness.Rubric)
	}
}

func TestParseProblemsAreCollected(t *testing.T) {
	_, err := Parse(Rubric, []byte(`{"id":"","version":"latest","text":"","criteria":[{"id":"a","weight":-1}]}`), true)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a *ValidationError", err)
	}
	var paths []string
	for _, p := range ve.Problems {
		paths = append(paths, p.Path)
	}
	if diff := cmp.Diff([]string{"id", "version", "text", "criteria[0].weight"}, paths); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(err.Error(), "invalid argument: rubric spec: id: required") {
		t.Errorf("Error() = %q", err.Error())
	}
}

func TestParseProblemsAreBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"id":"d","version":"1","cases":[`)
	for i := 0; i < 100; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"id":"c","task":""}`)
	}
	b.WriteString("]}")
	_, err := Parse(Dataset, []byte(b.String()), true)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	if len(ve.Problems) != maxProblems || ve.Truncated == 0 || !strings.Contains(err.Error(), "more") {
		t.Errorf("got %d problems, %d truncated; want %d and a count of the rest", len(ve.Problems), ve.Truncated, maxProblems)
	}
}

func TestParseNormalisesEmptyOptionalObjects(t *testing.T) {
	a, err := Parse(Dataset, []byte(`{"id":"d","version":"1","cases":[{"id":"c","task":"t","placement":{},"resources":{}}]}`), true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse(Dataset, []byte(`{"id":"d","version":"1","cases":[{"id":"c","task":"t"}]}`), true)
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest() != b.Digest() {
		t.Errorf("empty placement/resources change the digest:\n%s\n%s", a.Canonical(), b.Canonical())
	}
	// A declared zero is not the same as undeclared.
	c, err := Parse(Dataset, []byte(`{"id":"d","version":"1","cases":[{"id":"c","task":"t","resources":{"gpu":0}}]}`), true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Digest() == b.Digest() {
		t.Error("resources.gpu: 0 has the digest of an undeclared gpu")
	}
}
