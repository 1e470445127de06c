package registry

import (
	"encoding/json"
	"time"
)

// VersionInfo describes one registered version without its spec: the
// answer of a registration.
type VersionInfo struct {
	Kind      string          `json:"kind"`
	Owner     string          `json:"owner"`
	ID        string          `json:"id"`
	Version   string          `json:"version"`
	Digest    string          `json:"digest"`
	CaseCount int             `json:"caseCount,omitempty"`
	Tags      []string        `json:"tags"`
	Origin    json.RawMessage `json:"origin,omitempty"`
	CreatedBy string          `json:"createdBy,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	// Created is false when the same content was already registered (the
	// request was an idempotent repeat, or revived a deleted version).
	Created bool `json:"created"`
}
