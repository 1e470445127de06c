package e2e

import (
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"svc/auth/authtest"
	"svc/internal/domain/eval"
	"svc/internal/testing/testwait"
)

// TestPrivateTeamDatasetScorecardIsTheTeams (issue 30, finding 6): a batch
// over a private team's dataset, and its child runs and trajectories,
// show the cases' tasks; a member outside the team reads none of them
// (404, absent from every list), the team's member and the workspace's
// admin read all of them. Through the real binary, with people signed in
// by a real loopback OIDC issuer.
func TestPrivateTeamDatasetScorecardIsTheTeams(t *testing.T) {
	issuer := authtest.NewIssuer(t)
	svc := start(t, devEnv(filepath.Join(t.TempDir(), "data"), "OIDC_ISSUER="+issuer.URL), true, "dev")
	person := func(sub string) []string {
		tok := issuer.Mint(map[string]any{"sub": sub, "workspace": "default", "roles": []string{"member"}})
		return []string{"Authorization", "Bearer " + tok}
	}
	alice, bob := person("alice"), person("bob")
	var admin []string // no bearer: svc dev's dev principal, admin of default
	do := func(who []string, method, path string, body, out any) int {
		t.Helper()
		return call(t, method, svc.URL+path, body, out, who...)
	}
	mustDo := func(who []string, method, path string, body any, want int) {
		t.Helper()
		if code := do(who, method, path, body, nil); code != want {
			t.Fatalf("%s %s = %d, want %d", method, path, code, want)
		}
	}
	// First use makes each a member of default (the token's claim).
	mustDo(alice, "GET", "/me", nil, 200)
	mustDo(bob, "GET", "/me", nil, 200)
	mustDo(admin, "POST", "/teams", map[string]any{"id": "secret", "private": true}, 201)
	mustDo(admin, "PUT", "/teams/secret/members/alice", nil, 204)

	mustDo(alice, "POST", "/harnesses", map[string]any{"id": "echo", "version": "1.0.0", "kind": "process",
		"command": []string{"/bin/sh", "-c", "echo the answer"}}, 201)
	mustDo(alice, "POST", "/datasets", map[string]any{"id": "private-ds", "version": "1.0.0",
		"cases": []map[string]any{{"id": "c1", "task": "the team's secret task"}, {"id": "c2", "task": "another secret task"}}}, 201)
	mustDo(alice, "POST", "/datasets/private-ds/team", map[string]any{"teamId": "secret"}, 200)

	var sc eval.Scorecard
	if code := do(alice, "POST", "/scorecards", map[string]any{
		"dataset": map[string]string{"id": "private-ds", "version": "1.0.0"},
		"harness": map[string]string{"id": "echo", "version": "1.0.0"}}, &sc); code != 202 {
		t.Fatalf("alice's POST /scorecards = %d, want 202", code)
	}
	testwait.Until(t, 2*time.Minute, "the batch to end", func() bool {
		if code := do(alice, "GET", "/scorecards/"+sc.ID, nil, &sc); code != 200 {
			t.Fatalf("alice's GET /scorecards/%s = %d", sc.ID, code)
		}
		return eval.ScorecardTerminal(sc.Status)
	})
	if sc.Status != eval.ScorecardSucceeded || sc.AudienceTeam != "secret" {
		t.Fatalf("batch ended %s with audienceTeam %q, want succeeded and secret", sc.Status, sc.AudienceTeam)
	}
	// Spec §2.3: createdBy is the submitter's subject.
	if sc.CreatedBy != "alice" {
		t.Errorf("createdBy = %q, want the submitter alice", sc.CreatedBy)
	}
	var kids []eval.Run
	if code := do(alice, "GET", "/runs?scorecardId="+sc.ID, nil, &kids); code != 200 || len(kids) != 2 {
		t.Fatalf("alice's GET /runs?scorecardId= = %d with %d runs, want 200 with 2", code, len(kids))
	}
	child := kids[0].ID

	paths := []string{
		"/scorecards/" + sc.ID, "/scorecards/" + sc.ID + "?view=summary", "/groups/" + sc.ID,
		"/scorecards/diff?baseline=" + sc.ID + "&candidate=" + sc.ID,
		"/runs/" + child, "/runs/" + child + "/trajectory", "/runs/" + child + "/logs", "/trajectories/" + child,
	}
	for _, who := range []struct {
		name    string
		headers []string
		want    int
	}{{"alice (in the team)", alice, 200}, {"the admin", admin, 200}, {"bob (outside the team)", bob, 404}} {
		for _, p := range paths {
			if code := do(who.headers, "GET", p, nil, nil); code != who.want {
				t.Errorf("%s: GET %s = %d, want %d", who.name, p, code, who.want)
			}
		}
		sees := who.want == 200
		var runs []eval.Run
		do(who.headers, "GET", "/runs?scorecardId="+sc.ID, nil, &runs)
		if got := len(runs) == 2; got != sees {
			t.Errorf("%s: GET /runs?scorecardId= lists %d runs", who.name, len(runs))
		}
		runs = nil
		do(who.headers, "GET", "/runs?scope=all", nil, &runs)
		if got := slices.ContainsFunc(runs, func(r eval.Run) bool { return r.ID == child }); got != sees {
			t.Errorf("%s: GET /runs?scope=all lists the child: %v, want %v", who.name, got, sees)
		}
		var list []eval.Scorecard
		do(who.headers, "GET", "/scorecards", nil, &list)
		if got := slices.ContainsFunc(list, func(s eval.Scorecard) bool { return s.ID == sc.ID }); got != sees {
			t.Errorf("%s: GET /scorecards lists the batch: %v, want %v", who.name, got, sees)
		}
		var metas []struct {
			RunID string `json:"runId"`
		}
		do(who.headers, "GET", "/trajectories?limit=500", nil, &metas)
		if got := slices.ContainsFunc(metas, func(m struct {
			RunID string `json:"runId"`
		}) bool {
			return m.RunID == child
		}); got != sees {
			t.Errorf("%s: GET /trajectories lists the child's: %v, want %v", who.name, got, sees)
		}
		var q struct {
			Scanned int `json:"scanned"`
		}
		if code := do(who.headers, "POST", "/scorecards/query", map[string]any{"groupBy": []string{"dataset"}}, &q); code != 200 {
			t.Errorf("%s: POST /scorecards/query = %d", who.name, code)
		}
		if got := q.Scanned == 1; got != sees {
			t.Errorf("%s: POST /scorecards/query scanned %d batches (the private one visible: %v)", who.name, q.Scanned, sees)
		}
	}
	// A single run of a private team's harness is the team's too.
	mustDo(alice, "POST", "/harnesses", map[string]any{"id": "secret-agent", "version": "1.0.0", "kind": "process",
		"command": []string{"/bin/sh", "-c", "echo the team's agent"}}, 201)
	mustDo(alice, "POST", "/harnesses/secret-agent/team", map[string]any{"teamId": "secret"}, 200)
	var single eval.Run
	if code := do(alice, "POST", "/runs", map[string]any{"harness": map[string]string{"id": "secret-agent", "version": "1.0.0"},
		"case": map[string]any{"id": "one", "task": "t"}}, &single); code != 202 {
		t.Fatalf("alice's POST /runs = %d, want 202", code)
	}
	mustDo(alice, "GET", "/runs/"+single.ID, nil, 200)
	mustDo(bob, "GET", "/runs/"+single.ID, nil, 404)

	// A pull from the ledger of the team's trajectory makes a batch that is
	// the team's: a copy never widens who reads it.
	var pulled eval.Scorecard
	if code := do(alice, "POST", "/scorecards/ingest/pull", map[string]any{"source": map[string]string{"name": "svc"},
		"runs": []map[string]string{{"caseId": "copy", "runId": child}}}, &pulled); code != 202 {
		t.Fatalf("alice's pull of the team's trajectory = %d, want 202", code)
	}
	if pulled.AudienceTeam != "secret" {
		t.Errorf("the pulled batch's audienceTeam = %q, want secret", pulled.AudienceTeam)
	}
	mustDo(alice, "GET", "/scorecards/"+pulled.ID, nil, 200)
	mustDo(bob, "GET", "/scorecards/"+pulled.ID, nil, 404)

	// Bob's refusals name nothing of the team's.
	var refusal struct {
		Error struct{ Message string } `json:"error"`
	}
	do(bob, "GET", "/runs/"+url.PathEscape(child), nil, &refusal)
	mustContain(t, refusal.Error.Message, "no run")
}
