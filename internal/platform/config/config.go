// Package config holds every setting of the svc binary: its flag, its
// environment variable and its default, in one table, so that `svc help`
// and `svc <cmd> -h` list them all and no subcommand invents its own.
package config

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Config is the resolved configuration of one svc process.
type Config struct {
	Addr              string
	DataDir           string
	DatabaseURL       string
	TemporalAddress   string
	TemporalNamespace string
	TaskQueue         string
	TemporalPort      int
	MaxBodyBytes      int64
	RequireAuth       bool
	InternalToken     string
	OIDCIssuer        string
	OIDCAudience      string
	WorkspaceClaim    string
	OIDCGroupPrefix   string
	LogLevel          string
	LogFormat         string
	ShutdownTimeout   time.Duration
	AuthFailLimit     int
	OTLPEndpoint      string
	PublicURL         string
	// UIOIDCClientID is the public client the web view signs in with at
	// OIDC_ISSUER (authorization code + PKCE); empty hides that sign-in.
	UIOIDCClientID string
	// UIOIDCScopes are the scopes the web view's sign-in asks for.
	UIOIDCScopes string
	// TenantRuns caps the runs a workspace may submit in a rolling 24 hours
	// (POST /runs); 0 means unlimited.
	TenantRuns int
	// LocalMaxConcurrent bounds the local runtime's jobs that run at once
	// on this worker; 0 is unbounded.
	LocalMaxConcurrent int
	// SchedulerQueueMax bounds the runs and case-trials a workspace may
	// have waiting or running; a submit past it is 429. 0 is unbounded.
	SchedulerQueueMax int
	// WebhookAllow lists private destinations webhooks may reach anyway.
	WebhookAllow string
	// WebhookAttempts bounds delivery attempts of one webhook.
	WebhookAttempts int
	// ProbeAllow lists private destinations runtime probes (and the nomad
	// and k8s clients) may reach anyway; it is separate from WebhookAllow.
	ProbeAllow string
	// K8sOperatorNamespaces lists the namespaces where a k8s runtime that
	// names no credentials of its own (neither kubeconfigSecret nor
	// server+authSecret) may run jobs with the control plane's own
	// kubeconfig or in-cluster identity. Empty: that path is off.
	K8sOperatorNamespaces string
	// HarnessOTLPEndpoint is exported to harnesses as
	// OTEL_EXPORTER_OTLP_ENDPOINT.
	HarnessOTLPEndpoint string
	SecretKey           string
	// LocalRuntime is auto, on or off: whether this worker runs jobs of
	// the local runtime (auto: on, except in serve/worker with
	// RequireAuth).
	LocalRuntime string
	// LocalIsolation is auto, namespaces or none: how local jobs are kept
	// from the service (docs/runtimes.md).
	LocalIsolation string
	// LocalUser is the user local jobs run as ("" picks svc-job as root).
	LocalUser string
	// LocalNetwork is auto, isolated, host or none: what local jobs reach
	// on the network (docs/runtimes.md).
	LocalNetwork string
	// LocalNetworkAllow lists host loopback addresses (host:port) that
	// jobs in the isolated network reach besides the API.
	LocalNetworkAllow string
	// LocalUIDs is the pool of uids local jobs run as ("first-last"; ""
	// for the driver's default).
	LocalUIDs string
	// LocalWorkDir is where local jobs' work areas are ("" picks a tmpfs
	// of the host when there is one, else the data directory).
	LocalWorkDir string
	// PprofAddr, when set, serves net/http/pprof there (loopback only).
	PprofAddr string
	// TrustedProxies lists the proxies whose X-Forwarded-For names the
	// client address (comma-separated CIDRs or addresses); empty trusts none.
	TrustedProxies string
	// IngestMaxEventsPerHour is the OTLP door's hourly event quota of a
	// workspace without an override; 0 means unlimited.
	IngestMaxEventsPerHour int
	// TrajectoryRetentionDays deletes sealed trajectories older than that
	// many days, unless a workspace sets its own TTL; 0 keeps them.
	TrajectoryRetentionDays int
	// IngestIdleWindow is how long an external trajectory's spans wait
	// without a new one before it is sealed.
	IngestIdleWindow time.Duration
	// ApprovalNoticeSweep is how often the worker deletes the
	// agent_approval_requested notifications whose approval is no longer
	// pending (decided, expired or gone).
	ApprovalNoticeSweep time.Duration

	// TemporalTLSCert and TemporalTLSKey are the PEM files of the client
	// certificate serve and worker present to Temporal (mutual TLS);
	// TemporalTLSCA the PEM file of the CAs that sign the frontend's
	// certificate; TemporalTLSServerName the name it must carry. All
	// empty: plain gRPC.
	TemporalTLSCert       string
	TemporalTLSKey        string
	TemporalTLSCA         string
	TemporalTLSServerName string

	// PGStatementTimeout is PostgreSQL's statement_timeout for svc's
	// sessions (serve, worker); 0 turns it off. Migrations run without it.
	PGStatementTimeout time.Duration

	// ImageStore is the OCI registry worlds and imported images are kept
	// in ([http://|https://]host[:port][/prefix]); empty in svc dev means
	// the managed store the binary serves on loopback.
	ImageStore string
	// ImageStoreSecret names the workspace secret ("workspace/name")
	// holding ImageStore's credential; empty: none.
	ImageStoreSecret string
	// WorldKeepVersions is how many versions of a world retention keeps
	// after a publish; below 1 prunes nothing.
	WorldKeepVersions int
	// WorldMaxCaptureBytes bounds the compressed size of a world
	// snapshot's change set.
	WorldMaxCaptureBytes int64

	// SandboxMaxPerAgent is how many live sandbox sessions one agent may
	// hold; SandboxMaxPerTenant how many a workspace may (agents never
	// take its last slot).
	SandboxMaxPerAgent  int
	SandboxMaxPerTenant int
	// SandboxMaxTTL bounds a session's ttl (and a touch's).
	SandboxMaxTTL time.Duration
	// SandboxImageDirs are the directories under which a session's image
	// may be an OCI layout path (comma-separated; empty: none).
	SandboxImageDirs string
	// SandboxRoot holds the sandbox runtime's state (unpacked images,
	// sessions' file systems); "" is <data dir>/sandbox.
	SandboxRoot string
	// SandboxRunc is the OCI runtime's program; "" looks runc up on PATH.
	SandboxRunc string
	// WorkerHost names this worker's host: the sandbox host queue it
	// polls, the host its sessions record, the provenance of its runs;
	// "" is os.Hostname.
	WorkerHost string
}

