package scorecards

import (
	"testing"
)

// FuzzDecodePull: any body either decodes into a request that validates
// again, or is refused as invalid; it never panics.
func FuzzDecodePull(f *testing.F) {
	for _, s := range []string{
		`{"source":{"name":"svc"},"runs":[{"runId":"r1"}]}`,
		`{"dataset":{"id":"ds","version":"latest"},"source":{"name":"lf","project":"p"},"runs":[{"caseId":"a","runId":"t"}],"judges":[{"id":"j"}]}`,
		`{"source":{"kind":"langsmith","endpoint":"https://api.smith.langchain.com","authSecret":"k","correlate":"metadata:svc_run_id"},"runs":[{"runId":"x"}]}`,
		`{"source":{"kind":"otel","endpoint":"http://jaeger:16686"},"runs":[{"runId":"5b8efff798038103d269b633813fc60c"},{"runId":"5b8efff798038103d269b633813fc60c"}]}`,
		`{"source":{},"runs":[]}`, `null`, `{}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodePull(body)
		if err != nil {
			return
		}
		if err := req.Validate(); err != nil {
			t.Fatalf("a decoded request does not validate again: %v", err)
		}
		if len(req.Runs) == 0 || (req.Source.Name == "" && req.Source.Kind == "") {
			t.Fatalf("accepted a request without runs or source: %s", body)
		}
	})
}
