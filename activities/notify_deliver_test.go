package activities

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/integrations/webhooks"
	"svc/internal/platform/secrets"
	"svc/store"
	"svc/store/sqlite/sqlitetest"
)

// TestNotificationDrainer: a notification reaches its recipient's
// subscribed channels: a webhook channel signed the Standard Webhooks way
// with the channel's own secret, a Slack channel as {"text": ...}; a
// channel whose receiver answers 500 is retried and disabled after 5
// failures in a row, with a notice in the owner's feed; nothing reaches a
// channel of another kind.
func TestNotificationDrainer(t *testing.T) {
	st := sqlitetest.New(t)
	ctx := t.Context()
	sealer, err := secrets.NewSealer("MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=")
	if err != nil {
		t.Fatal(err)
	}
	guard, err := webhooks.NewGuard("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string][]*http.Request{}
	bodies := map[string][]string{}
	recv := func(name string, status int) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			got[name] = append(got[name], r)
			bodies[name] = append(bodies[name], string(b))
			mu.Unlock()
			w.WriteHeader(status)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	hook, slack, broken, other := recv("hook", 204), recv("slack", 200), recv("broken", 500), recv("other", 200)
	secret, _ := webhooks.NewSecret()
	sealed, err := sealer.Seal("acme", eval.ChannelSecretName("nch_hook"), []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []store.NotificationChannel{
		{ID: "nch_hook", Workspace: "acme", Owner: "user:alice", Type: store.ChannelWebhook, URL: hook.URL + "/in", Secret: sealed},
		{ID: "nch_slack", Workspace: "acme", Owner: "user:alice", Type: store.ChannelSlack, URL: slack.URL, Kinds: []string{eval.NotifyRunFailed}},
		{ID: "nch_broken", Workspace: "acme", Owner: "user:alice", Type: store.ChannelSlack, URL: broken.URL},
		{ID: "nch_other", Workspace: "acme", Owner: "user:alice", Type: store.ChannelSlack, URL: other.URL, Kinds: []string{eval.NotifyScorecardCompleted}},
	} {
		if _, err := st.CreateNotificationChannel(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC()
	d := &NotificationDrainer{Store: st, Sealer: sealer, Guard: guard, Backoff: time.Second, Now: func() time.Time { return now }}
	run := eval.Run{ID: "run_1", Tenant: "acme", CaseID: "c1", CreatedBy: "user:alice", Status: eval.StatusFailed, Error: &eval.Error{Message: "exit 1"}}
	n, _ := eval.RunNotice(run)
	if _, _, err := st.AddNotification(ctx, NoticeRow("acme", n)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		if _, err := d.DrainOnce(ctx); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Minute) // past every backoff
	}
	mu.Lock()
	defer mu.Unlock()
	// The all-kinds webhook gets the run's notification, then the notice
	// that the broken channel was disabled.
	if len(got["hook"]) != 2 || !strings.Contains(bodies["hook"][1], eval.NotifyChannelDisabled) {
		t.Fatalf("webhook channel got %q, want the run's notification and the disabled notice", bodies["hook"])
	}
	r := got["hook"][0]
	if err := webhooks.Verify(secret, r.Header, []byte(bodies["hook"][0]), now, time.Hour); err != nil {
		t.Errorf("the webhook delivery does not verify with the channel's secret: %v", err)
	}
	var payload NotificationPayload
	if err := json.Unmarshal([]byte(bodies["hook"][0]), &payload); err != nil || payload.Data.ID != n.ID || payload.Data.Href != "/ui/#/runs/run_1" || payload.Type != "notification.created" {
		t.Errorf("webhook body = %s (%v)", bodies["hook"][0], err)
	}
	var msg map[string]string
	if len(bodies["slack"]) != 1 || json.Unmarshal([]byte(bodies["slack"][0]), &msg) != nil || !strings.Contains(msg["text"], "Run c1 failed") {
		t.Errorf("slack channel got %q, want one {\"text\"} naming the run", bodies["slack"])
	}
	if len(got["other"]) != 0 {
		t.Errorf("a channel subscribed to another kind got %d deliveries", len(got["other"]))
	}
	if len(got["broken"]) != ChannelFailureLimit {
		t.Errorf("failing channel was tried %d times, want %d", len(got["broken"]), ChannelFailureLimit)
	}
	ch, err := st.GetNotificationChannel(ctx, "acme", "nch_broken")
	if err != nil || ch.DisabledAt == nil || ch.Failures != ChannelFailureLimit || !strings.Contains(ch.LastError, "500") {
		t.Errorf("failing channel = %+v, %v; want disabled after %d failures with the last error", ch, err, ChannelFailureLimit)
	}
	feed, err := st.ListNotifications(ctx, "acme", "user:alice", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	var notices []string
	for _, f := range feed {
		if f.Kind == eval.NotifyChannelDisabled {
			notices = append(notices, f.Body)
		}
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "/notification-channels/nch_broken/enable") {
		t.Errorf("feed notices of the disabled channel = %q, want one saying how to re-enable", notices)
	}
	if q, _ := st.ListNotificationDeliveries(ctx, "acme"); len(q) != 0 {
		t.Errorf("deliveries left queued: %+v", q)
	}
}
