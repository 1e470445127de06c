package cli

import (
	"context"
	"fmt"
	"strings"

	"svc/internal/domain/notificationwire"
)

const notificationsSynopsis = `usage: svc notifications ls [--unread] [--format table|csv|jsonl|md] [--json]
       svc notifications read ID... | --all [--json]
       svc notifications channels ls [--format table|csv|jsonl|md] [--json]
       svc notifications channels add --type webhook|slack --to URL [--kinds k1,k2] [--json]
       svc notifications channels rm ID
       svc notifications channels enable ID [--json]

Your feed of what happened to your work (docs/notifications.md). ls lists it, newest first
(GET /notifications; --unread only the unread ones), with the web view address of each.
read marks the named notifications, or --all of them, read (idempotent).
channels deliver your notifications beyond the feed: add subscribes a signed webhook
(Standard Webhooks; its secret is printed once, at add, and never again) or a Slack-
compatible incoming-webhook URL to kinds of them (--kinds, comma-separated; none: every
kind); --to is where to deliver (--url stays the service's address, as on every command).
ls lists your channels with their failures (5 in a row disable one); enable re-enables
a disabled channel; rm deletes one.

Exit codes: 0 done; 2 usage or service error (the service's message says what to do).`

// RunNotifications is `svc notifications`.
func RunNotifications(ctx context.Context, x *cli, args []string) (int, error) {
	return subcommand(ctx, x, notificationsSynopsis, []sub{
		{"ls", runNotificationsList},
		{"list", runNotificationsList},
		{"read", runNotificationsRead},
		{"channels", runNotificationChannels},
	}, args)
}

// runNotificationsList is `svc notifications ls`.
func runNotificationsList(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "notifications ls", notificationsSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	unread := fs.Bool("unread", false, "only the notifications not read yet")
	format := fs.String("format", formatTable, "output `format`: "+strings.Join(formats, ", "))
	asJSON := fs.Bool("json", false, "print the service's JSON")
	if err := parseNone(fs, args); err != nil {
		return 0, err
	}
	c, err := cf.tableClient(x.getenv, *format)
	if err != nil {
		return 0, err
	}
	list, raw, err := c.ListNotifications(ctx, *unread)
	if err != nil {
		return 0, err
	}
	sh := &sheet{cols: []column{
		{head: "ID", key: "id", clip: 48},
		{head: "KIND", key: "kind"},
		{head: "TITLE", key: "title", clip: 60},
		{head: "CREATED", key: "createdAt"},
		{head: "READ", key: "read"},
		{head: "LINK", key: "href"},
	}}
	for _, n := range list {
		sh.add(n.ID, n.Kind, n.Title, n.CreatedAt, n.ReadAt != nil, n.Href)
	}
	return writeList(x, sh, *format, *asJSON, raw, func() {
		if *unread {
			fmt.Fprintln(x.stderr, "no unread notifications")
			return
		}
		fmt.Fprintln(x.stderr, "no notifications")
	})
}

// runNotificationsRead is `svc notifications read ID... | --all`.
func runNotificationsRead(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "notifications read", notificationsSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	all := fs.Bool("all", false, "mark every notification of yours read")
	asJSON := fs.Bool("json", false, "print the service's answer ({marked})")
	ids, err := parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	switch {
	case *all && len(ids) > 0:
		return 0, fmt.Errorf("%w: name notification ids or --all, not both", errUsage)
	case !*all && len(ids) == 0:
		return 0, fmt.Errorf("%w: name the notifications to mark read (svc notifications ls --unread lists them) or --all", errUsage)
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	res, raw, err := c.ReadNotifications(ctx, notificationwire.ReadRequest{IDs: ids, All: *all})
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
		return exitOK, nil
	}
	fmt.Fprintf(x.stdout, "marked %d read\n", res.Marked)
	return exitOK, nil
}

const channelsSynopsis = notificationsSynopsis

// runNotificationChannels is `svc notifications channels`.
func runNotificationChannels(ctx context.Context, x *cli, args []string) (int, error) {
	return subcommand(ctx, x, channelsSynopsis, []sub{
		{"ls", runChannelsList},
		{"list", runChannelsList},
		{"add", runChannelsAdd},
		{"rm", runChannelsRemove},
		{"delete", runChannelsRemove},
		{"enable", runChannelsEnable},
	}, args)
}

