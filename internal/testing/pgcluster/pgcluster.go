// Package pgcluster starts a throwaway PostgreSQL server from the binaries
// installed on the machine, so tests and local runs need no hand set-up and
// no Docker. The server lives in a temporary directory that Stop removes.
package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoBinaries means no PostgreSQL server binaries (initdb, postgres) were found.
var ErrNoBinaries = errors.New("pgcluster: no PostgreSQL binaries (initdb, postgres) on PATH or in /usr/lib/postgresql/*/bin")

// searchGlob is where Debian and Ubuntu install the server binaries, which
// are not on PATH there.
const searchGlob = "/usr/lib/postgresql/*/bin"

// FindBinaries returns the directory holding initdb and postgres: the one on
// PATH if any, else the newest /usr/lib/postgresql/<version>/bin.
func FindBinaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		// Follow a symlink (/usr/local/bin/initdb -> .../15/bin/initdb) to the
		// directory that holds the whole installation, psql included.
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(searchGlob)
	// Newest major version first; a plain string sort would put 9 after 15.
	slices.SortFunc(dirs, func(a, b string) int { return majorOf(b) - majorOf(a) })
	for _, dir := range dirs {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", ErrNoBinaries
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Cluster is a running throwaway PostgreSQL server.
type Cluster struct {
	dir  string // temporary directory: data/, sock/, log
	url  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the postgres process has exited
	err  error         // the exit error, valid after done is closed

	stopOnce sync.Once
	stopErr  error
}

// URL is the connection URL of the server's "postgres" database, as the
// superuser "postgres" over loopback TCP.
func (c *Cluster) URL() string { return c.url }

// Dir is the temporary directory that holds the data directory and the log.
func (c *Cluster) Dir() string { return c.dir }

// Start initialises a cluster in a new temporary directory and starts it on
// a free loopback port. The caller must Stop it.
//
// The postgres process is started directly (not through pg_ctl) so that it is
// our child: it is asked to die with us (Linux parent-death signal), so a
// killed test binary does not leave a server running. When running as root,
// initdb and postgres run as the "postgres" user, since both refuse root.
func Start(ctx context.Context) (_ *Cluster, err error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "svc-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	sock := filepath.Join(dir, "sock")
	if err := os.Mkdir(sock, 0o700); err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	if cred != nil {
		for _, d := range []string{dir, sock} {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, fmt.Errorf("pgcluster: chown %s to the postgres user: %w", d, err)
			}
		}
	}

	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Dir = dir // initdb chdirs to its cwd; root's home is not readable by postgres
	initdb.Env = serverEnv()
	setProcAttr(initdb, cred)
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgcluster: initdb: %w\n%s", err, out)
	}

	// A port from the OS can in rare cases be taken again before postgres
	// binds it, so try a few.
	var lastErr error
	for range 3 {
		c, err := startServer(ctx, bin, dir, data, sock, cred)
		if err == nil {
			return c, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func startServer(ctx context.Context, bin, dir, data, sock string, cred *syscall.Credential) (*Cluster, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	defer logf.Close() // the child holds its own copy of the descriptor

	// Not CommandContext: the server must outlive the start-up context.
	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", data,
		"-p", strconv.Itoa(port),
		"-k", sock,
		"-c", "listen_addresses=127.0.0.1",
		// Durability is pointless for a throwaway server; these make it fast.
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		// Several test binaries may share one server (withpg), each with pools.
		"-c", "max_connections=300",
	)
	if os.Getenv("PGCLUSTER_STAT_STATEMENTS") == "1" {
		// For benchmarks that count statements (docs/benchmarks.md).
		cmd.Args = append(cmd.Args, "-c", "shared_preload_libraries=pg_stat_statements")
	}
	cmd.Dir = dir
	cmd.Env = serverEnv()
	cmd.Stdout = logf
	cmd.Stderr = logf
	setProcAttr(cmd, cred)
	setServerProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pgcluster: start postgres: %w", err)
	}
	c := &Cluster{
		dir:  dir,
		url:  fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		cmd:  cmd,
		done: make(chan struct{}),
	}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	if err := c.waitReady(ctx, 60*time.Second); err != nil {
		c.kill()
		log, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("pgcluster: %w\n%s", err, tail(log, 2000))
	}
	return c, nil
}

// waitReady polls until the server accepts a connection, the process exits
// or the deadline passes.
func (c *Cluster) waitReady(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		conn, err := pgx.Connect(ctx, c.url)
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("postgres exited during start-up: %v", c.err)
		case <-ctx.Done():
			return fmt.Errorf("postgres not ready: %w (last error: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// Stop shuts the server down and removes its directory. It is safe to call
// more than once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		// SIGINT is PostgreSQL's "fast" shutdown: it aborts open sessions,
		// which is what a test teardown wants.
		_ = c.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			c.kill()
		}
		if err := os.RemoveAll(c.dir); err != nil {
			c.stopErr = fmt.Errorf("pgcluster: remove %s: %w", c.dir, err)
		}
	})
	return c.stopErr
}

// kill ends the server at once and waits for it to exit.
func (c *Cluster) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgcluster: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// serverCredential returns the identity initdb and postgres run as: nil (the
// current user) unless we are root, then the "postgres" user.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: running as root needs a \"postgres\" user to run the server as (PostgreSQL refuses root): %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: postgres uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: postgres gid %q: %w", u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// serverEnv is a minimal environment: the caller's PG* variables (PGDATA,
// PGPORT, ...) must not leak into initdb or the server.
func serverEnv() []string {
	env := []string{"LC_ALL=C", "TZ=UTC"}
	if p := os.Getenv("PATH"); p != "" {
		env = append(env, "PATH="+p)
	}
	return env
}

func tail(b []byte, n int) []byte {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return b
}

// String describes the cluster for logs.
func (c *Cluster) String() string {
	return "pgcluster(" + strings.TrimPrefix(c.url, "postgres://") + ")"
}
