package eval

import (
	"encoding/json"
	"net/url"
)

// The commentable resource types a notification's link may name (spec §6).
// This service keeps datasets, harnesses, scorecards, runs and runtimes
// (and judges); views, schedules, issues, cycles, projects and initiatives
// belong to the tools around it, and their links still resolve.
const (
	ResourceDataset    = "dataset"
	ResourceHarness    = "harness"
	ResourceScorecard  = "scorecard"
	ResourceView       = "view"
	ResourceSchedule   = "schedule"
	ResourceRun        = "run"
	ResourceRuntime    = "runtime"
	ResourceIssue      = "issue"
	ResourceCycle      = "cycle"
	ResourceProject    = "project"
	ResourceInitiative = "initiative"
	ResourceJudge      = "judge"
)

// resourcePages are the web view's pages of each resource type: the
// fragment's first segment.
var resourcePages = map[string]string{
	ResourceDataset: "datasets", ResourceHarness: "harnesses", ResourceScorecard: "scorecards", ResourceView: "views",
	ResourceSchedule: "schedules", ResourceRun: "runs", ResourceRuntime: "runtimes", ResourceIssue: "issues",
	ResourceCycle: "cycles", ResourceProject: "projects", ResourceInitiative: "initiatives", ResourceJudge: "judges",
}

// ResourceTypes lists the resource types Href resolves.
func ResourceTypes() []string {
	return []string{ResourceDataset, ResourceHarness, ResourceScorecard, ResourceView, ResourceSchedule, ResourceRun,
		ResourceRuntime, ResourceIssue, ResourceCycle, ResourceProject, ResourceInitiative, ResourceJudge}
}

// NotificationLink is what a notification is about: a resource (type and
// id), and, from older writers, a runId or scorecardId alone, or a
// conversation.
type NotificationLink struct {
	ResourceType   string `json:"resourceType,omitempty"`
	ResourceID     string `json:"resourceId,omitempty"`
	RunID          string `json:"runId,omitempty"`
	ScorecardID    string `json:"scorecardId,omitempty"`
	ConversationID string `json:"conversationId,omitempty"`
}

// LinkTo is the link of a notification about resource typ id. A run's or
// a scorecard's link also carries runId or scorecardId, for readers that
// know only those.
func LinkTo(typ, id string) NotificationLink {
	l := NotificationLink{ResourceType: typ, ResourceID: id}
	switch typ {
	case ResourceRun:
		l.RunID = id
	case ResourceScorecard:
		l.ScorecardID = id
	}
	return l
}

// JSON is l as a notification stores it.
func (l NotificationLink) JSON() json.RawMessage {
	b, _ := json.Marshal(l) // a struct of strings always encodes
	return b
}

// WebViewRoot is where the web view is served; Href's addresses are under it.
const WebViewRoot = "/ui/"

// Href resolves l to the address of what it names in the web view, a path
// with a fragment (/ui/#/scorecards/sc_1). The resource type and id win
// over runId and scorecardId (spec §6); then scorecardId, then runId; a
// conversation resolves to the workspace root with a conversation query
// parameter (/ui/#/?conversation=c_1). It is "" when l names nothing.
func (l NotificationLink) Href() string {
	if page, ok := resourcePages[l.ResourceType]; ok && l.ResourceID != "" {
		return WebViewRoot + "#/" + page + "/" + url.PathEscape(l.ResourceID)
	}
	switch {
	case l.ScorecardID != "":
		return WebViewRoot + "#/scorecards/" + url.PathEscape(l.ScorecardID)
	case l.RunID != "":
		return WebViewRoot + "#/runs/" + url.PathEscape(l.RunID)
	case l.ConversationID != "":
		return WebViewRoot + "#/?conversation=" + url.QueryEscape(l.ConversationID)
	}
	return ""
}

// LinkHref resolves a stored notification link (see Href); "" for one
// that does not decode or names nothing.
func LinkHref(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var l NotificationLink
	if err := json.Unmarshal(raw, &l); err != nil {
		return ""
	}
	return l.Href()
}
