package judges_test

import (
	"encoding/base64"
	"net/http"
	"testing"

	"svc/activities/judges"
	"svc/internal/domain/eval"
	"svc/internal/domain/judge"
	"svc/internal/domain/registry"
	"svc/internal/testing/judgetest"
)

// A model judge whose inputs name the screenshot and dom sends the browser
// snapshot's screenshot as an image part beside the prompt, whose text is
// the preview's (prompt.Render) with the DOM in it.
func TestModelVerdictSendsScreenshot(t *testing.T) {
	srv := judgetest.New(t, func(string) (int, string) { return http.StatusOK, `{"score": 1, "pass": true}` })
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\npixels"))
	eff := judge.Effective{RubricText: "Does the page show the total?", Inputs: []string{registry.InputDOM, registry.InputScreenshot}}
	ev := judge.Evidence{Case: registry.EvalCase{ID: "b1", Task: "open the cart"},
		Snapshot: &eval.Snapshot{Kind: "browser", DOM: "<p>total: 391</p>", Screenshot: png}}
	ep := judges.Endpoint{Name: "grader", BaseURL: srv.BaseURL(), Model: "gpt-test", Key: "sk-test"}
	scores, _, err := judges.ModelVerdict(t.Context(), "page", eff, ev, ep)
	if err != nil {
		t.Fatal(err)
	}
	if len(scores) != 1 || scores[0].Value != 1 {
		t.Fatalf("scores = %+v", scores)
	}
	got := srv.Received()
	if len(got) != 1 {
		t.Fatalf("%d calls, want 1", len(got))
	}
	want := judge.Render(eff, ev)
	if got[0].Prompt != want.Prompt {
		t.Errorf("the server got the prompt\n%s\nwant the preview's\n%s", got[0].Prompt, want.Prompt)
	}
	if len(got[0].Images) != 1 || got[0].Images[0] != "data:image/png;base64,"+png {
		t.Errorf("the server got images %v, want the screenshot as a PNG data URL", got[0].Images)
	}
}
