//go:build unix

package devserver

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"svc/internal/platform/derrors"
)

// lockFile takes an exclusive lock on path (created when missing), so two
// servers never share one database file: each would keep stealing the
// history shard from the other. The kernel drops the lock when the process
// dies, so a killed svc dev never leaves a stale lock behind.
func lockFile(path string) (unlock func() error, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: the database file is used by another running server (another svc dev on the same SVC_DATA_DIR?)", derrors.ErrConflict)
		}
		return nil, fmt.Errorf("lock file: %w", err)
	}
	return f.Close, nil
}
