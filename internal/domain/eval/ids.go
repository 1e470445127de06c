package eval

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
)

// NewID returns a new random id: prefix, "_" and 24 hex digits.
func NewID(prefix string) string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return fmt.Sprintf("%s_%x", prefix, b)
}

// ChildRunID is the id of a batch's child run for (case, trial): derived,
// so that a retried case activity finds the run a previous attempt made
// and there is exactly one canonical run per (case, trial).
func ChildRunID(workspace, scorecardID, caseID string, trial int) string {
	sum := sha256.Sum256([]byte(workspace + "\x00" + scorecardID + "\x00" + caseID + "\x00" + strconv.Itoa(trial)))
	return "run_" + hex.EncodeToString(sum[:12])
}

// RunnerJobID is the id of the self-hosted runner job of attempt of run:
// the same for every dispatch of that attempt, so a retried activity
// finds its job (the runners service queues it under this id, the worker
// deletes it by it); it is a digest, so it is a safe path segment
// whatever the run id holds.
func RunnerJobID(runID string, attempt int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", runID, attempt))
	return "rj_" + hex.EncodeToString(sum[:16])
}
