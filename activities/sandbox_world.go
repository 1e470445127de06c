package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"svc/drivers/local/sandbox"
	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/integrations/images"
	"svc/internal/platform/derrors"
	"svc/store"
)

// SnapshotInput and SnapshotResult are the world snapshot's contract
// (flows).
type (
	SnapshotInput  = flows.SnapshotInput
	SnapshotResult = flows.SnapshotResult
)

// EventRunSnapshotted is the platform event a published world version
// lands as (spec §6), through the outbox: in the transaction that adds
// the version to the session's row, with a deterministic id.
const EventRunSnapshotted = "run.snapshotted"

// EventSnapshotFailed is the session trajectory's event of a
// hibernation whose snapshot failed (spec §6).
const EventSnapshotFailed = "session.snapshot_failed"

// SessionChanges is what a world snapshot needs of the sandbox runtime
// holding a session's container: its changes since its base as one
// layer (drivers/local/sandbox.Runtime.Changes).
type SessionChanges interface {
	Changes(ctx context.Context, id string) (v1.Layer, int64, error)
}

// Worlds is what the world snapshot needs.
type Worlds struct {
	// Store is the image store split by workspace; nil when the
	// deployment has none (no world session is created then).
	Store *images.Workspaces
	// Sessions reads a session's changes; nil when this worker runs no
	// sandbox.
	Sessions SessionChanges
	// GC collects the image store's garbage after a prune (the managed
	// store of svc dev); nil for a registry of its own.
	GC func()
	// SnapshotFailed records a hibernation's failed snapshot on the
	// session's trajectory (the sessions service's writer of session
	// events); nil logs it only.
	SnapshotFailed func(ctx context.Context, workspace, sessionID string, data map[string]any) error
}

// SnapshotSession publishes session in.SessionID's changes as the next
// version of its world (flows.ActivitySnapshotSession): the container's
// changes appended to the image the session started from, pushed with
// the tag written last (a crash leaves the previous version the latest),
// then retention (a prune failure is reported in the result, never
// undoes the version), then the version joins session.snapshots[] and
// run.snapshotted lands in the event log in one transaction.
//
// A teardown's snapshot (close, expiry, orphan) never fails: after its
// tries (a permanent error at once) it records session.snapshot_failed
// and answers Failed, so the teardown goes on.
func (a *Activities) SnapshotSession(ctx context.Context, in SnapshotInput) (res SnapshotResult, err error) {
	res, err = a.snapshotSession(ctx, in)
	if err == nil || !in.Teardown() {
		if err != nil {
			untilLanded(&err)
		}
		return res, err
	}
	if !derrors.Permanent(err) && !lastTry(ctx, 3) && ctx.Err() == nil {
		return res, err // retried
	}
	msg := derrors.Message(err)
	data := map[string]any{"reason": in.Reason, "error": msg}
	if res.World != "" {
		data["world"] = res.World
	}
	a.logger().WarnContext(ctx, "world snapshot at teardown failed", append(activityAttrs(ctx), "workspace", in.Workspace,
		"session", in.SessionID, "reason", in.Reason, "err", err)...)
	record := a.Worlds.SnapshotFailed
	if record == nil {
		record = a.recordSnapshotFailed
	}
	if rerr := record(context.WithoutCancel(ctx), in.Workspace, in.SessionID, data); rerr != nil {
		// The workflow's teardown records it then (SandboxTeardown.SnapshotFailed).
		a.logger().WarnContext(ctx, "recording session.snapshot_failed", append(activityAttrs(ctx), "session", in.SessionID, "err", rerr)...)
		return SnapshotResult{}, rerr
	}
	return SnapshotResult{World: res.World, PrunedVersions: []string{}, Failed: msg}, nil
}

// recordSnapshotFailed lands session.snapshot_failed on the session's
// trajectory (spec §6) with the sessions' own event writer: the reason
// of the teardown (close, expiry, orphan) and the error as its message.
func (a *Activities) recordSnapshotFailed(ctx context.Context, workspace, sessionID string, data map[string]any) error {
	out, _ := json.Marshal(data)
	msg, _ := data["error"].(string)
	_, err := a.AppendSessionEvent(ctx, workspace, sessionID, eval.TraceEvent{Kind: eval.EventSnapshotFailed, Message: msg, Output: out})
	return err
}

