package store

import (
	"context"
	"time"
)

// Slots are the admission slots of a workspace's remote runtimes (spec
// §2.6's admission envelope): a job holds a slot of its runtime while it
// runs, and the runtime's maxConcurrent and memoryBudgetMb bound the slots
// held at once across every batch and run of the workspace. A slot is a
// lease: a holder that stops renewing it (its worker was killed) loses it
// at ExpiresAt, so no crash leaks one.
type Slots interface {
	// AcquireSlot takes a slot for r.Holder when the runtime's bounds
	// allow, else records r as waiting; either way its row lasts until
	// r.Until. It first forgets the runtime's rows that expired before
	// r.Now. A holder that holds a slot keeps it (renewed), so a retried
	// attempt never takes a second. It reports whether r holds a slot.
	AcquireSlot(ctx context.Context, r SlotRequest) (bool, error)
	// RenewSlot extends holder's row to until; ErrNotFound when it is gone
	// (it expired and another job may have its slot).
	RenewSlot(ctx context.Context, workspace, runtime, holder string, until time.Time) error
	// ReleaseSlot deletes holder's row; none is not an error.
	ReleaseSlot(ctx context.Context, workspace, runtime, holder string) error
	// ListSlots returns a workspace's rows that have not expired at now,
	// held first, then by since.
	ListSlots(ctx context.Context, workspace string, now time.Time) ([]Slot, error)
}

// SlotRequest is a job asking for a slot of its runtime.
type SlotRequest struct {
	Workspace string
	Runtime   string // the runtime's id
	Holder    string // the run id
	// ScorecardID is the batch the run belongs to, "" for a run of its own.
	ScorecardID string
	// MemoryMb is the job's declared memory; 0 is outside the budget.
	MemoryMb int
	// MaxConcurrent (at least 1) bounds the held slots; MemoryBudgetMb, when
	// above 0, bounds their MemoryMb's sum.
	MaxConcurrent  int
	MemoryBudgetMb int
	Now, Until     time.Time
}

// Slot is a row of Slots: a job holding or waiting for a slot.
type Slot struct {
	Workspace   string    `json:"-"`
	Runtime     string    `json:"runtime"`
	Holder      string    `json:"runId"`
	State       string    `json:"state"` // held or waiting
	MemoryMb    int       `json:"memoryMb,omitempty"`
	ScorecardID string    `json:"scorecardId,omitempty"`
	Since       time.Time `json:"since"`
	ExpiresAt   time.Time `json:"expiresAt"`
}

// The states of a Slot.
const (
	SlotHeld    = "held"
	SlotWaiting = "waiting"
)