// runChannelsList is `svc notifications channels ls`.
func runChannelsList(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "notifications channels ls", channelsSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	format := fs.String("format", formatTable, "output `format`: "+strings.Join(formats, ", "))
	asJSON := fs.Bool("json", false, "print the service's JSON")
	if err := parseNone(fs, args); err != nil {
		return 0, err
	}
	c, err := cf.tableClient(x.getenv, *format)
	if err != nil {
		return 0, err
	}
	list, raw, err := c.ListNotificationChannels(ctx)
	if err != nil {
		return 0, err
	}
	sh := &sheet{cols: []column{
		{head: "ID", key: "id"},
		{head: "TYPE", key: "type"},
		{head: "URL", key: "url", clip: 48},
		{head: "KINDS", key: "kinds"},
		{head: "ENABLED", key: "enabled"},
		{head: "FAILURES", key: "failures"},
		{head: "LAST ERROR", key: "lastError", clip: 60},
	}}
	for _, ch := range list {
		kinds := strings.Join(ch.Kinds, ",")
		if kinds == "" && *format == formatTable {
			kinds = "all"
		}
		sh.add(ch.ID, ch.Type, ch.URL, kinds, ch.Enabled, ch.Failures, ch.LastError)
	}
	return writeList(x, sh, *format, *asJSON, raw, func() {
		fmt.Fprintln(x.stderr, "no notification channels (svc notifications channels add --type webhook|slack --to URL adds one)")
	})
}

// runChannelsAdd is `svc notifications channels add`.
func runChannelsAdd(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "notifications channels add", channelsSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	typ := fs.String("type", "", "webhook (signed, Standard Webhooks) or slack (a Slack-compatible incoming-webhook URL)")
	u := fs.String("to", "", "the `URL` to deliver to: the webhook endpoint or the Slack incoming-webhook URL")
	kinds := fs.String("kinds", "", "comma-separated notification kinds to deliver (run_failed,agent_approval_requested); none: every kind")
	asJSON := fs.Bool("json", false, "print the service's answer (with a webhook's secret)")
	if err := parseNone(fs, args); err != nil {
		return 0, err
	}
	if *typ == "" || *u == "" {
		return 0, fmt.Errorf("%w: name the channel: --type webhook|slack --to URL", errUsage)
	}
	req := notificationwire.CreateChannelRequest{Type: *typ, URL: *u}
	for _, k := range strings.Split(*kinds, ",") {
		if k = strings.TrimSpace(k); k != "" {
			req.Kinds = append(req.Kinds, k)
		}
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	ch, raw, err := c.CreateNotificationChannel(ctx, req)
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
	} else {
		fmt.Fprintln(x.stdout, ch.ID)
		if ch.Secret != "" {
			fmt.Fprintf(x.stdout, "secret %s\n", ch.Secret)
		}
	}
	if ch.Secret != "" {
		fmt.Fprintln(x.stderr, "keep the secret now: it verifies the webhook's signatures and will not be shown again")
	}
	return exitOK, nil
}

// runChannelsRemove is `svc notifications channels rm ID`.
func runChannelsRemove(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "notifications channels rm", channelsSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	id, c, err := cf.oneArg(fs, args, "channel id", x.getenv)
	if err != nil {
		return 0, err
	}
	if err := c.DeleteNotificationChannel(ctx, id); err != nil {
		return 0, err
	}
	fmt.Fprintf(x.stdout, "%s deleted\n", id)
	return exitOK, nil
}

// runChannelsEnable is `svc notifications channels enable ID`.
func runChannelsEnable(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "notifications channels enable", channelsSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	asJSON := fs.Bool("json", false, "print the channel as the service sent it")
	id, c, err := cf.oneArg(fs, args, "channel id", x.getenv)
	if err != nil {
		return 0, err
	}
	ch, raw, err := c.EnableNotificationChannel(ctx, id)
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
		return exitOK, nil
	}
	fmt.Fprintf(x.stdout, "%s enabled\n", ch.ID)
	return exitOK, nil
}
