package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"svc/internal/domain/approvalwire"
)

const approvalsSynopsis = `usage: svc approvals ls [--status pending|approved|denied|expired] [--format table|csv|jsonl|md] [--json]
       svc approvals show ID [--json]
       svc approvals approve ID [--reason R] [--json]
       svc approvals deny ID [--reason R] [--json]
       svc approvals policies [get] [--json]
       svc approvals policies set FILE [--json]

An approval is an agent's call that a workspace policy parked until a person decides it
(docs/approvals.md). ls lists the workspace's approvals, newest first (GET /approvals);
show prints one with the call as the agent sent it (its tool, method, path and body).
approve and deny settle a pending approval once (POST /approvals/:id/decide): an approved
call runs once, as the agent's member; a second decision is refused (409) saying how it
settled. policies prints the workspace's approval policies (GET /approval-policies), or
with set replaces them with the JSON document in FILE ({"policies": [...], "defaultOff":
false}; PUT /approval-policies, an admin's).

Exit codes: 0 done; 2 usage or service error (the service's message says what to do).`

// RunApprovals is `svc approvals`.
func RunApprovals(ctx context.Context, x *cli, args []string) (int, error) {
	return subcommand(ctx, x, approvalsSynopsis, []sub{
		{"ls", runApprovalsList},
		{"list", runApprovalsList},
		{"show", runApprovalsShow},
		{"approve", decideCommand(approvalwire.DecisionApprove)},
		{"deny", decideCommand(approvalwire.DecisionDeny)},
		{"policies", runApprovalPolicies},
	}, args)
}

// runApprovalsList is `svc approvals ls`.
func runApprovalsList(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "approvals ls", approvalsSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	status := fs.String("status", "", "only approvals in this state: "+strings.Join(approvalwire.Statuses, ", "))
	format := fs.String("format", formatTable, "output `format`: "+strings.Join(formats, ", "))
	asJSON := fs.Bool("json", false, "print the service's JSON")
	if err := parseNone(fs, args); err != nil {
		return 0, err
	}
	c, err := cf.tableClient(x.getenv, *format)
	if err != nil {
		return 0, err
	}
	list, raw, err := c.ListApprovals(ctx, *status)
	if err != nil {
		return 0, err
	}
	sh := &sheet{cols: []column{
		{head: "ID", key: "id"},
		{head: "STATUS", key: "status"},
		{head: "TOOL", key: "tool"},
		{head: "AGENT", key: "agent"},
		{head: "MEMBER", key: "member"},
		{head: "CREATED", key: "createdAt"},
		{head: "EXPIRES", key: "expiresAt"},
		{head: "DECIDED BY", key: "decidedBy"},
	}}
	for _, a := range list {
		sh.add(a.ID, a.Status, approvalTool(a), approvalAgent(a), a.Member, a.CreatedAt, a.ExpiresAt, a.DecidedBy)
	}
	return writeList(x, sh, *format, *asJSON, raw, func() {
		what := "approvals"
		if *status != "" {
			what = *status + " approvals"
		}
		fmt.Fprintf(x.stderr, "no %s in this workspace (an agent's call that a policy names parks as one; svc approvals policies shows them)\n", what)
	})
}

// approvalTool is what the agent called: the tool, else the method and path.
func approvalTool(a approvalwire.Approval) string {
	if a.Tool != "" {
		return a.Tool
	}
	return strings.TrimSpace(a.Method + " " + a.Path)
}

// approvalAgent is the agent as one cell: its name (else id) and conversation.
func approvalAgent(a approvalwire.Approval) string {
	s := a.Agent.ID
	if a.Agent.Name != "" && a.Agent.Name != a.Agent.ID {
		s = a.Agent.Name + " (" + a.Agent.ID + ")"
	}
	if a.Agent.Conversation != "" {
		s += " in " + a.Agent.Conversation
	}
	return s
}

// runApprovalsShow is `svc approvals show ID`.
func runApprovalsShow(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "approvals show", approvalsSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	asJSON := fs.Bool("json", false, "print the approval as the service sent it")
	id, c, err := cf.oneArg(fs, args, "approval id", x.getenv)
	if err != nil {
		return 0, err
	}
	a, raw, err := c.Approval(ctx, id)
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
		return exitOK, nil
	}
	printApproval(x, a)
	return exitOK, nil
}

// printApproval writes an approval as "field value" lines, then the body
// of the parked call as the agent sent it.
func printApproval(x *cli, a approvalwire.Approval) {
	tw := newTable(x.stdout)
	row := func(k string, v any) {
		if t := cellText(v); t != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, singleLine(t))
		}
	}
	row("id", a.ID)
	row("status", a.Status)
	row("tool", a.Tool)
	row("call", strings.TrimSpace(a.Method+" "+a.Path))
	row("agent", approvalAgent(a))
	row("member", a.Member)
	if a.Origin.Source != "" {
		row("source", a.Origin.Source)
	}
	row("team", a.Team)
	row("run", a.RunID)
	row("policy", a.Policy)
	row("on expiry", a.OnExpiry)
	row("created", a.CreatedAt)
	if a.Status == approvalwire.StatusPending {
		row("expires", a.ExpiresAt)
	}
	row("decided by", a.DecidedBy)
	if a.DecidedAt != nil {
		row("decided", *a.DecidedAt)
	}
	row("reason", a.Reason)
	if a.Delivered {
		row("delivered", "yes: the waiting call got the decision")
	}
	if a.Resumed {
		row("resumed", "yes: the call ran after its caller had gone")
	}
	if a.Result != nil {
		row("result", fmt.Sprintf("HTTP %d", a.Result.Status))
	}
	if a.Halted {
		row("halted", "yes: the agent's later calls in this conversation are refused")
	}
	tw.Flush()
	if len(a.Body) > 0 {
		fmt.Fprintln(x.stdout, "body:")
		writeJSON(x.stdout, indentJSON(a.Body))
	}
}

