package identity_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/internal/service/identity"
	"svc/store"
	"svc/store/sqlite/sqlitetest"
)

// t0 is the fixed clock of every test; tests that need time to pass set
// env.now.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// env is a Service on a real, migrated SQLite store with a movable clock.
type env struct {
	svc *identity.Service
	st  store.Store
	now time.Time
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{st: sqlitetest.New(t), now: t0}
	e.svc = identity.New(identity.Options{Store: e.st, Now: func() time.Time { return e.now }})
	return e
}

// person is a principal signed in with OIDC, acting in workspace ws with role.
func person(subject, ws string, role auth.Role) auth.Principal {
	return auth.Principal{Subject: subject, Workspace: ws, Roles: []auth.Role{role}, Via: auth.ViaOIDC, Email: subject + "@example.com"}
}

// apiKey is a principal authenticated with an API key of workspace ws.
func apiKey(ws string) auth.Principal {
	return auth.Principal{Subject: "key:k1", Workspace: ws, Roles: []auth.Role{auth.RoleAdmin}, Via: auth.ViaAPIKey, KeyID: "k1"}
}

// member stores a membership (and its workspace), as setup.
func (e *env) member(t *testing.T, ws, subject string, role auth.Role) {
	t.Helper()
	ctx := t.Context()
	if _, err := e.st.GetWorkspace(ctx, ws); errors.Is(err, derrors.ErrNotFound) {
		if _, err := e.st.CreateWorkspace(ctx, store.Workspace{ID: ws, Name: ws, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.st.PutMember(ctx, store.Member{Workspace: ws, Subject: subject, Role: string(role), AddedAt: t0}); err != nil {
		t.Fatal(err)
	}
}

// roles returns the workspace's members as subject -> role.
func (e *env) roles(t *testing.T, ws string) map[string]string {
	t.Helper()
	ms, err := e.st.ListMembers(t.Context(), ws)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range ms {
		out[m.Subject] = m.Role
	}
	return out
}

// wantErr checks err against the sentinel want (nil for success); when
// details is not nil, err must also be a *derrors.Public carrying them.
func wantErr(t *testing.T, err, want error, details map[string]any) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("err = %v, want nil", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	if details == nil {
		return
	}
	var ie *derrors.Public
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v (%T), want a *derrors.Public", err, err)
	}
	if diff := cmp.Diff(details, ie.Details); diff != "" {
		t.Errorf("details (-want +got):\n%s", diff)
	}
	if ie.Msg == "" {
		t.Error("a refusal without a message for the client")
	}
}

// memberOf is a membership added at t0.
func memberOf(ws, subject string, role auth.Role) store.Member {
	return store.Member{Workspace: ws, Subject: subject, Role: string(role), AddedAt: t0}
}
