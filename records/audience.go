package records

import (
	"context"

	"svc/eval"
	"svc/store"
)

// TeamReader is what TeamAudiences reads of the store.
type TeamReader interface {
	ListTeams(ctx context.Context, workspace string) ([]store.Team, error)
	TeamsOf(ctx context.Context, workspace, subject string) ([]string, error)
}

// TeamAudiences are the team audiences (eval.TeamAudience) a reader may
// read in workspace: every team's when everyTeam (admins and machine
// credentials, auth.ReachesEveryTeam), else those of the teams subject is
// in. Work made from a private team's asset carries its team's audience
// (eval.Run.AudienceTeam), so what it exposes of the asset stays the team's.
func TeamAudiences(ctx context.Context, st TeamReader, workspace, subject string, everyTeam bool) ([]string, error) {
	var ids []string
	if everyTeam {
		teams, err := st.ListTeams(ctx, workspace)
		if err != nil {
			return nil, err
		}
		for _, t := range teams {
			ids = append(ids, t.ID)
		}
	} else {
		var err error
		if ids, err = st.TeamsOf(ctx, workspace, subject); err != nil {
			return nil, err
		}
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, eval.TeamAudience(id))
	}
	return out, nil
}