func (a *Activities) snapshotSession(ctx context.Context, in SnapshotInput) (SnapshotResult, error) {
	res := SnapshotResult{PrunedVersions: []string{}}
	row, err := a.Store.GetRun(ctx, in.Workspace, in.SessionID)
	if err != nil {
		return res, err
	}
	ws, err := readWorldSession(row)
	if err != nil {
		return res, err
	}
	if ws.World == "" {
		if in.Teardown() {
			res.Skipped = "the session has no world"
			return res, nil
		}
		return res, derrors.Invalidf("session %s has no world to snapshot into: create the session with world {id}", in.SessionID)
	}
	res.World = ws.World
	if in.Teardown() && !ws.Hibernate {
		res.Skipped = "hibernate is off"
		return res, nil
	}
	if a.Worlds.Store == nil {
		return res, derrors.Invalidf("this deployment has no image store to snapshot into (%s)", images.StoreSetting)
	}
	if a.Worlds.Sessions == nil {
		return res, derrors.Unavailablef("this worker runs no sandbox: session %s's changes cannot be read here", in.SessionID)
	}
	if ws.Base == "" {
		return res, derrors.Invalidf("session %s does not record the image it started from", in.SessionID)
	}
	member := in.By
	if member == "" {
		member = row.CreatedBy
	}
	if member == "" {
		return res, derrors.Invalidf("session %s has no creator to publish its world version as", in.SessionID)
	}
	c, err := a.Worlds.Store.For(in.Workspace)
	if err != nil {
		return res, err
	}
	layer, size, err := a.Worlds.Sessions.Changes(ctx, in.SessionID)
	if errors.Is(err, sandbox.ErrTooLarge) {
		return res, derrors.Refusef(derrors.ErrInvalid, map[string]any{"setting": images.CaptureSetting},
			"world %s: session %s's change set is past %s; remove what need not be kept (caches, build output) or raise the limit",
			ws.World, in.SessionID, images.CaptureSetting)
	}
	if errors.Is(err, sandbox.ErrNotFound) {
		return res, derrors.NotFoundf("session %s has no container left to snapshot", in.SessionID)
	}
	if err != nil {
		return res, err
	}
	base, err := a.baseImage(ctx, in.Workspace, ws)
	if err != nil {
		return res, fmt.Errorf("session %s's base image: %w", in.SessionID, err)
	}
	v, err := c.Publish(ctx, ws.World, base, layer, member)
	if err != nil {
		return res, err
	}
	res.Version, res.Tag, res.Digest, res.Ref, res.Bytes = v.Number, v.Tag, v.Digest, c.Relative(v.Ref), size

	pruned, perr := c.Prune(ctx, ws.World, a.Worlds.Store.Keep, member)
	for _, p := range pruned {
		res.PrunedVersions = append(res.PrunedVersions, p.Tag)
	}
	if perr != nil {
		res.PruneError = derrors.Message(perr)
		a.logger().WarnContext(ctx, "world retention", append(activityAttrs(ctx), "world", ws.World, "err", perr)...)
	}
	if len(pruned) > 0 && a.Worlds.GC != nil {
		a.Worlds.GC()
	}
	if err := a.recordSnapshot(ctx, in, ws, res, size); err != nil {
		return res, err
	}
	return res, nil
}

// baseImage opens the image a world session started from, which its
// version is appended to: an OCI layout directory (an absolute path the
// service admitted at create), or a reference into the workspace's image
// store, pinned to the digest the container was made from when the
// reference names a tag only (so a tag moved since changes nothing).
func (a *Activities) baseImage(ctx context.Context, workspace string, ws worldSession) (v1.Image, error) {
	if filepath.IsAbs(ws.Base) {
		return LayoutImage(ws.Base)
	}
	ref := ws.Base
	if ws.BaseDigest != "" && !strings.Contains(ref, "@") {
		ref += "@" + ws.BaseDigest
	}
	return a.Worlds.Store.Image(ctx, workspace, ref)
}

