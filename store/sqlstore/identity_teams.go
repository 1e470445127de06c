package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"

	"svc/internal/platform/derrors"
	"svc/store"
)

// teamDoc is the document of a teams row: only what no column holds (see
// apiKeyDoc).
type teamDoc struct {
	Name      string `json:"name"`
	Private   bool   `json:"private"`
	CreatedBy string `json:"createdBy,omitempty"`
}

const teamColumns = `workspace, id, doc, created_at`

func scanTeam(r rowScanner) (store.Team, error) {
	var t store.Team
	var created dbTime
	var doc []byte
	if err := r.Scan(&t.Workspace, &t.ID, &doc, &created); err != nil {
		return store.Team{}, err
	}
	var d teamDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return store.Team{}, fmt.Errorf("decode team: %w", err)
	}
	t.Name, t.Private, t.CreatedBy = d.Name, d.Private, d.CreatedBy
	t.CreatedAt = created.Time
	return t, nil
}

// CreateTeam inserts a team; see store.Identity.
func (o ops) CreateTeam(ctx context.Context, t store.Team) (_ store.Team, err error) {
	defer derrors.Wrap(&err, "%s.CreateTeam(ctx, %q, %q)", o.kind, t.Workspace, t.ID)
	if err := required("workspace", t.Workspace, "team id", t.ID); err != nil {
		return store.Team{}, err
	}
	if err := checkText(t.Workspace, t.ID); err != nil {
		return store.Team{}, err
	}
	t.CreatedAt = normTime(t.CreatedAt)
	doc, err := marshalDoc(teamDoc{Name: t.Name, Private: t.Private, CreatedBy: t.CreatedBy})
	if err != nil {
		return store.Team{}, err
	}
	ok, err := o.insertOnce(ctx,
		`INSERT INTO teams (`+teamColumns+`) VALUES ($1, $2, $3, $4) ON CONFLICT (workspace, id) DO NOTHING`,
		t.Workspace, t.ID, doc, o.d.TimeArg(t.CreatedAt))
	if err != nil {
		return store.Team{}, err
	}
	if !ok {
		return store.Team{}, derrors.Conflictf("team %q already exists in workspace %q", t.ID, t.Workspace)
	}
	return t, nil
}

// GetTeam returns one team; see store.Identity.
func (o ops) GetTeam(ctx context.Context, workspace, id string) (_ store.Team, err error) {
	defer derrors.Wrap(&err, "%s.GetTeam(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return store.Team{}, err
	}
	return o.getTeam(ctx, workspace, id)
}

func (o ops) getTeam(ctx context.Context, workspace, id string) (store.Team, error) {
	t, err := scanTeam(o.r.QueryRowContext(ctx,
		`SELECT `+teamColumns+` FROM teams WHERE workspace = $1 AND id = $2`, workspace, id))
	if err = o.found(err, "team %q of workspace %q", id, workspace); err != nil {
		return store.Team{}, err
	}
	return t, nil
}

// ListTeams returns a workspace's teams by id; see store.Identity.
func (o ops) ListTeams(ctx context.Context, workspace string) (_ []store.Team, err error) {
	defer derrors.Wrap(&err, "%s.ListTeams(ctx, %q)", o.kind, workspace)
	if err := checkText(workspace); err != nil {
		return nil, err
	}
	return queryList(ctx, o, scanTeam,
		`SELECT `+teamColumns+` FROM teams WHERE workspace = $1 ORDER BY id`, workspace)
}

// UpdateTeam replaces a team's name and private flag; see store.Identity.
func (o ops) UpdateTeam(ctx context.Context, t store.Team) (_ store.Team, err error) {
	defer derrors.Wrap(&err, "%s.UpdateTeam(ctx, %q, %q)", o.kind, t.Workspace, t.ID)
	if err := checkText(t.Workspace, t.ID); err != nil {
		return store.Team{}, err
	}
	var out store.Team
	// Read, then write the whole document: createdBy lives in it too, and
	// the JSON update functions differ between the dialects.
	err = o.atomic(ctx, func(o ops) error {
		cur, err := o.getTeam(ctx, t.Workspace, t.ID)
		if err != nil {
			return err
		}
		cur.Name, cur.Private = t.Name, t.Private
		doc, err := marshalDoc(teamDoc{Name: cur.Name, Private: cur.Private, CreatedBy: cur.CreatedBy})
		if err != nil {
			return err
		}
		if _, err := o.w.ExecContext(ctx, `UPDATE teams SET doc = $3 WHERE workspace = $1 AND id = $2`, t.Workspace, t.ID, doc); err != nil {
			return o.mapErr(err)
		}
		out = cur
		return nil
	})
	if err != nil {
		return store.Team{}, err
	}
	return out, nil
}

