package sandboxes

import "svc/internal/domain/sandboxwire"

// The sandbox routes' wire format (sandboxwire), which the API client
// shares.
type (
	CreateRequest   = sandboxwire.CreateRequest
	View            = sandboxwire.View
	Live            = sandboxwire.Live
	ExecRequest     = sandboxwire.ExecRequest
	TouchRequest    = sandboxwire.TouchRequest
	CloseRequest    = sandboxwire.CloseRequest
	SnapshotRequest = sandboxwire.SnapshotRequest
	TaskRequest     = sandboxwire.TaskRequest
	TaskTrace       = sandboxwire.TaskTrace
	World           = sandboxwire.World
	WorldVersion    = sandboxwire.WorldVersion
	Imported        = sandboxwire.Imported
)

// Bounds of the sandbox routes' bodies.
const (
	MaxCommand = sandboxwire.MaxCommand
	MaxPrompt  = sandboxwire.MaxPrompt
)
