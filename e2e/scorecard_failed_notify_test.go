package e2e

import (
	"path/filepath"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/testing/testwait"
)

// TestScorecardFailedNotification (spec §2.10, §6): a batch none of whose
// cases could start (its harness command is missing) ends failed, and its
// creator's feed gets exactly one scorecard_failed, linked to the scorecard
// (scorecardId, resourceType and resourceId; href its web view page), and
// no run notification for its child runs; a webhook channel subscribed to
// scorecard_failed receives it once, signed the Standard Webhooks way.
func TestScorecardFailedNotification(t *testing.T) {
	svc := start(t, devEnv(filepath.Join(t.TempDir(), "data"), "SVC_WEBHOOK_ALLOW=127.0.0.1"), true, "dev")
	hook := newCapture(t, 204)
	var wh channelView
	if code := call(t, "POST", svc.URL+"/notification-channels", map[string]any{"type": "webhook", "url": hook.srv.URL + "/in",
		"kinds": []string{eval.NotifyScorecardFailed}}, &wh); code != 201 || wh.Secret == "" {
		t.Fatalf("POST /notification-channels = %d %+v, want 201 with its secret", code, wh)
	}
	rulesRegister(t, svc.URL, "/harnesses", map[string]any{"id": "ghost", "version": "1.0.0", "kind": "process", "command": []string{"/nonexistent/agent.py"}})
	rulesRegister(t, svc.URL, "/datasets", map[string]any{"id": "qa", "version": "1.0.0", "cases": rulesCases("c", 2)})
	id := rulesSubmit(t, svc.URL, "qa", "ghost", nil)
	sc := rulesScorecard(t, svc.URL, id, 2*time.Minute)
	if sc.Status != eval.ScorecardFailed || sc.Error == nil || sc.Error.Code != eval.CodeBatchFailed {
		t.Fatalf("batch %s ended %s with %+v, want failed with %s", id, sc.Status, sc.Error, eval.CodeBatchFailed)
	}

	wantLink := eval.NotificationLink{ScorecardID: id, ResourceType: eval.ResourceScorecard, ResourceID: id}
	wantHref := "/ui/#/scorecards/" + id
	var failed []feedItem
	testwait.Until(t, 30*time.Second, "the scorecard_failed notification", func() bool {
		failed = failed[:0]
		for _, n := range feed(t, svc.URL) {
			switch n.Kind {
			case eval.NotifyScorecardFailed:
				failed = append(failed, n)
			case eval.NotifyRunCompleted, eval.NotifyRunFailed, eval.NotifyScorecardCompleted:
				t.Fatalf("feed has %s %s: a failed batch's child runs never notify, nor does it complete", n.Kind, n.ID)
			}
		}
		return len(failed) > 0
	})
	if len(failed) != 1 {
		t.Fatalf("feed has %d scorecard_failed notifications %+v, want exactly one", len(failed), failed)
	}
	n := failed[0]
	if n.ID != eval.NotifyScorecardFailed+":"+id || n.Link != wantLink || n.Href != wantHref {
		t.Errorf("scorecard_failed %+v, want id %s, link %+v and href %s", n, eval.NotifyScorecardFailed+":"+id, wantLink, wantHref)
	}

	testwait.Until(t, time.Minute, "the webhook channel to get scorecard_failed", func() bool { return len(hook.all()) >= 1 })
	got := hook.all()
	if len(got) != 1 {
		t.Fatalf("the webhook channel got %d deliveries, want one", len(got))
	}
	if mid := got[0].Header.Get("webhook-id"); mid != "ntf_"+wh.ID+"_"+n.ID {
		t.Errorf("webhook-id %q, want ntf_%s_%s", mid, wh.ID, n.ID)
	}
	payload := verifyStandardWebhook(t, wh.Secret, got[0])
	data, _ := payload["data"].(map[string]any)
	link, _ := data["link"].(map[string]any)
	if payload["type"] != "notification.created" || data["kind"] != eval.NotifyScorecardFailed || data["id"] != n.ID ||
		data["recipient"] != "dev" || data["href"] != wantHref || link["scorecardId"] != id {
		t.Errorf("verified payload %v, want the scorecard_failed notification of %s with its link and href", payload, id)
	}
	// The feed still holds exactly one after delivery.
	count := 0
	for _, f := range feed(t, svc.URL) {
		if f.Kind == eval.NotifyScorecardFailed {
			count++
		}
	}
	if count != 1 {
		t.Errorf("after delivery the feed has %d scorecard_failed, want one", count)
	}
}
