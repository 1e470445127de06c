package identity

import (
	"context"

	"svc/auth"
	"svc/store"
)

// RunnerKeyRequest is the body of POST /runner-keys.
type RunnerKeyRequest struct {
	Label string `json:"label,omitempty"`
}

// CreatedRunnerKey is the answer to POST /runner-keys: the metadata plus
// the plaintext rnr_ key, which is never shown again.
type CreatedRunnerKey struct {
	RunnerKey string `json:"runnerKey"`
	KeyMetadata
}

// CreateRunnerKey mints a key for a self-hosted runner of p's workspace
// (spec §5.1: prefix rnr_). Like any key only its SHA-256 is stored. It
// acts as itself (subject key:<id>, so it outlives its minter's
// membership) and holds no role: it opens the runner routes and nothing
// else. It is listed and revoked with the API keys (GET and DELETE /keys).
func (s *Service) CreateRunnerKey(ctx context.Context, p auth.Principal, req RunnerKeyRequest) (CreatedRunnerKey, error) {
	if err := checkLabel("label", req.Label); err != nil {
		return CreatedRunnerKey{}, err
	}
	plaintext, hash := auth.NewAPIKey(auth.RunnerKeyPrefix)
	k := store.APIKey{
		ID:        newID("key_"),
		Workspace: p.Workspace,
		Label:     req.Label,
		Hash:      hash,
		Prefix:    auth.KeyDisplayPrefix(plaintext),
		Kind:      string(auth.KeyKindRunner),
		Roles:     []string{},
		CreatedBy: p.Subject,
		CreatedAt: s.o.Now(),
	}
	k.Subject = auth.KeySubject(k.ID)
	stored, err := s.o.Store.CreateAPIKey(ctx, k)
	if err != nil {
		return CreatedRunnerKey{}, err
	}
	return CreatedRunnerKey{RunnerKey: plaintext, KeyMetadata: metadataOf(stored)}, nil
}
