package registry

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseOrigin(t *testing.T) {
	o, canon, err := ParseOrigin([]byte(`{"via":"mcp","from":{"type":"scorecard","id":"sc_1","label":"nightly"},"agentId":"ag_1","conversationId":"c_9","note":"made from a failing case"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := CapabilityOrigin{Via: ViaMCP, From: &OriginFrom{Type: FromScorecard, ID: "sc_1", Label: "nightly"}, AgentID: "ag_1", ConversationID: "c_9", Note: "made from a failing case"}
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := string(canon); got != `{"agentId":"ag_1","conversationId":"c_9","from":{"id":"sc_1","label":"nightly","type":"scorecard"},"note":"made from a failing case","via":"mcp"}` {
		t.Errorf("canonical = %s", got)
	}
	if err := want.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestParseOriginRefusals(t *testing.T) {
	for _, tc := range []struct {
		in, path, msg string
	}{
		{`{}`, "via", "required"},
		{`{"via":"email"}`, "via", "must be one of web, mcp, ci, import"},
		{`{"via":"web","from":{"id":"x"}}`, "from.type", "required"},
		{`{"via":"web","from":{"type":"ticket","id":"x"}}`, "from.type", "issue, scorecard, run, other"},
		{`{"via":"web","from":{"type":"run"}}`, "from.id", "required"},
		{`{"via":"ci","runId":"` + strings.Repeat("r", 257) + `"}`, "runId", "at most 256"},
		{`{"via":"ci","note":"` + strings.Repeat("n", 2001) + `"}`, "note", "at most 2000"},
		{`{"via":"ci","agentName":"a\nb"}`, "agentName", "control"},
		{`{"via":"ci","actor":"me"}`, "actor", "unknown field"},
	} {
		_, _, err := ParseOrigin([]byte(tc.in))
		wantProblem(t, err, tc.path, tc.msg)
	}
}
