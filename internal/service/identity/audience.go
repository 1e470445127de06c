package identity

import (
	"context"

	"svc/internal/domain/eval"
	"svc/store"
)

// TeamReader is what TeamAudiences reads of the store.
type TeamReader interface {
	ListTeams(ctx context.Context, workspace string) ([]store.Team, error)
	TeamsOf(ctx context.Context, workspace, subject string) ([]string, error)
}

// TeamAudiences are the team audiences (eval.TeamAudience) a reader may
// read in workspace: eval.AnyTeamAudience when everyTeam (admins and
// machine credentials, auth.ReachesEveryTeam), else those of the teams
// subject is in. Work made from a private team's asset carries its team's audience
// (eval.Run.AudienceTeam), so what it exposes of the asset stays the team's.
func TeamAudiences(ctx context.Context, st TeamReader, workspace, subject string, everyTeam bool) ([]string, error) {
	if everyTeam {
		// Every team's, a deleted team's too: its work stays readable to
		// the workspace's admins.
		return []string{eval.AnyTeamAudience}, nil
	}
	ids, err := st.TeamsOf(ctx, workspace, subject)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, eval.TeamAudience(id))
	}
	return out, nil
}
