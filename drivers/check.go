package drivers

import (
	"path"
	"strings"

	"svc/internal/platform/derrors"
)

// CheckJob rejects what no driver could run, as derrors.ErrInvalid with a
// message saying what to fix; driver names the driver in the messages
// about the job itself (a missing run id is the caller's bug, not the
// harness's).
func CheckJob(driver string, j Job) error {
	if j.RunID == "" {
		return derrors.Invalidf("%s driver: the job has no run id", driver)
	}
	if strings.ContainsRune(j.RunID, 0) {
		return derrors.Invalidf("%s driver: run id %q contains a NUL byte", driver, j.RunID)
	}
	if len(j.Command) == 0 || j.Command[0] == "" {
		return derrors.Invalidf("harness command is empty: give the program to run as the first element of the harness's command")
	}
	for _, a := range j.Command {
		if strings.ContainsRune(a, 0) {
			return derrors.Invalidf("harness command %q: arguments must not contain NUL bytes", j.Command[0])
		}
	}
	if j.WorkDir != "" && !IsLocalPath(j.WorkDir) {
		return derrors.Invalidf("harness workDir %q must be a relative path inside the work directory", j.WorkDir)
	}
	for name := range j.Files {
		if !IsLocalPath(name) {
			return derrors.Invalidf("file %q must be a relative path inside the work directory (no leading '/', no '..')", name)
		}
	}
	for k, v := range j.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return derrors.Invalidf("harness environment variable %q: names must be non-empty without '=' or NUL, values without NUL", k)
		}
	}
	return nil
}

// IsLocalPath reports whether a slash-separated path names something
// below its base: relative, not the base itself, never climbing out of
// it, with no backslash or NUL.
func IsLocalPath(p string) bool {
	c := path.Clean(p)
	return p != "" && !strings.HasPrefix(p, "/") && c != "." && c != ".." &&
		!strings.HasPrefix(c, "../") && !strings.ContainsAny(p, "\\\x00")
}
