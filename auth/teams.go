package auth

import (
	"slices"

	"svc/internal/platform/derrors"
)

// The team axis (spec §5.8). These checks come after Authorize: the role and
// scope decide whether the caller may perform the action at all, the team
// decides on which assets. An empty team means the asset belongs to the
// workspace as a whole. Callers pass the teams the principal belongs to,
// read from the store.

// reachesEveryTeam is true for admins and machine credentials (spec §5.8).
func reachesEveryTeam(p Principal) bool { return p.IsAdmin() || p.IsMachine() }

// ReachesEveryTeam reports whether p reads and writes every team's assets:
// admins and machine credentials (spec §5.8).
func ReachesEveryTeam(p Principal) bool { return reachesEveryTeam(p) }

// CanWriteTeamAsset allows a write to an asset of assetTeam: a workspace-owned
// asset (empty team) is writable per role, a team's asset only by its members,
// admins and machine credentials. Another team's asset is 403.
func CanWriteTeamAsset(p Principal, assetTeam string, callerTeams []string) error {
	if assetTeam == "" || reachesEveryTeam(p) || slices.Contains(callerTeams, assetTeam) {
		return nil
	}
	return derrors.Forbiddenf("the asset belongs to team %q, which you are not in", assetTeam)
}

// CanReadTeamAsset allows a read: assets are visible by default, but a private
// team's asset is visible only to its members, admins and machine
// credentials; to anyone else it does not exist (404, not 403, so existence
// does not leak).
func CanReadTeamAsset(p Principal, assetTeam string, private bool, callerTeams []string) error {
	if assetTeam == "" || !private || reachesEveryTeam(p) || slices.Contains(callerTeams, assetTeam) {
		return nil
	}
	return derrors.NotFoundf("no such asset")
}

// CheckExplicitTeam vets a team named in a request body: one the caller may
// not write to is refused (403) rather than silently replaced by another.
// An empty requestedTeam means none was named.
func CheckExplicitTeam(p Principal, requestedTeam string, callerTeams []string) error {
	if requestedTeam == "" || reachesEveryTeam(p) || slices.Contains(callerTeams, requestedTeam) {
		return nil
	}
	return derrors.Forbiddenf("you may not write to team %q", requestedTeam)
}

// CheckTeamMove vets an ownership transfer of an asset owned by owner from
// team from to team to (spec §5.8): a _shared asset cannot move (404), a
// move to the team it is already in is 409, and the caller must be allowed
// to write in both the source and the destination team.
func CheckTeamMove(p Principal, owner, from, to string, callerTeams []string) error {
	if owner == SharedOwner {
		return derrors.NotFoundf("shared assets cannot be moved")
	}
	if from == to {
		return derrors.Conflictf("the asset is already in team %q", to)
	}
	if err := CanWriteTeamAsset(p, from, callerTeams); err != nil {
		return err
	}
	return CheckExplicitTeam(p, to, callerTeams)
}