// DeleteTeam deletes a team and its memberships; see store.Identity.
func (o ops) DeleteTeam(ctx context.Context, workspace, id string) (err error) {
	defer derrors.Wrap(&err, "%s.DeleteTeam(ctx, %q, %q)", o.kind, workspace, id)
	if err := checkText(workspace, id); err != nil {
		return err
	}
	return o.atomic(ctx, func(o ops) error {
		if _, err := o.w.ExecContext(ctx, `DELETE FROM team_members WHERE workspace = $1 AND team_id = $2`, workspace, id); err != nil {
			return o.mapErr(err)
		}
		if _, err := o.w.ExecContext(ctx, `DELETE FROM teams WHERE workspace = $1 AND id = $2`, workspace, id); err != nil {
			return o.mapErr(err)
		}
		return nil
	})
}

// teamExists returns ErrNotFound unless the workspace has the team.
func (o ops) teamExists(ctx context.Context, workspace, id string) error {
	var one int
	err := o.r.QueryRowContext(ctx, `SELECT 1 FROM teams WHERE workspace = $1 AND id = $2`, workspace, id).Scan(&one)
	return o.found(err, "team %q of workspace %q", id, workspace)
}

// AddTeamMember adds a subject to a team; see store.Identity.
func (o ops) AddTeamMember(ctx context.Context, m store.TeamMember) (_ store.TeamMember, err error) {
	defer derrors.Wrap(&err, "%s.AddTeamMember(ctx, %q, %q, %q)", o.kind, m.Workspace, m.TeamID, m.Subject)
	if err := required("workspace", m.Workspace, "team id", m.TeamID, "subject", m.Subject); err != nil {
		return store.TeamMember{}, err
	}
	if err := checkText(m.Workspace, m.TeamID, m.Subject); err != nil {
		return store.TeamMember{}, err
	}
	m.AddedAt = normTime(m.AddedAt)
	err = o.atomic(ctx, func(o ops) error {
		if err := o.teamExists(ctx, m.Workspace, m.TeamID); err != nil {
			return err
		}
		// A no-op update rather than DO NOTHING, so that RETURNING yields
		// the stored row (and its first AddedAt) when the member is there.
		var added dbTime
		if err := o.w.QueryRowContext(ctx,
			`INSERT INTO team_members (workspace, team_id, subject, added_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (workspace, team_id, subject) DO UPDATE SET added_at = team_members.added_at
			RETURNING added_at`,
			m.Workspace, m.TeamID, m.Subject, o.d.TimeArg(m.AddedAt)).Scan(&added); err != nil {
			return o.mapErr(err)
		}
		m.AddedAt = added.Time
		return nil
	})
	if err != nil {
		return store.TeamMember{}, err
	}
	return m, nil
}

// RemoveTeamMember removes a subject from a team; see store.Identity.
func (o ops) RemoveTeamMember(ctx context.Context, workspace, teamID, subject string) (err error) {
	defer derrors.Wrap(&err, "%s.RemoveTeamMember(ctx, %q, %q, %q)", o.kind, workspace, teamID, subject)
	if err := checkText(workspace, teamID, subject); err != nil {
		return err
	}
	if _, err := o.w.ExecContext(ctx,
		`DELETE FROM team_members WHERE workspace = $1 AND team_id = $2 AND subject = $3`, workspace, teamID, subject); err != nil {
		return o.mapErr(err)
	}
	return nil
}

// ListTeamMembers returns a team's members by subject; see store.Identity.
func (o ops) ListTeamMembers(ctx context.Context, workspace, teamID string) (_ []store.TeamMember, err error) {
	defer derrors.Wrap(&err, "%s.ListTeamMembers(ctx, %q, %q)", o.kind, workspace, teamID)
	if err := checkText(workspace, teamID); err != nil {
		return nil, err
	}
	// Two reads, not one transaction: on SQLite a transaction would queue
	// this read behind the one writer. A team deleted between them lists as
	// empty instead of ErrNotFound, which no caller can tell from a race lost
	// the other way.
	if err := o.teamExists(ctx, workspace, teamID); err != nil {
		return nil, err
	}
	return queryList(ctx, o, func(r rowScanner) (store.TeamMember, error) {
		m := store.TeamMember{Workspace: workspace, TeamID: teamID}
		var added dbTime
		if err := r.Scan(&m.Subject, &added); err != nil {
			return store.TeamMember{}, err
		}
		m.AddedAt = added.Time
		return m, nil
	}, `SELECT subject, added_at FROM team_members WHERE workspace = $1 AND team_id = $2 ORDER BY subject`, workspace, teamID)
}

// TeamsOf returns the ids of a subject's teams in a workspace; see store.Identity.
func (o ops) TeamsOf(ctx context.Context, workspace, subject string) (_ []string, err error) {
	defer derrors.Wrap(&err, "%s.TeamsOf(ctx, %q, %q)", o.kind, workspace, subject)
	if err := checkText(workspace, subject); err != nil {
		return nil, err
	}
	return queryList(ctx, o, func(r rowScanner) (string, error) {
		var id string
		err := r.Scan(&id)
		return id, err
	}, `SELECT team_id FROM team_members WHERE workspace = $1 AND subject = $2 ORDER BY team_id`, workspace, subject)
}
