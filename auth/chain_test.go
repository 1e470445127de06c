package auth_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"svc/auth"
	"svc/internal/platform/derrors"
)

// stubAuth answers fixed values, to test the chain's own rules.
type stubAuth struct {
	p          auth.Principal
	recognised bool
	err        error
	called     *int
}

func (s stubAuth) Authenticate(context.Context, *http.Request) (auth.Principal, bool, error) {
	if s.called != nil {
		*s.called++
	}
	return s.p, s.recognised, s.err
}

func TestChain(t *testing.T) {
	alice := auth.Principal{Subject: "alice", Workspace: "acme", Via: auth.ViaOIDC, Roles: []auth.Role{auth.RoleViewer}}
	bob := auth.Principal{Subject: "bob", Workspace: "acme", Via: auth.ViaAPIKey, Roles: []auth.Role{auth.RoleAdmin}}
	var laterCalls int
	later := stubAuth{p: bob, recognised: true, called: &laterCalls}
	tests := []struct {
		name    string
		chain   auth.Chain
		want    string
		wantErr error
	}{
		{"first success wins", auth.Chain{stubAuth{}, stubAuth{p: alice, recognised: true}, later}, "alice", nil},
		{"refusal does not fall through", auth.Chain{stubAuth{recognised: true, err: derrors.ErrUnauthenticated}, later}, "", derrors.ErrUnauthenticated},
		{"dependency failure does not fall through", auth.Chain{stubAuth{recognised: true, err: derrors.ErrUnavailable}, later}, "", derrors.ErrUnavailable},
		{"error without recognition still refuses", auth.Chain{stubAuth{err: errors.New("boom")}, later}, "", nil},
		{"success without subject fails closed", auth.Chain{stubAuth{p: auth.Principal{Via: "x"}, recognised: true}, later}, "", derrors.ErrUnauthenticated},
		{"success without via fails closed", auth.Chain{stubAuth{p: auth.Principal{Subject: "x"}, recognised: true}, later}, "", derrors.ErrUnauthenticated},
		{"nobody recognises a credential", auth.Chain{stubAuth{}}, "", derrors.ErrUnauthenticated},
		{"empty chain", nil, "", derrors.ErrUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			laterCalls = 0
			p, err := tt.chain.Authenticate(context.Background(), request(header{"Authorization": "Bearer x"}))
			if p.Subject != tt.want {
				t.Errorf("subject = %q; want %q", p.Subject, tt.want)
			}
			if tt.want == "" && err == nil {
				t.Fatalf("err = nil; want a refusal")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v; want %v", err, tt.wantErr)
			}
			if tt.want != "bob" && laterCalls != 0 {
				t.Errorf("a later authenticator ran %d times after the decision", laterCalls)
			}
		})
	}
}

func TestChainMissingCredential(t *testing.T) {
	_, err := auth.Chain{stubAuth{}}.Authenticate(context.Background(), request(nil))
	if !errors.Is(err, auth.ErrMissingCredential) {
		t.Errorf("no Authorization header: %v; want the missing-credential 401", err)
	}
}

func TestNewResolverBadIssuer(t *testing.T) {
	if _, err := auth.NewResolver(auth.ResolverConfig{OIDC: auth.OIDCConfig{Issuer: "not a url"}}); !errors.Is(err, derrors.ErrInvalid) {
		t.Errorf("NewResolver(bad issuer) = %v; want ErrInvalid", err)
	}
}
