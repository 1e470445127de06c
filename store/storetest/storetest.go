// Package storetest is the conformance suite of store.Store: every behaviour
// the interface promises, run against each backend by its own test
// (store/sqlite, store/postgres) so that the two cannot drift apart.
//
// To add a behaviour, add a Case to the list of its entity (or a new list,
// joined in Cases); both backends pick it up.
package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

// Case is one named behaviour every store must have. Test gets a new,
// migrated, empty store.
type Case struct {
	Name string
	Test func(t *testing.T, s store.Store)
}

// Cases is the whole suite.
func Cases() []Case {
	return slices.Concat(workspaceCases, eventCases, transactCases, storeCases, textCases,
		apiKeyCases, memberCases, inviteCases, teamCases, identityTxCases, registryCases, secretCases,
		runCases, runLogCases, trajectoryCases, notificationCases, notificationChannelCases, webhookCases,
		scorecardCases, scorecardStepCases, childRunCountCases, childRunCases, analysisCases, batchCases, traceIngestCases, slotCases, runnerJobCases, runnerOutputCases, traceSourceCases, sessionCases, approvalCases)
}

// Run runs every case as a subtest, each on a store from newStore, which
// must return a new, migrated, empty store and close it in t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			c.Test(t, newStore(t))
		})
	}
}

// jsonEqual compares raw JSON by meaning: PostgreSQL's jsonb does not keep
// the bytes (key order, spacing) it was given.
var jsonEqual = cmp.Comparer(func(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return cmp.Equal(x, y)
})

// wantErr fails t unless err is target (nil meaning no error).
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	switch {
	case target == nil && err != nil:
		t.Fatalf("%s: unexpected error %v", what, err)
	case target != nil && !errors.Is(err, target):
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}

var textCases = []Case{
	{"text/nul_and_bad_utf8_are_invalid_everywhere", func(t *testing.T, s store.Store) {
		// PostgreSQL cannot store these and SQLite could: both must refuse.
		ctx := t.Context()
		for _, bad := range []string{"a\x00b", "a\xffb"} {
			_, err := s.CreateWorkspace(ctx, store.Workspace{ID: bad})
			wantErr(t, fmt.Sprintf("CreateWorkspace(ID %q)", bad), err, derrors.ErrInvalid)
			_, err = s.CreateWorkspace(ctx, store.Workspace{ID: "w", Name: bad})
			wantErr(t, fmt.Sprintf("CreateWorkspace(Name %q)", bad), err, derrors.ErrInvalid)
			_, err = s.GetWorkspace(ctx, bad)
			wantErr(t, fmt.Sprintf("GetWorkspace(%q)", bad), err, derrors.ErrInvalid)
			_, err = s.ListWorkspaces(ctx, []string{bad})
			wantErr(t, fmt.Sprintf("ListWorkspaces(%q)", bad), err, derrors.ErrInvalid)
			_, err = s.AppendEvent(ctx, store.Event{Workspace: "w", Type: "t", Subject: bad})
			wantErr(t, fmt.Sprintf("AppendEvent(Subject %q)", bad), err, derrors.ErrInvalid)
			_, err = s.ListEvents(ctx, store.EventFilter{Workspace: bad})
			wantErr(t, fmt.Sprintf("ListEvents(%q)", bad), err, derrors.ErrInvalid)
		}
		_, err := s.AppendEvent(ctx, store.Event{Workspace: "w", Type: "t", Data: json.RawMessage(`{"k":"a\u0000b"}`)})
		wantErr(t, "AppendEvent(Data with a \\u0000 escape)", err, derrors.ErrInvalid)
		// An escaped backslash before u0000 is plain text.
		if _, err := s.AppendEvent(ctx, store.Event{Workspace: "w", Type: "t", Data: json.RawMessage(`{"k":"a\\u0000b"}`)}); err != nil {
			t.Errorf("AppendEvent(Data with an escaped backslash before u0000): %v", err)
		}
		if _, err := s.GetWorkspace(ctx, "w"); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("GetWorkspace(w) = %v, want ErrNotFound: nothing may have been stored", err)
		}
	}},
}

var storeCases = []Case{
	{"store/ping_and_dialect", func(t *testing.T, s store.Store) {
		if err := s.Ping(t.Context()); err != nil {
			t.Fatalf("Ping: %v", err)
		}
		if d := s.Dialect(); d != "postgres" && d != "sqlite" {
			t.Errorf("Dialect() = %q, want postgres or sqlite", d)
		}
	}},
}

// pluck returns one field of each record, in order; never nil, so an empty
// result compares equal to an empty want.
func pluck[T, V any](xs []T, field func(T) V) []V {
	out := []V{}
	for _, x := range xs {
		out = append(out, field(x))
	}
	return out
}
