package sandboxes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
)

// readyTimeout bounds how long a create waits for the container.
const readyTimeout = 5 * time.Minute

// ttl checks a ttl in seconds against the bounds (0: def).
func (s *Service) ttl(secs int64, def time.Duration) (time.Duration, error) {
	if secs == 0 {
		return def, nil
	}
	if secs < 1 || time.Duration(secs)*time.Second > s.o.MaxTTL {
		return 0, derrors.Invalidf("ttl %d: want a number of seconds from 1 to %d (SVC_SANDBOX_MAX_TTL)", secs, int64(s.o.MaxTTL/time.Second))
	}
	return time.Duration(secs) * time.Second, nil
}

// checkImage admits an image: an OCI layout path under an allowed
// directory, or a reference into the image store.
func (s *Service) checkImage(image string) error {
	if strings.TrimSpace(image) != image || image == "" {
		return derrors.Invalidf("image %q: want a reference into the image store (repo:tag) or the absolute path of an OCI image layout", image)
	}
	if !filepath.IsAbs(image) {
		if !s.o.ImageStore {
			return derrors.Invalidf("image %q is a reference into the image store, and this deployment has none (SVC_IMAGE_STORE); give the absolute path of an OCI image layout under SVC_SANDBOX_IMAGE_DIRS", image)
		}
		return nil
	}
	clean := filepath.Clean(image)
	real, err := filepath.EvalSymlinks(clean)
	if err != nil {
		real = clean
	}
	allowed := false
	for _, d := range s.o.ImageDirs {
		if rd, err := filepath.EvalSymlinks(d); err == nil {
			d = rd
		}
		if real == d || strings.HasPrefix(real, d+string(filepath.Separator)) {
			allowed = true
		}
	}
	if !allowed {
		if len(s.o.ImageDirs) == 0 {
			return derrors.Invalidf("image %s: OCI layout paths are not allowed on this deployment (SVC_SANDBOX_IMAGE_DIRS is empty); import the image into the image store (svc image import) and name it", image)
		}
		return derrors.Invalidf("image %s is not under a directory SVC_SANDBOX_IMAGE_DIRS allows (%s)", image, strings.Join(s.o.ImageDirs, ", "))
	}
	if _, err := os.Stat(filepath.Join(real, "index.json")); err != nil {
		return derrors.Invalidf("image %s is not an OCI image layout (it has no index.json)", image)
	}
	return nil
}

