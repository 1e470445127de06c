package scorecards

import (
	"errors"
	"strings"
	"testing"

	"svc/internal/platform/derrors"
)

func TestDecodeIngestNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"kind", `{"traces":[{"trace":[{"kind":"span","name":"s"},{"kind":"bogus"}]}]}`, "traces[0].trace[1].kind: unknown event kind"},
		{"no kind", `{"traces":[{"trace":[{}]}]}`, "traces[0].trace[0].kind: is required"},
		{"role", `{"traces":[{"trace":[{"kind":"message"}]}]}`, "traces[0].trace[0].role: is required"},
		{"message", `{"traces":[{"trace":[{"kind":"error"}]}]}`, "traces[0].trace[0].message: is required"},
		{"type", `{"traces":[{"trace":[{"kind":"llm_call","durationMs":"slow"}]}]}`, "traces[0].trace[0].durationMs: must be a JSON number"},
		{"time", `{"traces":[{"trace":[{"kind":"span","name":"s","ts":"yesterday"}]}]}`, "traces[0].trace[0]"},
		{"member", `{"traces":[{"trace":[{"kind":"span","name":"s","colour":1}]}]}`, "traces[0].trace[0].colour: unknown member"},
		{"negative", `{"traces":[{"trace":[{"kind":"llm_call","outputTokens":-2}]}]}`, "traces[0].trace[0].outputTokens: must not be negative"},
		{"second trace", `{"traces":[{"caseId":"a","trace":[{"kind":"span","name":"s"}]},{"caseId":"b","trace":[{"kind":"tool_call"}]}]}`, "traces[1].trace[0].name"},
		{"too many", `{"traces":[` + strings.Repeat(`{"trace":[{"kind":"span","name":"s"}]},`, MaxIngestTraces) + `{"trace":[{"kind":"span","name":"s"}]}]}`, "at most 1000 traces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeIngest([]byte(tc.body))
			if !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("DecodeIngest = %v, want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
	req, err := DecodeIngest([]byte(`{"traces":[{"caseId":"a","trace":[{"kind":"tool_call","name":"t","input":{"q":1}}]}]}`))
	if err != nil || len(req.events) != 1 || req.events[0][0].Name != "t" {
		t.Fatalf("DecodeIngest of a valid body = %+v, %v", req.events, err)
	}
}
