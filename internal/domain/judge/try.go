package judge

import (
	"encoding/json"
	"fmt"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// A try record is the record of a code-judge try (POST /judges/try, spec
// §4.4): the judge and the one case it judges, stored beside the run of
// trigger judge-preview that the try starts, and read by the worker that
// runs it. It is pure: the run service writes it, the activities read it,
// both through the store.

// TryStoreKind is the registry table kind of a try record. Like a model
// binding it is not a registry.Kind: it is never listed or resolved as a
// spec; its id is the run id, its one version TryVersion.
const TryStoreKind = "judge-try"

// TryVersion is the version of a try record's one row.
const TryVersion = "1"

// TryRecord is what a try runs: the judge's spec (an inline one, or the
// registered version the try resolved) and the judge's input, in the
// shape a code judge reads (judges.Input).
type TryRecord struct {
	// Judge is the canonical JSON of the judge spec.
	Judge json.RawMessage `json:"judge"`
	// Ref is the registered judge, "id@version"; empty for an inline spec.
	Ref string `json:"ref,omitempty"`
	// Source is the evidence source, A, B or C.
	Source string   `json:"source"`
	Input  TryInput `json:"input"`
}

// TryInput is the judge's input file: {case, trace, snapshot, evidence}.
type TryInput struct {
	Case     registry.EvalCase `json:"case"`
	Trace    []eval.TraceEvent `json:"trace"`
	Snapshot *eval.Snapshot    `json:"snapshot"`
	Evidence *eval.Evidence    `json:"evidence"`
}

// Spec parses the record's judge.
func (r TryRecord) Spec() (*registry.JudgeSpec, error) {
	s, err := registry.Parse(registry.Judge, r.Judge, false)
	if err != nil {
		return nil, fmt.Errorf("the judge of a try record: %w", err)
	}
	j := s.Judge()
	if j == nil {
		return nil, fmt.Errorf("the judge of a try record is not a judge spec")
	}
	return j, nil
}
