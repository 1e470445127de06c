package activities

import (
	"context"
	"time"
)

// Deadlines of the store calls that outlive the activity's own context.
//
// A write after a job (its result, its log tail, its trace's crossings)
// must happen even when the activity was cancelled meanwhile, so it runs
// on context.WithoutCancel; but without a deadline of its own a store that
// stops answering (PostgreSQL killed or cut off without closing its
// sockets) would hold the activity, and with it the worker slot, forever.
// Each such call runs under detached with one of these bounds instead:
// past it the call fails, the attempt fails, and Temporal retries it.
const (
	// recordWriteTimeout bounds one record write after a job: its finish
	// (through the group commit, whose wait counts), its log tail, the
	// marking of a run waiting for a slot, a webhook delivery record.
	recordWriteTimeout = 30 * time.Second
	// afterSealTimeout bounds what follows a sealed trajectory (landing
	// its threshold crossings, dropping its pending spans): logged when
	// it fails, so shorter than a record write.
	afterSealTimeout = 15 * time.Second
	// sharedReadTimeout bounds a read shared by several callers (the
	// memoized harness resolution): it outlives the caller that started
	// it, not the store.
	sharedReadTimeout = 30 * time.Second
	// tokenCallTimeout bounds the revocation and the usage read of a
	// model proxy token after its job.
	tokenCallTimeout = 15 * time.Second
)

// detached is ctx without its cancellation (its values kept) under a
// deadline of d from now. The caller must call the cancel function.
func detached(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}
