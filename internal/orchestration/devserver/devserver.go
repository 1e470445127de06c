// Package devserver embeds Temporal's own server in the process, with its
// state in one SQLite file, for `svc dev` and for tests. It needs no download
// at run time, listens on loopback only, and a second start on the same file
// resumes every workflow that was running.
//
// Every gRPC listener of the server (the frontend and the internal history,
// matching and worker services) requires mutual TLS with certificates of a
// private CA that the first start creates next to the database file
// (TLSDirName): a local job or another user of the machine that finds the
// loopback port still cannot call Temporal without the client key, which
// only the user running the server can read.
//
// It is the only package of svc that imports go.temporal.io/server: linking
// the server costs about a minute and 2.5 GB of memory, so everything else
// talks to Temporal through the SDK (package orchestration).
//
// The setup follows go.temporal.io/server/temporaltest/internal/lite_server.go
// (what `temporal server start-dev` runs), which is internal to the server
// module and so is copied rather than imported.
package devserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"

	"svc/internal/platform/derrors"
)

// loopback is where every service of the embedded server listens and what
// they advertise to each other: nothing outside the machine can reach it.
const loopback = "127.0.0.1"

// clusterName is the single cluster of the embedded server; it is stored in
// the database file, so it must never change.
const clusterName = "active"

// readyTimeout bounds the wait for the frontend when ctx has no deadline.
const readyTimeout = 30 * time.Second

// sqlitePragmas make SQLite write-ahead logged: each commit is one append
// instead of a rewritten journal, and with synchronous=NORMAL a killed
// process still loses nothing it committed (only a power cut can lose the
// last commits, acceptable for a development server).
var sqlitePragmas = map[string]string{
	"journal_mode": "wal",
	"synchronous":  "NORMAL",
}

// Options configures the embedded server.
type Options struct {
	// DBPath is the SQLite file holding all Temporal state; created with
	// its schema when it does not exist. Its folder must exist.
	DBPath string
	// FrontendPort is the loopback port of the frontend; 0 picks a free one.
	FrontendPort int
	// Namespace is registered on every start (a no-op when it exists);
	// "default" when empty.
	Namespace string
	// Logger receives the server's warnings and errors; its info and debug
	// logs are dropped because they are many lines a second. slog.Default()
	// when nil.
	Logger *slog.Logger
	// TLSDir holds the CA, server and client certificates (created on the
	// first start, reused after); TLSDirName next to DBPath when empty.
	TLSDir string
}

// Server is a running embedded Temporal server.
type Server struct {
	srv      temporal.Server
	hostPort string
	services map[string]string // service name -> its gRPC host:port
	creds    *credentials
	tlsFiles TLSFiles
	log      serverLogger
	unlock   func() error // releases the database file's lock
	stopOnce sync.Once
	stopErr  error
}

