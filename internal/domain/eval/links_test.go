package eval

import (
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestNotificationLinksResolve: a notification's link resolves to a page of
// the web view for every commentable resource type of spec §6; the
// resource type and id win over runId and scorecardId; a conversation
// resolves to the workspace root with a conversation query parameter; and
// the web view has a route for every address Href makes.
func TestNotificationLinksResolve(t *testing.T) {
	for _, tc := range []struct {
		name string
		link NotificationLink
		want string
	}{
		{"dataset", NotificationLink{ResourceType: "dataset", ResourceID: "qa"}, "/ui/#/datasets/qa"},
		{"harness", NotificationLink{ResourceType: "harness", ResourceID: "agent"}, "/ui/#/harnesses/agent"},
		{"scorecard", LinkTo(ResourceScorecard, "sc_1"), "/ui/#/scorecards/sc_1"},
		{"view", NotificationLink{ResourceType: "view", ResourceID: "v1"}, "/ui/#/views/v1"},
		{"schedule", NotificationLink{ResourceType: "schedule", ResourceID: "nightly"}, "/ui/#/schedules/nightly"},
		{"run", LinkTo(ResourceRun, "run_1"), "/ui/#/runs/run_1"},
		{"runtime", NotificationLink{ResourceType: "runtime", ResourceID: "gpu-pool"}, "/ui/#/runtimes/gpu-pool"},
		{"issue", NotificationLink{ResourceType: "issue", ResourceID: "ISS-7"}, "/ui/#/issues/ISS-7"},
		{"cycle", NotificationLink{ResourceType: "cycle", ResourceID: "c-2024-05"}, "/ui/#/cycles/c-2024-05"},
		{"project", NotificationLink{ResourceType: "project", ResourceID: "p1"}, "/ui/#/projects/p1"},
		{"initiative", NotificationLink{ResourceType: "initiative", ResourceID: "i1"}, "/ui/#/initiatives/i1"},
		{"judge", NotificationLink{ResourceType: "judge", ResourceID: "len"}, "/ui/#/judges/len"},
		// The web view used to check runId and scorecardId first.
		{"type and id win over runId", NotificationLink{ResourceType: "dataset", ResourceID: "qa", RunID: "run_1"}, "/ui/#/datasets/qa"},
		{"type and id win over scorecardId", NotificationLink{ResourceType: "issue", ResourceID: "ISS-7", ScorecardID: "sc_1", RunID: "run_1"}, "/ui/#/issues/ISS-7"},
		{"type and id win over conversationId", NotificationLink{ResourceType: "run", ResourceID: "run_2", ConversationID: "c_1"}, "/ui/#/runs/run_2"},
		{"scorecardId alone", NotificationLink{ScorecardID: "sc_1"}, "/ui/#/scorecards/sc_1"},
		{"runId alone", NotificationLink{RunID: "run_1"}, "/ui/#/runs/run_1"},
		{"an unknown type falls back to runId", NotificationLink{ResourceType: "widget", ResourceID: "w", RunID: "run_1"}, "/ui/#/runs/run_1"},
		{"a type without an id falls back to scorecardId", NotificationLink{ResourceType: "scorecard", ScorecardID: "sc_1"}, "/ui/#/scorecards/sc_1"},
		{"conversation", NotificationLink{ConversationID: "c_1"}, "/ui/#/?conversation=c_1"},
		{"conversation, escaped", NotificationLink{ConversationID: "a b&c"}, "/ui/#/?conversation=a+b%26c"},
		{"id, escaped", NotificationLink{ResourceType: "dataset", ResourceID: "a/b c"}, "/ui/#/datasets/a%2Fb%20c"},
		{"nothing", NotificationLink{}, ""},
	} {
		if got := tc.link.Href(); got != tc.want {
			t.Errorf("%s: Href(%+v) = %q, want %q", tc.name, tc.link, got, tc.want)
		}
		if got := LinkHref(tc.link.JSON()); got != tc.want {
			t.Errorf("%s: LinkHref(%s) = %q, want %q", tc.name, tc.link.JSON(), got, tc.want)
		}
	}
	if got := LinkHref([]byte(`{"runId":"run_1","resourceType":"run","resourceId":"run_1"}`)); got != "/ui/#/runs/run_1" {
		t.Errorf("a link stored before NotificationLink resolves to %q, want /ui/#/runs/run_1", got)
	}
	for _, raw := range []string{"", "null", "[1]", `"x"`} {
		if got := LinkHref([]byte(raw)); got != "" {
			t.Errorf("LinkHref(%q) = %q, want empty", raw, got)
		}
	}

	// Every address has a page in the web view's route table.
	app, err := os.ReadFile("../../../ui/static/js/app.js")
	if err != nil {
		t.Fatal(err)
	}
	var routes [][]string
	for _, m := range regexp.MustCompile(`\['(/[^']*)', \(\) => import`).FindAllStringSubmatch(string(app), -1) {
		routes = append(routes, strings.FieldsFunc(m[1], func(r rune) bool { return r == '/' }))
	}
	if len(routes) < 10 {
		t.Fatalf("found %d routes in ui/static/js/app.js; has its route table changed shape?", len(routes))
	}
	hrefs := []string{NotificationLink{ConversationID: "c_1"}.Href()}
	for _, typ := range ResourceTypes() {
		hrefs = append(hrefs, NotificationLink{ResourceType: typ, ResourceID: "x-1"}.Href())
	}
	for _, href := range hrefs {
		fragment, ok := strings.CutPrefix(href, WebViewRoot+"#")
		if !ok {
			t.Errorf("href %q is not under %s#", href, WebViewRoot)
			continue
		}
		path, _, _ := strings.Cut(fragment, "?")
		if !routed(routes, path) {
			t.Errorf("href %q: the web view has no route for %q", href, path)
		}
		if _, err := url.Parse(href); err != nil {
			t.Errorf("href %q does not parse: %v", href, err)
		}
	}
}

// routed reports whether path matches one of the web view's route
// patterns, as app.js's match does (":name" matches any one segment).
func routed(routes [][]string, path string) bool {
	parts := strings.FieldsFunc(path, func(r rune) bool { return r == '/' })
	for _, want := range routes {
		if len(want) != len(parts) {
			continue
		}
		ok := true
		for i := range want {
			if !strings.HasPrefix(want[i], ":") && want[i] != parts[i] {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}
