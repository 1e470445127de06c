package approvals

import (
	"context"
	"errors"
	"path"
	"strings"
	"time"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/store"
)

// DefaultTools is the built-in policy, applied when a workspace set no
// policies (and did not turn it off with defaultOff): the destructive
// tools park. Deletes, moves, cancels, key and member changes.
var DefaultTools = []string{"delete_*", "move_*", "cancel_*", "create_key", "revoke_key", "delete_key",
	"update_member", "remove_member", "delete_member", "create_invite", "revoke_invite", "delete_invite"}

// defaultPolicy is DefaultTools as a rule.
var defaultPolicy = store.ApprovalPolicy{Name: "default: destructive calls", Tools: DefaultTools, OnExpiry: store.ExpiryDeny}

// Rule is the policy that parks a call, resolved.
type Rule struct {
	Name     string
	Expiry   time.Duration
	OnExpiry string
}

// Policies returns the workspace's policies as set, or the default when
// none were (UpdatedAt zero).
func (s *Service) Policies(ctx context.Context, p auth.Principal) (store.ApprovalPolicies, error) {
	ps, err := s.o.Store.GetApprovalPolicies(ctx, p.Workspace)
	if errors.Is(err, derrors.ErrNotFound) {
		return store.ApprovalPolicies{Workspace: p.Workspace, Policies: []store.ApprovalPolicy{}}, nil
	}
	return ps, err
}

// PutPolicies replaces the workspace's policies after checking each rule:
// at least one glob, valid globs, a positive duration, deny or halt.
func (s *Service) PutPolicies(ctx context.Context, p auth.Principal, ps store.ApprovalPolicies) (store.ApprovalPolicies, error) {
	for i, r := range ps.Policies {
		if len(r.Tools) == 0 {
			return store.ApprovalPolicies{}, derrors.Invalidf("policies[%d].tools: name at least one tool (a glob such as delete_*)", i)
		}
		for _, g := range r.Tools {
			if _, err := path.Match(g, ""); err != nil || strings.TrimSpace(g) == "" {
				return store.ApprovalPolicies{}, derrors.Invalidf("policies[%d].tools: %q is not a valid glob (use *, ? and [...])", i, g)
			}
		}
		if r.Expiry != "" {
			if d, err := time.ParseDuration(r.Expiry); err != nil || d <= 0 {
				return store.ApprovalPolicies{}, derrors.Invalidf("policies[%d].expiry: %q is not a positive duration (such as 30m or 2h)", i, r.Expiry)
			}
		}
		switch r.OnExpiry {
		case "", store.ExpiryDeny, store.ExpiryHalt:
		default:
			return store.ApprovalPolicies{}, derrors.Invalidf("policies[%d].onExpiry: %q: want deny or halt", i, r.OnExpiry)
		}
	}
	ps.Workspace, ps.UpdatedBy, ps.UpdatedAt = p.Workspace, p.Subject, s.o.Now()
	return s.o.Store.PutApprovalPolicies(ctx, ps)
}

// Match returns the rule that parks an agent's call of tool naming team
// (empty when the call names none), or false. The first matching policy
// wins; the default rule applies only when the workspace set none.
func (s *Service) Match(ctx context.Context, workspace, tool, team string) (Rule, bool, error) {
	ps, err := s.o.Store.GetApprovalPolicies(ctx, workspace)
	switch {
	case errors.Is(err, derrors.ErrNotFound):
		ps = store.ApprovalPolicies{}
	case err != nil:
		return Rule{}, false, err
	}
	rules := ps.Policies
	if len(rules) == 0 && !ps.DefaultOff && s.o.Default {
		rules = []store.ApprovalPolicy{defaultPolicy}
	}
	for _, r := range rules {
		if r.Team != "" && r.Team != team {
			continue
		}
		for _, g := range r.Tools {
			if ok, _ := path.Match(g, tool); ok {
				return resolve(r), true, nil
			}
		}
	}
	return Rule{}, false, nil
}

func resolve(r store.ApprovalPolicy) Rule {
	out := Rule{Name: r.Name, Expiry: DefaultExpiry, OnExpiry: r.OnExpiry}
	if out.Name == "" {
		out.Name = strings.Join(r.Tools, ",")
	}
	if d, err := time.ParseDuration(r.Expiry); err == nil && d > 0 {
		out.Expiry = d
	}
	if out.OnExpiry == "" {
		out.OnExpiry = store.ExpiryDeny
	}
	return out
}
