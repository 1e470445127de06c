package flows

import "testing"

// TestErrorTypesKeepTheirValues: the error types are recorded in the
// histories of running workflows (and the committed ones that
// workflows/testdata replays), and a retry policy refuses by them: a
// changed value would have a workflow miss the failure it checks for.
func TestErrorTypesKeepTheirValues(t *testing.T) {
	for got, want := range map[ErrorType]string{
		JudgesPhase:    "JudgesPhase",
		PersistPhase:   "PersistPhase",
		WorkerGone:     "WorkerGone",
		WebhookRefused: "WebhookRefused",
		CaseMissing:    "CaseMissing",
		DatasetGone:    "DatasetGone",
		TraceCorrupt:   "TraceCorrupt",
		PullCorrupt:    "PullCorrupt",
		ScoringAborted: "ScoringAborted",
	} {
		if string(got) != want {
			t.Errorf("error type %q, want %q", got, want)
		}
	}
}