// Start starts the server and returns once its frontend answers health
// checks. A frontend port already in use is an error that wraps
// syscall.EADDRINUSE and names SVC_TEMPORAL_PORT.
func Start(ctx context.Context, o Options) (_ *Server, err error) {
	defer derrors.Wrap(&err, "devserver.Start(%q, port %d)", o.DBPath, o.FrontendPort)
	if o.DBPath == "" {
		return nil, derrors.Invalidf("no database file given")
	}
	if o.FrontendPort < 0 || o.FrontendPort > 65535 {
		return nil, derrors.Invalidf("frontend port %d out of range", o.FrontendPort)
	}
	if o.Namespace == "" {
		o.Namespace = client.DefaultNamespace
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.TLSDir == "" {
		o.TLSDir = filepath.Join(filepath.Dir(o.DBPath), TLSDirName)
	}
	if _, err := os.Stat(filepath.Dir(o.DBPath)); err != nil {
		return nil, fmt.Errorf("folder of the database file: %w", err)
	}

	unlock, err := lockFile(o.DBPath + ".lock")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = unlock()
		}
	}()
	// Check the frontend port before touching the database, so the common
	// mistake (another Temporal on 7233) leaves no database file behind and
	// gets a message that says what to change.
	if o.FrontendPort != 0 {
		if err := checkPortFree(o.FrontendPort); err != nil {
			return nil, err
		}
	}
	// The internal services (history, matching, worker) get fresh ports on
	// every start: nothing outside the process dials them, and fixed ports
	// would collide between two dev servers on one machine.
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	frontendPort := o.FrontendPort
	if frontendPort == 0 {
		frontendPort = ports[3]
	}
	addr := func(port int) string { return net.JoinHostPort(loopback, strconv.Itoa(port)) }
	hostPort := addr(frontendPort)

	sqlCfg := &config.SQL{
		PluginName:        sqliteplugin.PluginName,
		DatabaseName:      o.DBPath,
		ConnectAttributes: map[string]string{"mode": "rwc"},
	}
	for k, v := range sqlitePragmas {
		sqlCfg.ConnectAttributes[k] = v
	}
	begin := time.Now()
	created, err := ensureSchema(o.DBPath)
	if err != nil {
		return nil, err
	}
	creds, why, err := ensureCredentials(o.TLSDir, time.Now())
	if err != nil {
		return nil, fmt.Errorf("TLS of the embedded server (%s): %w", o.TLSDir, err)
	}
	if why != "" {
		o.Logger.Info("embedded Temporal: created its CA and certificates", "dir", o.TLSDir, "because", why)
	}
	ns, err := sqlite.NewNamespaceConfig(clusterName, o.Namespace, false, nil)
	if err != nil {
		return nil, fmt.Errorf("namespace %q: %w", o.Namespace, err)
	}
	// CreateNamespaces skips a namespace that already exists, so this runs
	// on every start and a changed SVC_TEMPORAL_NAMESPACE just works.
	if err := sqlite.CreateNamespaces(sqlCfg, ns); err != nil {
		return nil, fmt.Errorf("register namespace %q: %w", o.Namespace, err)
	}

	cfg := serverConfig(sqlCfg, hostPort, frontendPort, ports)
	cfg.Global.TLS = creds.rootTLS()
	logger := newServerLogger(o.Logger)
	var srv temporal.Server
	err = catchFatal(func() error {
		var err error
		srv, err = temporal.NewServer(
			temporal.WithConfig(cfg),
			temporal.ForServices(temporal.DefaultServices),
			temporal.WithLogger(logger),
			// All four services live in this process: static hosts
			// replace ringpop gossip, which would join slowly and, after a
			// restart, chase the previous run's members stored in the file.
			temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
				primitives.FrontendService: static.SingleLocalHost(hostPort),
				primitives.HistoryService:  static.SingleLocalHost(addr(ports[0])),
				primitives.MatchingService: static.SingleLocalHost(addr(ports[1])),
				primitives.WorkerService:   static.SingleLocalHost(addr(ports[2])),
			}),
		)
		if err != nil {
			return fmt.Errorf("create server: %w", err)
		}
		if err := srv.Start(); err != nil {
			return fmt.Errorf("start server: %w", err)
		}
		return nil
	})
	if err != nil {
		if srv != nil {
			_ = srv.Stop()
		}
		return nil, err
	}
	s := &Server{srv: srv, hostPort: hostPort, creds: creds, tlsFiles: tlsFiles(o.TLSDir), log: logger, unlock: unlock,
		services: map[string]string{
			"frontend": hostPort,
			"history":  addr(ports[0]),
			"matching": addr(ports[1]),
			"worker":   addr(ports[2]),
		}}
	if err := waitReady(ctx, hostPort, o.Namespace, creds.clientTLS()); err != nil {
		_ = srv.Stop()
		return nil, err
	}
	o.Logger.Info("embedded Temporal ready", "frontend", hostPort, "namespace", o.Namespace,
		"db", o.DBPath, "new_db", created, "took", time.Since(begin).Round(time.Millisecond))
	return s, nil
}

// HostPort is the frontend's address, for orchestration.Dial.
func (s *Server) HostPort() string { return s.hostPort }

// ClientTLS is the TLS configuration to dial the frontend with
// (orchestration.ClientOptions.TLS): it trusts the server's CA only and
// presents the client certificate. Each call returns a new copy.
func (s *Server) ClientTLS() *tls.Config { return s.creds.clientTLS() }

// TLSFiles are the files of the CA and of the client certificate and key,
// for a client in another process (TEMPORAL_TLS_CA, TEMPORAL_TLS_CERT,
// TEMPORAL_TLS_KEY of `svc serve` and `svc worker`).
func (s *Server) TLSFiles() TLSFiles { return s.tlsFiles }

// Services returns the gRPC address of each service of the server
// (frontend, history, matching, worker); every one requires the client
// certificate.
func (s *Server) Services() map[string]string {
	return maps.Clone(s.services)
}