// recordSnapshot adds the version to session.snapshots[] and appends
// run.snapshotted, in one transaction; a retry adds neither twice.
func (a *Activities) recordSnapshot(ctx context.Context, in SnapshotInput, ws worldSession, res SnapshotResult, size int64) error {
	ref := res.Ref // world:v<n>@sha256:..., without the store's address or namespace
	return a.Store.Transact(ctx, func(tx store.Tx) error {
		row, err := tx.GetRun(ctx, in.Workspace, in.SessionID)
		if err != nil {
			return err
		}
		doc, changed, err := addSnapshot(row.Doc, map[string]any{"version": res.Version, "ref": ref, "at": a.now(), "reason": reasonOf(in)})
		if err != nil {
			return err
		}
		if changed {
			row.Doc = doc
			row.UpdatedAt = a.now()
			if _, err := tx.PutRun(ctx, row); err != nil {
				return err
			}
		}
		data, _ := json.Marshal(map[string]any{"runId": in.SessionID, "world": ws.World, "version": res.Version, "tag": res.Tag,
			"digest": res.Digest, "ref": ref, "bytes": size, "reason": reasonOf(in), "prunedVersions": res.PrunedVersions})
		actor := in.By
		if actor == "" {
			actor = row.CreatedBy
		}
		_, err = tx.AppendEvent(ctx, store.Event{ID: EventRunSnapshotted + ":" + in.SessionID + ":" + ws.World + ":" + res.Tag,
			Workspace: in.Workspace, Type: EventRunSnapshotted, Subject: "run:" + in.SessionID, Actor: actor,
			CausedBy: ws.CausedBy, Data: data})
		return err
	})
}

func reasonOf(in SnapshotInput) string {
	if in.Reason == "" {
		return flows.SnapshotRequested
	}
	return in.Reason
}

// worldSession is what a snapshot reads of a session's row.
type worldSession struct {
	World string
	Base  string // the image the session started from (session.image)
	// BaseDigest is the manifest digest its container was made from
	// (session.imageDigest).
	BaseDigest string
	Hibernate  bool
	CausedBy   string // agent:<id>:<conversation> when an agent drives the session
}

// readWorldSession reads the session fields of a run's document
// (session.world.id, session.image, session.hibernate, session.agent):
// the session run's record is the sessions service's, read here field by
// field so that a snapshot rewrites nothing else of it.
func readWorldSession(row store.Run) (worldSession, error) {
	var doc struct {
		Session *struct {
			World       json.RawMessage `json:"world"`
			Image       string          `json:"image"`
			ImageDigest string          `json:"imageDigest"`
			Hibernate   *bool           `json:"hibernate"`
			Agent       json.RawMessage `json:"agent"`
		} `json:"session"`
	}
	if err := json.Unmarshal(row.Doc, &doc); err != nil {
		return worldSession{}, fmt.Errorf("session %s: its record does not decode: %w", row.ID, err)
	}
	if row.Kind != "sandbox" || doc.Session == nil {
		return worldSession{}, derrors.NotFoundf("run %s is not a sandbox session", row.ID)
	}
	s := doc.Session
	out := worldSession{Base: s.Image, BaseDigest: s.ImageDigest, Hibernate: s.Hibernate == nil || *s.Hibernate}
	out.World = stringOrID(s.World)
	if len(s.Agent) > 0 && string(s.Agent) != "null" {
		var ag struct {
			ID           string `json:"id"`
			Conversation string `json:"conversation"`
		}
		if json.Unmarshal(s.Agent, &ag) == nil && ag.ID != "" {
			out.CausedBy = "agent:" + ag.ID + ":" + ag.Conversation
		} else if str := stringOrID(s.Agent); str != "" {
			out.CausedBy = str
			if !strings.HasPrefix(str, "agent:") {
				out.CausedBy = "agent:" + str
			}
		}
	}
	return out, nil
}

// stringOrID reads a JSON string, or an object's "id".
func stringOrID(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.ID
	}
	return ""
}

// addSnapshot appends the version to doc's session.snapshots[] (objects
// {version, ref, at, reason}, eval.SessionSnapshot) unless its ref is
// there, keeping every other field as stored.
func addSnapshot(doc []byte, snap map[string]any) ([]byte, bool, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, false, err
	}
	var sess map[string]json.RawMessage
	if err := json.Unmarshal(top["session"], &sess); err != nil || sess == nil {
		return nil, false, fmt.Errorf("the session's record has no session object")
	}
	var snaps []json.RawMessage
	if raw, ok := sess["snapshots"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &snaps); err != nil {
			return nil, false, fmt.Errorf("session.snapshots: %w", err)
		}
	}
	for _, raw := range snaps {
		var s struct {
			Ref string `json:"ref"`
		}
		if json.Unmarshal(raw, &s) == nil && s.Ref == snap["ref"] {
			return doc, false, nil
		}
	}
	b, err := json.Marshal(snap)
	if err != nil {
		return nil, false, err
	}
	snaps = append(snaps, b)
	sess["snapshots"], _ = json.Marshal(snaps)
	top["session"], _ = json.Marshal(sess)
	out, err := json.Marshal(top)
	return out, err == nil, err
}