// workerHostPattern is what SVC_WORKER_HOST admits: a host name, or any
// name of the same characters.
var workerHostPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$`)

// Setting is one row of the settings table.
type Setting struct {
	Flag    string // flag name without dashes; empty for environment-only settings
	Env     string // environment variable
	Default string // built-in default, as text
	Usage   string
	Secret  bool // never a flag (secrets stay out of argv) and never printed
	set     func(c *Config, v string) error
}

func str(p func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error { *p(c) = v; return nil }
}

func integer(p func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("want a whole number, got %q", v)
		}
		*p(c) = n
		return nil
	}
}

func oneOf(p func(*Config) *string, values ...string) func(*Config, string) error {
	return func(c *Config, v string) error {
		for _, ok := range values {
			if v == ok {
				*p(c) = v
				return nil
			}
		}
		return fmt.Errorf("want one of %s, got %q", strings.Join(values, ", "), v)
	}
}

func boolean(p func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true/false or 1/0, got %q", v)
		}
		*p(c) = b
		return nil
	}
}

// Settings is the table of every setting, in the order help lists them.
var Settings = []Setting{
	{Flag: "addr", Env: "SVC_ADDR", Default: "127.0.0.1:8080", Usage: "address the HTTP API listens on",
		set: str(func(c *Config) *string { return &c.Addr })},
	{Flag: "data-dir", Env: "SVC_DATA_DIR", Default: "./.svc", Usage: "folder for the embedded store and embedded Temporal (svc dev)",
		set: str(func(c *Config) *string { return &c.DataDir })},
	{Flag: "database-url", Env: "DATABASE_URL", Default: "", Usage: "PostgreSQL URL (postgres://user@host:5432/db); required by serve, worker and migrate",
		set: str(func(c *Config) *string { return &c.DatabaseURL })},
	{Flag: "pg-statement-timeout", Env: "SVC_PG_STATEMENT_TIMEOUT", Default: "60s", Usage: "PostgreSQL statement_timeout of svc's database sessions: a statement running longer is cancelled with an error (migrations run without it); 0 turns it off; a statement_timeout in DATABASE_URL wins",
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return fmt.Errorf("want a duration such as 60s (0 turns it off), got %q", v)
			}
			if d > 0 && d < time.Millisecond {
				return fmt.Errorf("want at least 1ms (PostgreSQL counts milliseconds) or 0 to turn it off, got %q", v)
			}
			c.PGStatementTimeout = d
			return nil
		}},
	{Flag: "temporal-address", Env: "TEMPORAL_ADDRESS", Default: "", Usage: "Temporal frontend host:port; required by serve and worker",
		set: str(func(c *Config) *string { return &c.TemporalAddress })},
	{Flag: "temporal-namespace", Env: "SVC_TEMPORAL_NAMESPACE", Default: "default", Usage: "Temporal namespace",
		set: str(func(c *Config) *string { return &c.TemporalNamespace })},
	{Flag: "temporal-tls-cert", Env: "TEMPORAL_TLS_CERT", Default: "", Usage: "PEM file of the client certificate serve and worker present to Temporal (mutual TLS; with TEMPORAL_TLS_KEY); read again at each new connection",
		set: str(func(c *Config) *string { return &c.TemporalTLSCert })},
	{Flag: "temporal-tls-key", Env: "TEMPORAL_TLS_KEY", Default: "", Usage: "PEM file of the private key of TEMPORAL_TLS_CERT",
		set: str(func(c *Config) *string { return &c.TemporalTLSKey })},
	{Flag: "temporal-tls-ca", Env: "TEMPORAL_TLS_CA", Default: "", Usage: "PEM file of the CAs that sign the Temporal frontend's certificate (the system's roots when unset); any TEMPORAL_TLS_* setting turns TLS on",
		set: str(func(c *Config) *string { return &c.TemporalTLSCA })},
	{Flag: "temporal-tls-server-name", Env: "TEMPORAL_TLS_SERVER_NAME", Default: "", Usage: "name the Temporal frontend's certificate must carry (the host of TEMPORAL_ADDRESS when unset)",
		set: str(func(c *Config) *string { return &c.TemporalTLSServerName })},
	{Flag: "task-queue", Env: "SVC_TASK_QUEUE", Default: "svc", Usage: "Temporal task queue the worker polls",
		set: str(func(c *Config) *string { return &c.TaskQueue })},
	{Flag: "temporal-port", Env: "SVC_TEMPORAL_PORT", Default: "7233", Usage: "loopback port of the embedded Temporal frontend (svc dev); 0 picks a free port",
		set: integer(func(c *Config) *int { return &c.TemporalPort })},
	{Flag: "max-body-bytes", Env: "SVC_MAX_BODY_BYTES", Default: "10485760", Usage: "largest request body accepted; larger bodies answer 413",
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return fmt.Errorf("want a positive number of bytes, got %q", v)
			}
			c.MaxBodyBytes = n
			return nil
		}},
	{Flag: "require-auth", Env: "SVC_REQUIRE_AUTH", Default: "false", Usage: "refuse requests without a bearer credential (401); otherwise the dev principal is used",
		set: boolean(func(c *Config) *bool { return &c.RequireAuth })},
	{Env: "SVC_INTERNAL_TOKEN", Default: "", Secret: true, Usage: "operator token for /internal routes (x-internal-token); unset refuses every call",
		set: str(func(c *Config) *string { return &c.InternalToken })},
	{Env: "SVC_SECRET_KEY", Default: "", Secret: true, Usage: "base64 of 32 random bytes: encrypts workspace secrets at rest; secrets routes refuse to store values while unset",
		set: str(func(c *Config) *string { return &c.SecretKey })},
	{Flag: "oidc-issuer", Env: "OIDC_ISSUER", Default: "", Usage: "OIDC issuer URL; enables OIDC bearer tokens when set",
		set: str(func(c *Config) *string { return &c.OIDCIssuer })},
	{Flag: "oidc-audience", Env: "OIDC_AUDIENCE", Default: "", Usage: "audience OIDC tokens must carry; unchecked when empty",
		set: str(func(c *Config) *string { return &c.OIDCAudience })},
	{Flag: "workspace-claim", Env: "WORKSPACE_CLAIM", Default: "workspace", Usage: "OIDC claim naming the workspace",
		set: str(func(c *Config) *string { return &c.WorkspaceClaim })},
	{Flag: "oidc-group-prefix", Env: "SVC_OIDC_GROUP_PREFIX", Default: "/workspaces/", Usage: "group prefix that names a workspace (/workspaces/<ws>/...)",
		set: str(func(c *Config) *string { return &c.OIDCGroupPrefix })},
	{Flag: "ui-oidc-client-id", Env: "SVC_UI_OIDC_CLIENT_ID", Default: "", Usage: "public OIDC client id (no secret) the web view signs in with at OIDC_ISSUER, redirect URI <public URL>/ui/; empty offers no OIDC sign-in button",
		set: str(func(c *Config) *string { return &c.UIOIDCClientID })},
	{Flag: "ui-oidc-scopes", Env: "SVC_UI_OIDC_SCOPES", Default: "openid profile email", Usage: "space-separated scopes the web view's OIDC sign-in asks for (openid is always added)",
		set: str(func(c *Config) *string { return &c.UIOIDCScopes })},
	{Flag: "auth-fail-limit", Env: "SVC_AUTH_FAIL_LIMIT", Default: "20", Usage: "failed authentications per source address per minute before 429",
		set: integer(func(c *Config) *int { return &c.AuthFailLimit })},
	{Flag: "trusted-proxies", Env: "SVC_TRUSTED_PROXIES", Default: "", Usage: "comma-separated CIDRs or addresses of reverse proxies whose X-Forwarded-For names the client address (the right-most entry not in the list); empty ignores X-Forwarded-For",
		set: str(func(c *Config) *string { return &c.TrustedProxies })},
	{Flag: "log-level", Env: "SVC_LOG_LEVEL", Default: "info", Usage: "debug, info, warn or error",
		set: str(func(c *Config) *string { return &c.LogLevel })},
	{Flag: "log-format", Env: "SVC_LOG_FORMAT", Default: "json", Usage: "json or text",
		set: str(func(c *Config) *string { return &c.LogFormat })},
	{Flag: "shutdown-timeout", Env: "SVC_SHUTDOWN_TIMEOUT", Default: "20s", Usage: "how long a graceful shutdown waits for in-flight work",
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("want a duration such as 20s, got %q", v)
			}
			c.ShutdownTimeout = d
			return nil
		}},
	{Flag: "public-url", Env: "SVC_PUBLIC_URL", Default: "", Usage: "external base URL of the API (for OAuth metadata and links); derived from the request when empty",
		set: str(func(c *Config) *string { return &c.PublicURL })},
	{Flag: "tenant-runs", Env: "SVC_TENANT_RUNS", Default: "0", Usage: "runs a workspace may submit per rolling 24 hours (top-level runs and the case-trials of batches) before a submit answers 402; 0 is unlimited",
		set: integer(func(c *Config) *int { return &c.TenantRuns })},
	{Flag: "local-max-concurrent", Env: "SVC_LOCAL_MAX_CONCURRENT", Default: "64", Usage: "local runtime jobs that run at once on this worker, across every batch and run; more wait for one to end; 0 is unbounded",
		set: integer(func(c *Config) *int { return &c.LocalMaxConcurrent })},
	{Flag: "scheduler-queue-max", Env: "SVC_SCHEDULER_QUEUE_MAX", Default: "1000000", Usage: "runs and case-trials a workspace may have waiting or running before a submit answers 429; 0 is unbounded",
		set: integer(func(c *Config) *int { return &c.SchedulerQueueMax })},
	{Flag: "webhook-allow", Env: "SVC_WEBHOOK_ALLOW", Default: "", Usage: "comma-separated CIDRs, addresses or host names that webhooks may reach although private, loopback or link-local",
		set: str(func(c *Config) *string { return &c.WebhookAllow })},
	{Flag: "webhook-attempts", Env: "SVC_WEBHOOK_ATTEMPTS", Default: "8", Usage: "delivery attempts of one webhook, with exponential backoff from 1s to 5m",
		set: integer(func(c *Config) *int { return &c.WebhookAttempts })},
	{Flag: "probe-allow", Env: "SVC_PROBE_ALLOW", Default: "", Usage: "comma-separated CIDRs, addresses or host names that runtime probes and the nomad and k8s clients may reach although private, loopback or link-local",
		set: str(func(c *Config) *string { return &c.ProbeAllow })},
	{Flag: "k8s-operator-namespaces", Env: "SVC_K8S_OPERATOR_NAMESPACES", Default: "", Usage: "comma-separated namespaces (ns: of the current context or in-cluster identity; ctx/ns: in kubeconfig context ctx) where a k8s runtime without kubeconfigSecret or server+authSecret may run jobs as the control plane; empty: such runtimes are refused",
		set: str(func(c *Config) *string { return &c.K8sOperatorNamespaces })},
	{Flag: "harness-otlp-endpoint", Env: "SVC_HARNESS_OTLP_ENDPOINT", Default: "", Usage: "OTLP/HTTP endpoint exported to harnesses as OTEL_EXPORTER_OTLP_ENDPOINT (with svc.run_id in OTEL_RESOURCE_ATTRIBUTES); unset when empty",
		set: str(func(c *Config) *string { return &c.HarnessOTLPEndpoint })},
	{Flag: "local-runtime", Env: "SVC_LOCAL_RUNTIME", Default: "auto", Usage: "auto, on or off: whether this worker runs jobs of the local runtime; auto is on except in serve/worker with SVC_REQUIRE_AUTH=1",
		set: oneOf(func(c *Config) *string { return &c.LocalRuntime }, "auto", "on", "off")},
	{Flag: "local-isolation", Env: "SVC_LOCAL_ISOLATION", Default: "auto", Usage: "auto, namespaces or none: local jobs in PID and mount namespaces of their own as an unprivileged user (auto: where the kernel allows; serve/worker refuse local jobs without it unless none is set)",
		set: oneOf(func(c *Config) *string { return &c.LocalIsolation }, "auto", "namespaces", "none")},
	{Flag: "local-user", Env: "SVC_LOCAL_USER", Default: "", Usage: "user local jobs run as (name or uid[:gid]); unset: svc-job (created if absent) when svc runs as root, else root of a user namespace mapped to svc's own user",
		set: str(func(c *Config) *string { return &c.LocalUser })},
	{Flag: "local-network", Env: "SVC_LOCAL_NETWORK", Default: "auto", Usage: "auto, isolated, host or none: isolated gives local jobs public addresses through slirp4netns, refuses private and link-local networks (cloud metadata) and the host's own addresses, and of the host's loopback gives only the API's address (auto: isolated where it can be set up; dev falls back to host, serve/worker refuse local jobs); host shares the host's network; none gives each job an empty network namespace",
		set: oneOf(func(c *Config) *string { return &c.LocalNetwork }, "auto", "isolated", "host", "none")},
	{Flag: "local-network-allow", Env: "SVC_LOCAL_NETWORK_ALLOW", Default: "", Usage: "comma-separated services (host:port, relayed: 127.0.0.1:11434, 10.1.2.3:8000) and IPv4 networks or addresses (10.1.0.0/16, every port) that local jobs in the isolated network may reach besides the API and public addresses",
		set: str(func(c *Config) *string { return &c.LocalNetworkAllow })},
	{Flag: "local-uids", Env: "SVC_LOCAL_UIDS", Default: "", Usage: "first-last: the uids local jobs take one each while they run, when svc is root and SVC_LOCAL_USER is unset (empty: 1879048192-1879113727)",
		set: str(func(c *Config) *string { return &c.LocalUIDs })},
	{Flag: "local-work-dir", Env: "SVC_LOCAL_WORK_DIR", Default: "", Usage: "directory of local jobs' work areas (empty: /dev/shm/svc-work-<id> when /dev/shm is a tmpfs with 1 GiB free, else <data-dir>/work)",
		set: str(func(c *Config) *string { return &c.LocalWorkDir })},
	{Flag: "pprof-addr", Env: "SVC_PPROF_ADDR", Default: "", Usage: "loopback address (127.0.0.1:6060) where dev, serve and worker serve Go's pprof profiles; off when empty",
		set: str(func(c *Config) *string { return &c.PprofAddr })},
	{Flag: "ingest-max-events-per-hour", Env: "SVC_INGEST_MAX_EVENTS_PER_HOUR", Default: "0", Usage: "trace events a workspace may send to POST /v1/traces per hour (a workspace override wins); past it the door answers 429; 0 is unlimited",
		set: integer(func(c *Config) *int { return &c.IngestMaxEventsPerHour })},
	{Flag: "trajectory-retention-days", Env: "SVC_TRAJECTORY_RETENTION_DAYS", Default: "0", Usage: "days a sealed trajectory is kept before the trace sweep deletes it (a workspace's retention TTL wins); 0 keeps them",
		set: integer(func(c *Config) *int { return &c.TrajectoryRetentionDays })},
	{Flag: "ingest-idle-window", Env: "SVC_INGEST_IDLE_WINDOW", Default: "5m", Usage: "how long the spans of an external trajectory (an svc.run_id svc does not know) wait without a new span before the trace sweep seals them",
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("want a positive duration such as 5m, got %q", v)
			}
			c.IngestIdleWindow = d
			return nil
		}},
	{Flag: "approval-notice-sweep", Env: "SVC_APPROVAL_NOTICE_SWEEP", Default: "1m", Usage: "how often the worker deletes the agent_approval_requested notifications whose approval is no longer pending (decided, expired or gone); a decision or an expiry deletes its own at once, the sweep catches the rest",
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("want a positive duration such as 1m, got %q", v)
			}
			c.ApprovalNoticeSweep = d
			return nil
		}},
	{Flag: "image-store", Env: "SVC_IMAGE_STORE", Default: "", Usage: "OCI registry of worlds and imported images, [http://|https://]host[:port][/prefix] (https unless http:// is written; its address must pass SVC_WEBHOOK_ALLOW when private); empty: svc dev serves its own managed store on loopback under the data dir, serve and worker refuse world sessions",
		set: str(func(c *Config) *string { return &c.ImageStore })},
	{Flag: "image-store-secret", Env: "SVC_IMAGE_STORE_SECRET", Default: "", Usage: "workspace/name of the workspace secret that holds SVC_IMAGE_STORE's credential (user:password, or a bearer token); the secret's allowedHosts must admit the store's host; read at start (restart to rotate); empty: no credential",
		set: str(func(c *Config) *string { return &c.ImageStoreSecret })},
	{Flag: "world-keep-versions", Env: "SVC_WORLD_KEEP_VERSIONS", Default: "10", Usage: "versions of a world kept after each publish: older ones are pruned oldest first with their image bytes, skipping versions another member published; below 1 prunes nothing",
		set: integer(func(c *Config) *int { return &c.WorldKeepVersions })},
	{Flag: "world-max-capture-bytes", Env: "SVC_WORLD_MAX_CAPTURE_BYTES", Default: "2147483648", Usage: "largest compressed change set a world snapshot publishes (default 2 GiB); a larger one is refused",
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return fmt.Errorf("want a positive number of bytes, got %q", v)
			}
			c.WorldMaxCaptureBytes = n
			return nil
		}},
	{Flag: "sandbox-max-per-agent", Env: "SVC_SANDBOX_MAX_PER_AGENT", Default: "1", Usage: "live sandbox sessions one agent (a declared agent id) may hold; past it POST /sandboxes answers 429 naming the holder and when a slot frees",
		set: integer(func(c *Config) *int { return &c.SandboxMaxPerAgent })},
	{Flag: "sandbox-max-per-tenant", Env: "SVC_SANDBOX_MAX_PER_TENANT", Default: "10", Usage: "live sandbox sessions a workspace may hold; agents never take the last slot, which stays for a member; past it POST /sandboxes answers 429",
		set: integer(func(c *Config) *int { return &c.SandboxMaxPerTenant })},
	{Flag: "sandbox-max-ttl", Env: "SVC_SANDBOX_MAX_TTL", Default: "24h", Usage: "longest ttl a sandbox session may be created or touched with",
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < time.Second {
				return fmt.Errorf("want a duration of at least 1s such as 24h, got %q", v)
			}
			c.SandboxMaxTTL = d
			return nil
		}},
	{Flag: "sandbox-image-dirs", Env: "SVC_SANDBOX_IMAGE_DIRS", Default: "", Usage: "comma-separated directories under which a sandbox's image may be an OCI image layout path; empty: images come from the image store only",
		set: str(func(c *Config) *string { return &c.SandboxImageDirs })},
	{Flag: "sandbox-root", Env: "SVC_SANDBOX_ROOT", Default: "", Usage: "state directory of the local sandbox runtime (unpacked images, sessions' file systems); empty: <data dir>/sandbox",
		set: str(func(c *Config) *string { return &c.SandboxRoot })},
	{Flag: "sandbox-runc", Env: "SVC_SANDBOX_RUNC", Default: "", Usage: "the OCI runtime sandbox sessions run under; empty: runc on PATH (Debian's runc)",
		set: str(func(c *Config) *string { return &c.SandboxRunc })},
	{Flag: "worker-host", Env: "SVC_WORKER_HOST", Default: "", Usage: "this worker's host name: the sandbox sessions it creates are its own, on the task queue <task queue>@sandbox-host:<name>, and at its start it settles that name's lost sessions orphaned; two sandbox-capable workers on one machine need distinct names; empty: the machine's host name",
		set: func(c *Config, v string) error {
			if v != "" && !workerHostPattern.MatchString(v) {
				return fmt.Errorf("want 1-253 letters, digits, '.', '_' or '-', starting with a letter or digit, got %q", v)
			}
			c.WorkerHost = v
			return nil
		}},
	{Env: "OTEL_EXPORTER_OTLP_ENDPOINT", Default: "", Usage: "OTLP endpoint for our own traces; tracing is off when unset",
		set: str(func(c *Config) *string { return &c.OTLPEndpoint })},
}

// Defaults returns the configuration with built-in defaults only.
func Defaults() Config {
	var c Config
	for _, s := range Settings {
		if err := s.set(&c, s.Default); err != nil && s.Default != "" {
			panic("config: bad default for " + s.Env + ": " + err.Error())
		}
	}
	return c
}

// Load resolves the configuration: built-in defaults, then the environment,
// then flags parsed from args. Only the settings named in flags become flags
// of fs (every setting is still read from the environment).
func Load(fs *flag.FlagSet, args []string, getenv func(string) string) (Config, error) {
	c := Defaults()
	for _, s := range Settings {
		if v := getenv(s.Env); v != "" {
			if err := s.set(&c, v); err != nil {
				return c, fmt.Errorf("%s: %w", s.Env, err)
			}
		}
	}
	var ferr error
	for _, s := range Settings {
		if s.Flag == "" || s.Secret {
			continue
		}
		s := s
		fs.Func(s.Flag, fmt.Sprintf("%s (env %s, default %q)", s.Usage, s.Env, s.Default), func(v string) error {
			if err := s.set(&c, v); err != nil {
				ferr = fmt.Errorf("-%s: %w", s.Flag, err)
				return err
			}
			return nil
		})
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	return c, ferr
}

// PrintSettings writes the settings table: flag, environment variable, default, meaning.
func PrintSettings(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "FLAG\tENVIRONMENT\tDEFAULT\tMEANING")
	for _, s := range Settings {
		flagName := "-" + s.Flag
		if s.Flag == "" || s.Secret {
			flagName = "(env only)"
		}
		def := s.Default
		if def == "" {
			def = "(unset)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", flagName, s.Env, def, s.Usage)
	}
	tw.Flush()
}

// Environ is os.Getenv; a variable so tests can pass their own.
var Environ = os.Getenv

// Redacted returns c with secret values replaced, for logging.
func (c Config) Redacted() Config {
	if c.InternalToken != "" {
		c.InternalToken = "[set]"
	}
	if c.SecretKey != "" {
		c.SecretKey = "[set]"
	}
	if c.DatabaseURL != "" {
		c.DatabaseURL = redactURL(c.DatabaseURL)
	}
	return c
}

func redactURL(u string) string {
	at := strings.LastIndex(u, "@")
	scheme := strings.Index(u, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return u
	}
	userinfo := u[scheme+3 : at]
	if i := strings.Index(userinfo, ":"); i >= 0 {
		return u[:scheme+3] + userinfo[:i] + ":[redacted]" + u[at:]
	}
	return u
}

// K8sOperatorNamespaceList is SVC_K8S_OPERATOR_NAMESPACES as a list:
// trimmed, empties dropped.
func (c Config) K8sOperatorNamespaceList() []string {
	var out []string
	for _, ns := range strings.Split(c.K8sOperatorNamespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}