// Stop stops every service of the server; calling it again does nothing.
// Workflows in flight stay in the database file for the next Start.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.log.quietDown()
		if err := s.srv.Stop(); err != nil {
			s.stopErr = fmt.Errorf("stop embedded Temporal: %w", err)
		}
		if err := s.unlock(); err != nil && s.stopErr == nil {
			s.stopErr = fmt.Errorf("unlock the database file: %w", err)
		}
	})
	return s.stopErr
}

// serverConfig is the single-process, single-shard, loopback-only
// configuration of lite_server.go, with the Prometheus and pprof listeners
// left off (svc exposes its own metrics).
func serverConfig(sqlCfg *config.SQL, hostPort string, frontendPort int, ports []int) *config.Config {
	service := func(grpcPort int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: grpcPort, BindOnLocalHost: true}}
	}
	return &config.Config{
		Global: config.Global{
			// Metrics nil: the server uses a no-op metrics handler and opens
			// no Prometheus listener. PProf.Port 0: no pprof listener.
		},
		Persistence: config.Persistence{
			DefaultStore:     sqliteplugin.PluginName,
			VisibilityStore:  sqliteplugin.PluginName,
			NumHistoryShards: 1,
			DataStores: map[string]config.DataStore{
				sqliteplugin.PluginName: {SQL: sqlCfg},
			},
		},
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace:    false,
			FailoverVersionIncrement: 10,
			MasterClusterName:        clusterName,
			CurrentClusterName:       clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{
				clusterName: {
					Enabled:                true,
					InitialFailoverVersion: 1,
					RPCAddress:             hostPort,
				},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services: map[string]config.Service{
			"frontend": service(frontendPort),
			"history":  service(ports[0]),
			"matching": service(ports[1]),
			"worker":   service(ports[2]),
		},
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{
			Archival: config.ArchivalNamespaceDefaults{
				History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
				Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
			},
		},
		// The server's internal worker dials the frontend through this.
		PublicClient: config.PublicClient{HostPort: hostPort},
	}
}

// ensureSchema creates the database file with Temporal's schema when it does
// not exist. The schema is written to a temporary file that is renamed into
// place, so a file at DBPath always holds a complete schema: a crash during
// the first start leaves nothing that a later start would mistake for a
// database.
func ensureSchema(path string) (created bool, err error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("database file: %w", err)
	}
	// A unique name per attempt: the SQLite plugin keeps one connection per
	// file name open for the life of the process, and must not hand a later
	// attempt a connection to a file already renamed.
	tmp := fmt.Sprintf("%s.setup-%d-%d", path, os.Getpid(), time.Now().UnixNano())
	cleanup := func() {
		for _, suffix := range []string{"", "-journal", "-wal", "-shm"} {
			_ = os.Remove(tmp + suffix)
		}
	}
	// The default rollback journal, not WAL: every statement is complete in
	// the main file when SetupSchema returns, which is what the rename moves.
	err = sqlite.SetupSchema(&config.SQL{
		PluginName:        sqliteplugin.PluginName,
		DatabaseName:      tmp,
		ConnectAttributes: map[string]string{"mode": "rwc"},
	})
	if err != nil {
		cleanup()
		return false, fmt.Errorf("create Temporal schema: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		cleanup()
		return false, fmt.Errorf("create Temporal schema: %w", err)
	}
	return true, nil
}

// checkPortFree fails when something already listens on the loopback port.
func checkPortFree(port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(port)))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("port %d in use: set SVC_TEMPORAL_PORT to a free port, or 0 to pick one: %w", port, err)
		}
		return fmt.Errorf("frontend port %d: %w", port, err)
	}
	return ln.Close()
}

// freePorts returns n distinct loopback ports that were free a moment ago.
// All listeners stay open until all ports are chosen, so none repeats.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	lns := make([]net.Listener, 0, n)
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitReady polls the frontend's health check until it answers, ctx ends,
// or readyTimeout passes when ctx has no deadline.
func waitReady(ctx context.Context, hostPort, namespace string, tlsCfg *tls.Config) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, readyTimeout)
		defer cancel()
	}
	quiet := tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		c, err := client.DialContext(ctx, client.Options{HostPort: hostPort, Namespace: namespace, Logger: quiet,
			ConnectionOptions: client.ConnectionOptions{TLS: tlsCfg}})
		if err == nil {
			_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
			c.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("frontend %s not ready: %w (last error: %v)", hostPort, ctx.Err(), last)
		case <-tick.C:
		}
	}
}