// Create admits, records and starts one session (spec §3): born running
// with its hard expiry, 201 once its container runs.
func (s *Service) Create(ctx context.Context, p auth.Principal, req CreateRequest, source string) (eval.Run, error) {
	switch {
	case req.Capability != nil && (req.World != nil || req.Image != ""):
		return eval.Run{}, derrors.Invalidf("capability: give one source, capability or image or world, not several")
	case req.Capability != nil && req.Hibernate != nil && *req.Hibernate:
		return eval.Run{}, derrors.Invalidf("hibernate: a session from an adopted capability cannot hibernate into it; give world {id} to snapshot into a world")
	case req.Repo != nil:
		return eval.Run{}, derrors.Invalidf("repo: cloning a repository into a session is not supported by the local runtime yet; omit repo")
	case req.Image == "" && req.World == nil && req.Harness == nil && req.Capability == nil:
		return eval.Run{}, derrors.Invalidf("image is required: a reference into the image store (repo:tag) or the absolute path of an OCI image layout; or give world {id}, or harness {id, version} (a registered harness with an image)")
	}
	if req.Agent != nil {
		if req.Agent.ID == "" || len(req.Agent.ID) > 200 || len(req.Agent.Conversation) > 200 || len(req.Agent.Name) > 200 {
			return eval.Run{}, derrors.Invalidf("agent: want {id, name?, conversation?}, an id of 1 to 200 characters")
		}
	} else if p.Agent != nil {
		// The agent acting with the credential (its X-Svc-Agent-* headers
		// or its MCP client), unless the body names one: declaring is not
		// a privilege (the session is still its member's), only what the
		// agent cap counts.
		a := *p.Agent
		req.Agent = &a
	}
	ttl, err := s.ttl(req.TTL, s.o.DefaultTTL)
	if err != nil {
		return eval.Run{}, err
	}
	placement := &eval.RunPlacement{Where: eval.WhereLocal}
	if req.Runtime != "" {
		if err := registry.ValidateID(req.Runtime); err != nil {
			return eval.Run{}, fmt.Errorf("runtime: %w", err)
		}
		rt, err := s.o.Registries.Resolve(ctx, p, registry.Runtime, req.Runtime, "latest")
		if errors.Is(err, derrors.ErrNotFound) {
			return eval.Run{}, derrors.NotFoundf("runtime %q is not registered in this workspace or among shared ones; register it (POST /runtimes) or omit runtime", req.Runtime)
		}
		if err != nil {
			return eval.Run{}, err
		}
		if spec := rt.Spec.Runtime(); spec == nil || spec.Kind != registry.RuntimeLocal {
			kind := "unknown"
			if spec != nil {
				kind = string(spec.Kind)
			}
			return eval.Run{}, derrors.Invalidf("runtime %q is a %s runtime, which has no session mode on this deployment (sessions run on a local runtime); omit runtime or name a local one", req.Runtime, kind)
		}
		placement.Where = eval.WhereRuntime
	}
	hibernate := req.World != nil
	if req.Hibernate != nil {
		hibernate = *req.Hibernate
	}
	image := req.Image
	if req.World != nil {
		if s.o.Worlds == nil {
			return eval.Run{}, derrors.Invalidf("world: this deployment cannot snapshot (no image store: SVC_IMAGE_STORE); create the session from an image without world")
		}
		if req.World.Version < 0 {
			return eval.Run{}, derrors.Invalidf("world.version %d: want 1, 2, ... or 0 (the latest)", req.World.Version)
		}
		ref, err := s.o.Worlds.ResolveWorld(ctx, p.Workspace, req.World.ID, req.World.Version)
		switch {
		case err == nil:
			image = ref
		case errors.Is(err, derrors.ErrNotFound) && req.World.Version == 0 && req.Image != "":
			// A new world: its first version will be this image's child.
		case errors.Is(err, derrors.ErrNotFound) && req.World.Version == 0:
			return eval.Run{}, derrors.Invalidf("world %q has no version yet: give image too, the image its first session starts from", req.World.ID)
		default:
			return eval.Run{}, err
		}
	}
	var adopted *eval.SessionWorld
	if req.Capability != nil {
		if adopted, image, err = s.adopt(ctx, p, *req.Capability); err != nil {
			return eval.Run{}, err
		}
	}
	var boot booted
	if req.Harness != nil {
		// The harness's image when nothing else names one (checked there).
		if boot, err = s.bootHarness(ctx, p, *req.Harness, image); err != nil {
			return eval.Run{}, err
		}
		image = boot.image
	}
	if image == req.Image {
		if err := s.checkImage(image); err != nil {
			return eval.Run{}, err
		}
	}
	if s.o.Orchestrator == nil {
		return eval.Run{}, derrors.Unavailablef("no workflow orchestrator is configured, so sessions cannot be started; run `svc dev`, or `svc serve` with TEMPORAL_ADDRESS")
	}
	if s.o.Local != nil {
		if err := s.o.Local.Available(); err != nil {
			return eval.Run{}, derrors.Invalidf("sandbox sessions cannot run on this host: %s", derrors.Message(err))
		}
	}

	now := s.o.Now().UTC()
	run := eval.Run{
		ID:        eval.NewID("sbx"),
		Tenant:    p.Workspace,
		Status:    eval.StatusRunning,
		CreatedAt: now,
		UpdatedAt: now,
		StartedAt: &now,
		Kind:      eval.KindSandbox,
		Lifetime:  eval.LifetimeSession,
		Trigger:   eval.TriggerAPI,
		CreatedBy: p.Subject,
		Origin:    eval.NewOrigin(source, p.Subject, req.Agent, true),
		Runtime:   req.Runtime,
		Harness:   boot.ref,
		Placement: placement,
		Session: &eval.Session{
			ExpiresAt:  now.Add(ttl),
			TTLSeconds: int64(ttl / time.Second),
			World:      req.World,
			Capability: adopted,
			Hibernate:  hibernate,
			Snapshots:  []eval.SessionSnapshot{},
			Agent:      req.Agent,
			Image:      image,
		},
	}
	row, err := records.Row(run)
	if err != nil {
		return eval.Run{}, err
	}
	if err := s.transact(ctx, func(tx store.Tx) error {
		if err := s.admit(ctx, tx, p, req.Agent, now); err != nil {
			return err
		}
		_, err := tx.CreateRun(ctx, row)
		return err
	}); err != nil {
		return eval.Run{}, err
	}
	in := flows.SandboxInput{Workspace: p.Workspace, RunID: run.ID, ExpiresAt: run.Session.ExpiresAt, World: req.World != nil, Hibernate: hibernate}
	if err := s.o.Orchestrator.StartSandbox(ctx, in); err != nil {
		return eval.Run{}, s.failStart(ctx, run, err)
	}
	rctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if _, err := s.o.Orchestrator.SandboxReady(rctx, run.ID); err != nil {
		return eval.Run{}, err
	}
	return s.read(ctx, p.Workspace, run.ID)
}

