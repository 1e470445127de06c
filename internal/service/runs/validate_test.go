package runs

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

// wantRefusal checks one row: want "" accepts, otherwise err is ErrInvalid
// (a 400) and its message contains want, which names the field and says
// what to send.
func wantRefusal(t *testing.T, what string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("%s = %v, want nil", what, err)
	case want == "":
	case err == nil:
		t.Fatalf("%s = nil, want a refusal containing %q", what, want)
	case !errors.Is(err, derrors.ErrInvalid):
		t.Fatalf("%s = %v, want errors.Is ErrInvalid", what, err)
	case !strings.Contains(err.Error(), want):
		t.Fatalf("%s = %q, want it to contain %q", what, err, want)
	}
}

func TestSubmitRequestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*SubmitRequest)
		want string
	}{
		{name: "minimal", edit: func(*SubmitRequest) {}},
		{name: "every option", edit: func(r *SubmitRequest) {
			r.Runtime, r.WebhookURL, r.Case.Tags, r.Case.TimeoutSec = "local", "https://example.com/hook", []string{"smoke"}, 30
			r.Case.Graders = []registry.Grader{{ID: "e", Params: map[string]any{"kind": "exit_code", "expect": 0}}}
		}},
		{name: "no harness id", edit: func(r *SubmitRequest) { r.Harness.ID = "" },
			want: "harness.id is required: the registered harness to run (GET /harnesses lists them)"},
		{name: "bad harness id", edit: func(r *SubmitRequest) { r.Harness.ID = "My Agent" }, want: "harness.id: "},
		{name: "no harness version", edit: func(r *SubmitRequest) { r.Harness.Version = "" },
			want: `harness.version is required: an exact version or "latest"`},
		{name: "bad harness version", edit: func(r *SubmitRequest) { r.Harness.Version = "1 0" }, want: "harness.version: "},
		{name: "bad runtime", edit: func(r *SubmitRequest) { r.Runtime = "../local" }, want: "runtime: "},
		{name: "case without id", edit: func(r *SubmitRequest) { r.Case.ID = "" }, want: "id: required: a case id"},
		{name: "case id with a space", edit: func(r *SubmitRequest) { r.Case.ID = "two words" }, want: "without whitespace"},
		{name: "case without task", edit: func(r *SubmitRequest) { r.Case.Task = nil }, want: "task: required: the task"},
		{name: "blank task", edit: func(r *SubmitRequest) { r.Case.Task = "  " }, want: "task: must not be empty"},
		{name: "task of the wrong type", edit: func(r *SubmitRequest) { r.Case.Task = 3.0 }, want: "task: must be a prompt string or an object"},
		{name: "grader of an unknown kind", edit: func(r *SubmitRequest) {
			r.Case.Graders = []registry.Grader{{ID: "x", Params: map[string]any{"kind": "no_such_kind"}}}
		}, want: "case.graders[0]: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := SubmitRequest{Harness: registry.Ref{ID: "agent", Version: "latest"}, Case: registry.EvalCase{ID: "c1", Task: "say hi"}}
			tc.edit(&r)
			wantRefusal(t, fmt.Sprintf("Validate(%+v)", r), r.Validate(), tc.want)
		})
	}
}

func TestReadRequestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  ReadRequest
		want string
	}{
		{name: "ids", req: ReadRequest{IDs: []string{"n1", "n2"}}},
		{name: "all", req: ReadRequest{All: true}},
		{name: "1000 ids", req: ReadRequest{IDs: make([]string, 1000)}},
		{name: "neither", req: ReadRequest{}, want: "send ids (the notifications to mark read) or all:true"},
		{name: "both", req: ReadRequest{IDs: []string{"n1"}, All: true}, want: "send either ids or all:true, not both"},
		{name: "too many ids", req: ReadRequest{IDs: make([]string, 1001)}, want: "at most 1000 ids per request, not 1001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantRefusal(t, fmt.Sprintf("Validate(%d ids, all %v)", len(tc.req.IDs), tc.req.All), tc.req.Validate(), tc.want)
		})
	}
}

func TestPageLimit(t *testing.T) {
	for _, tc := range []struct {
		in, want int
		wantErr  string
	}{
		{in: 0, want: DefaultPage},
		{in: 1, want: 1},
		{in: MaxPage, want: MaxPage},
		{in: -1, wantErr: "limit must be between 1 and 500, not -1"},
		{in: MaxPage + 1, wantErr: "limit must be between 1 and 500, not 501"},
	} {
		got, err := pageLimit(tc.in)
		wantRefusal(t, fmt.Sprintf("pageLimit(%d)", tc.in), err, tc.wantErr)
		if tc.wantErr == "" && got != tc.want {
			t.Errorf("pageLimit(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestCursor: a cursor this service issued reads back as the row it names;
// anything else is a 400 that says which cursor to pass.
func TestCursor(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 30, 0, 123456789, time.UTC)
	for _, id := range []string{"run_1", "id|with|bars"} {
		gotT, gotID, err := decodeCursor(encodeCursor(at, id))
		if err != nil || !gotT.Equal(at) || gotID != id {
			t.Errorf("decodeCursor(encodeCursor(%v, %q)) = %v, %q, %v; want the same back", at, id, gotT, gotID, err)
		}
	}
	if gotT, gotID, err := decodeCursor(""); err != nil || !gotT.IsZero() || gotID != "" {
		t.Errorf(`decodeCursor("") = %v, %q, %v; want the first page`, gotT, gotID, err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	for _, c := range []string{"not base64!", b64([]byte("no bar")), b64([]byte("123|")), b64([]byte("soon|run_1"))} {
		_, _, err := decodeCursor(c)
		wantRefusal(t, fmt.Sprintf("decodeCursor(%q)", c), err,
			fmt.Sprintf("cursor %q is not one this service issued; pass the X-Svc-Next-Cursor of the previous page", c))
	}
}

func TestOneLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"one line", "one line"},
		{"first\nsecond\nthird", "first"},
		{"\nafter a newline", ""},
	} {
		if got := oneLine(errors.New(tc.in)); got != tc.want {
			t.Errorf("oneLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