// indentJSON indents raw for reading, or returns it as it is when it is not
// JSON.
func indentJSON(raw json.RawMessage) json.RawMessage {
	var b strings.Builder
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return raw
	}
	return json.RawMessage(b.String())
}

// decideCommand is `svc approvals approve|deny ID [--reason R]`.
func decideCommand(decision string) Command {
	return func(ctx context.Context, x *cli, args []string) (int, error) {
		fs := newFlagSet(x, "approvals "+decision, approvalsSynopsis)
		var cf clientFlags
		cf.register(fs, x.getenv)
		reason := fs.String("reason", "", "why, recorded with the decision (the agent's refusal quotes it)")
		asJSON := fs.Bool("json", false, "print the settled approval as the service sent it")
		id, c, err := cf.oneArg(fs, args, "approval id", x.getenv)
		if err != nil {
			return 0, err
		}
		a, raw, err := c.DecideApproval(ctx, id, approvalwire.DecideRequest{Decision: decision, Reason: *reason})
		if err != nil {
			return 0, err
		}
		if *asJSON {
			writeJSON(x.stdout, raw)
			return exitOK, nil
		}
		line := a.ID + " " + a.Status
		if a.Tool != "" {
			line += ": " + a.Tool
		}
		switch {
		case a.Result != nil:
			line += fmt.Sprintf(" ran (HTTP %d)", a.Result.Status)
		case a.Status == approvalwire.StatusApproved:
			line += " runs once, as " + a.Member
		case a.Status == approvalwire.StatusDenied:
			line += " does not run"
		}
		fmt.Fprintln(x.stdout, line)
		return exitOK, nil
	}
}

// runApprovalPolicies is `svc approvals policies [get|set FILE]`.
func runApprovalPolicies(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "approvals policies", approvalsSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	asJSON := fs.Bool("json", false, "print the policies as the service sent them")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	var file string
	switch {
	case len(pos) == 0 || (len(pos) == 1 && pos[0] == "get"):
	case len(pos) == 2 && pos[0] == "set":
		file = pos[1]
	case len(pos) >= 1 && pos[0] == "set":
		return 0, fmt.Errorf("%w: name one policies file: svc approvals policies set FILE", errUsage)
	default:
		return 0, fmt.Errorf("%w: want svc approvals policies [get] or svc approvals policies set FILE, got %q", errUsage, pos)
	}
	var doc json.RawMessage
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return 0, fmt.Errorf("%w: reading the policies: %v", errUsage, err)
		}
		if !json.Valid(b) {
			return 0, fmt.Errorf("%w: %s is not JSON: want {\"policies\": [{\"tools\": [\"delete_*\"], ...}], \"defaultOff\": false}", errUsage, file)
		}
		doc = b
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	var ps approvalwire.Policies
	var raw json.RawMessage
	if doc != nil {
		ps, raw, err = c.PutApprovalPolicies(ctx, doc)
	} else {
		ps, raw, err = c.ApprovalPolicies(ctx)
	}
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
		return exitOK, nil
	}
	printPolicies(x, ps)
	return exitOK, nil
}

// printPolicies writes the policies as a table, or says what parks without
// one.
func printPolicies(x *cli, ps approvalwire.Policies) {
	switch {
	case len(ps.Policies) > 0:
		sh := &sheet{cols: []column{
			{head: "NAME", key: "name"},
			{head: "TOOLS", key: "tools"},
			{head: "TEAM", key: "team"},
			{head: "EXPIRY", key: "expiry"},
			{head: "ON EXPIRY", key: "onExpiry"},
		}}
		for _, p := range ps.Policies {
			expiry, on := p.Expiry, p.OnExpiry
			if expiry == "" {
				expiry = "1h"
			}
			if on == "" {
				on = "deny"
			}
			sh.add(p.Name, strings.Join(p.Tools, ","), p.Team, expiry, on)
		}
		sh.write(x.stdout, formatTable)
	case ps.DefaultOff:
		fmt.Fprintln(x.stdout, "no policy, and the default is off: agents' calls never park")
	default:
		fmt.Fprintf(x.stdout, "no policy set: the default parks agents' destructive calls: %s\n", strings.Join(ps.DefaultTools, ", "))
	}
	if ps.UpdatedBy != "" {
		fmt.Fprintf(x.stdout, "set by %s at %s\n", ps.UpdatedBy, ps.UpdatedAt.UTC().Format(time.RFC3339))
	}
}
