//go:build !unix

package devserver

// lockFile does nothing where flock is missing; the frontend port check
// still stops the common case of two dev servers.
func lockFile(string) (unlock func() error, err error) {
	return func() error { return nil }, nil
}