// admit is the capacity rule (spec §4.8, §8): an agent holds at most
// MaxPerAgent live sessions and never takes the workspace's last slot
// (when the cap leaves room for one); anyone else is held to
// MaxPerTenant. A refusal is 429 naming the holder and when a slot frees.
func (s *Service) admit(ctx context.Context, tx store.Tx, p auth.Principal, agent *eval.Agent, now time.Time) error {
	rows, err := tx.ListLiveSessions(ctx, p.Workspace)
	if err != nil {
		return err
	}
	var live []eval.Run
	for _, r := range rows {
		run, err := records.FromRow(r)
		if err != nil || !run.IsSession() {
			continue
		}
		live = append(live, run)
	}
	if agent != nil {
		var mine []eval.Run
		for _, r := range live {
			if r.Session.Agent != nil && r.Session.Agent.ID == agent.ID {
				mine = append(mine, r)
			}
		}
		if len(mine) >= s.o.MaxPerAgent {
			return capRefusal(p, mine, now, fmt.Sprintf("agent %q holds %d live sandbox session(s), its cap (SVC_SANDBOX_MAX_PER_AGENT=%d)", agent.ID, len(mine), s.o.MaxPerAgent))
		}
		if limit := s.o.MaxPerTenant - 1; s.o.MaxPerTenant > 1 && len(live) >= limit {
			return capRefusal(p, live, now, fmt.Sprintf("the workspace holds %d live sandbox sessions; agents never take its last slot, which stays for a member (SVC_SANDBOX_MAX_PER_TENANT=%d)", len(live), s.o.MaxPerTenant))
		}
	}
	if len(live) >= s.o.MaxPerTenant {
		return capRefusal(p, live, now, fmt.Sprintf("the workspace holds %d live sandbox sessions, its cap (SVC_SANDBOX_MAX_PER_TENANT=%d)", len(live), s.o.MaxPerTenant))
	}
	return nil
}

// capRefusal is the 429 of the capacity rule: the holder is the session
// that frees first (its member and agent; its id only when it is the
// caller's own, since sessions are personal), and freesAt its expiry.
func capRefusal(p auth.Principal, held []eval.Run, now time.Time, why string) error {
	sort.Slice(held, func(i, j int) bool { return held[i].Session.ExpiresAt.Before(held[j].Session.ExpiresAt) })
	first := held[0]
	holder := map[string]any{"member": first.Member()}
	if first.Session.Agent != nil {
		holder["agent"] = first.Session.Agent
	}
	if first.Member() == p.Subject {
		holder["sessionId"] = first.ID
	}
	freesAt := first.Session.ExpiresAt.UTC()
	details := map[string]any{"holder": holder, "freesAt": freesAt.Format(time.RFC3339Nano), "live": len(held)}
	// Retry-After is the wait until freesAt (a close may free one sooner).
	return derrors.WithRetryAfter(derrors.Refusef(derrors.ErrRateLimited, details, "%s; the first slot frees at %s (session of %s expires), or when a session is closed",
		why, freesAt.Format(time.RFC3339), first.Member()), max(time.Second, freesAt.Sub(now)))
}

// failStartTimeout bounds the write that marks a session failed after its
// workflow could not be started.
const failStartTimeout = 30 * time.Second

// failStart marks a session whose workflow could not be started failed,
// so that it neither holds a slot nor reads running forever.
func (s *Service) failStart(ctx context.Context, run eval.Run, startErr error) error {
	now := s.o.Now().UTC()
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), failStartTimeout)
	defer cancel()
	_, err := s.update(wctx, run.Tenant, run.ID, func(r *eval.Run) error {
		r.Status = eval.StatusFailed
		r.FinishedAt = &now
		r.Error = &eval.Error{Code: eval.CodeDispatch, Phase: eval.PhaseDispatch, Message: "the session's workflow could not be started: " + derrors.Message(startErr)}
		return nil
	})
	if err != nil {
		return errors.Join(derrors.Unavailablef("the session %s was recorded but its workflow could not be started, and it could not be marked failed", run.ID), startErr, err)
	}
	return errors.Join(derrors.Unavailablef("the session %s was recorded but its workflow could not be started; it is marked failed, create it again", run.ID), startErr)
}

// adopt resolves an adopted environment capability: a world of p's
// workspace at a version (latest when none), pinned by digest. The
// session reads it and is not bound to it.
func (s *Service) adopt(ctx context.Context, p auth.Principal, c registry.Ref) (*eval.SessionWorld, string, error) {
	if s.o.Worlds == nil {
		return nil, "", derrors.Invalidf("capability: this deployment has no image store (SVC_IMAGE_STORE), so it holds no environment capabilities; give image")
	}
	if err := registry.ValidateID(c.ID); err != nil {
		return nil, "", fmt.Errorf("capability: %w", err)
	}
	n := 0
	if v := strings.TrimPrefix(c.Version, "v"); c.Version != "" && c.Version != "latest" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 {
			return nil, "", derrors.Invalidf("capability.version %q: want latest, or a version such as 3 or v3", c.Version)
		}
		n = k
	}
	ref, err := s.o.Worlds.ResolveWorld(ctx, p.Workspace, c.ID, n)
	if errors.Is(err, derrors.ErrNotFound) {
		return nil, "", derrors.NotFoundf("capability %q has no version %s in this workspace's image store; list them with GET /worlds/%s", c.ID, versionName(n), c.ID)
	}
	if err != nil {
		return nil, "", err
	}
	return &eval.SessionWorld{ID: c.ID, Version: n}, ref, nil
}

// versionName is "latest" for 0, else "v<n>".
func versionName(n int) string {
	if n == 0 {
		return "latest"
	}
	return "v" + strconv.Itoa(n)
}
