package netguard

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
)

func TestNormalizeHosts(t *testing.T) {
	got, err := NormalizeHosts([]string{"Nomad.Example.COM.", " 10.0.0.5:4646 ", "*.Corp.example", "[::1]:9000", "::1", "[fd00::2]",
		"::ffff:10.0.0.7", "nomad.example.com", "k8s_api.internal:6443"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"nomad.example.com", "10.0.0.5:4646", "*.corp.example", "[::1]:9000", "::1", "fd00::2", "10.0.0.7", "k8s_api.internal:6443"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NormalizeHosts (-want +got):\n%s", diff)
	}
	if got, err := NormalizeHosts(nil); err != nil || got == nil || len(got) != 0 {
		t.Errorf("NormalizeHosts(nil) = %#v, %v; want an empty list", got, err)
	}
	// The stored form parses to itself.
	again, err := NormalizeHosts(want)
	if err != nil || !cmp.Equal(again, want) {
		t.Errorf("NormalizeHosts(stored form) = %q, %v", again, err)
	}
}

func TestNormalizeHostsRejects(t *testing.T) {
	for _, e := range []string{
		"", " ", "https://nomad.example.com", "nomad.example.com/v1", "user@host", "10.0.0.0/8", "nomad example",
		"*", "*.", "a.*.example", "**.example", "*example.com", "host:0", "host:99999", "host:http", "[::1]:", "[::1",
		"a..b", "-a.example", "fe80::1%eth0", "[zz::1]:80", "host:80:90", "bad!.example",
	} {
		_, err := NormalizeHosts([]string{"ok.example", e})
		if !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("NormalizeHosts(%q) = %v, want ErrInvalid", e, err)
			continue
		}
		if !strings.Contains(err.Error(), "allowedHosts[1]") {
			t.Errorf("NormalizeHosts(%q) error %q does not name the entry", e, err)
		}
	}
	many := make([]string, MaxAllowedHosts+1)
	for i := range many {
		many[i] = "h.example"
	}
	if _, err := NormalizeHosts(many); !errors.Is(err, derrors.ErrInvalid) {
		t.Errorf("NormalizeHosts of %d entries = %v, want ErrInvalid", len(many), err)
	}
}

func TestCheckBound(t *testing.T) {
	hosts, err := NormalizeHosts([]string{"nomad.example.com", "10.0.0.5:4646", "*.corp.example", "*.k8s.example:6443", "[::1]:9000", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{"https://nomad.example.com:4646", true},
		{"http://NOMAD.Example.com./", true},
		{"https://nomad.example.com", true},
		{"https://evil-nomad.example.com", false},
		{"https://nomad.example.com.evil.example", false},
		{"http://10.0.0.5:4646", true},
		{"http://10.0.0.5:4647", false},
		{"http://10.0.0.5", false},
		{"http://[::ffff:10.0.0.5]:4646", true},
		{"https://api.corp.example", true},
		{"https://a.b.corp.example:8443", true},
		{"https://corp.example", false},
		{"https://evilcorp.example", false},
		{"https://api.k8s.example:6443", true},
		{"https://api.k8s.example", false},
		{"http://[::1]:9000", true},
		{"http://[::1]:9001", false},
		{"http://127.0.0.1:41234", true},
		{"http://localhost:41234", false}, // names and IPs are never mixed
		{"http://127.0.0.2", false},
	} {
		err := CheckBound(hosts, tc.url)
		if got := err == nil; got != tc.want {
			t.Errorf("CheckBound(%s) = %v, want allowed %v", tc.url, err, tc.want)
		}
		var ue *UnboundError
		if err != nil && (!errors.As(err, &ue) || !errors.Is(err, derrors.ErrInvalid)) {
			t.Errorf("CheckBound(%s) = %T %v, want an *UnboundError wrapping ErrInvalid", tc.url, err, err)
		}
	}
	if err := CheckBound(nil, "https://nomad.example.com"); err == nil || !strings.Contains(err.Error(), "bound to no host") {
		t.Errorf("CheckBound with no hosts = %v, want refused, bound to no host", err)
	}
	err = CheckBound([]string{"a.example"}, "http://127.0.0.1:4646")
	ue := err.(*UnboundError)
	ue.Field, ue.Secret = "authSecret", "nomad-token"
	const want = `authSecret "nomad-token" may not be sent to 127.0.0.1:4646: it is bound only to a.example; an admin must add 127.0.0.1 to the secret's allowedHosts (PUT /secrets/nomad-token with the value and allowedHosts)`
	if err.Error() != want {
		t.Errorf("message:\n got %s\nwant %s", err, want)
	}
}
