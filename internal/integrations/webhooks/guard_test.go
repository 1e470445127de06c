package webhooks

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"svc/internal/platform/derrors"
)

// fakeResolver answers from a table; unknown names are "no such host".
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ips, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, s := range ips {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

var testDNS = fakeResolver{
	"localhost":              {"127.0.0.1", "::1"},
	"public.example":         {"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
	"mixed.example":          {"93.184.215.14", "10.1.2.3"},
	"metadata.example":       {"169.254.169.254"},
	"hooks.internal.example": {"10.20.30.40"},
	"internal.example":       {"10.20.30.41"},
	"cgnat.example":          {"100.64.0.1"},
	"mapped.example":         {"::ffff:192.168.1.1"},
	"ula.example":            {"fd00::1"},
	"v6ll.example":           {"fe80::1"},
	"empty.example":          {},
}

func TestCheckURL(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		allow string
		url   string
		want  error  // nil = accepted
		msg   string // substring the error must contain
	}{
		{"public name", "", "https://public.example/hook", nil, ""},
		{"public IPv4 literal", "", "http://93.184.215.14:8080/x", nil, ""},
		{"public IPv6 literal", "", "http://[2606:4700::1111]/x", nil, ""},
		{"localhost", "", "http://localhost/x", derrors.ErrInvalid,
			`webhookUrl host "localhost" resolves to 127.0.0.1, a loopback address; the service refuses to call its own network (set SVC_WEBHOOK_ALLOW to permit it)`},
		{"loopback v4", "", "http://127.0.0.1/", derrors.ErrInvalid, "loopback"},
		{"loopback v4 other", "", "http://127.8.9.10/", derrors.ErrInvalid, "loopback"},
		{"loopback v6", "", "http://[::1]:9000/", derrors.ErrInvalid, "loopback"},
		{"IPv4-mapped loopback", "", "http://[::ffff:127.0.0.1]/", derrors.ErrInvalid, "loopback"},
		{"IPv4-mapped private via DNS", "", "http://mapped.example/", derrors.ErrInvalid, "private"},
		{"10/8", "", "http://10.0.0.1/", derrors.ErrInvalid, "private"},
		{"172.16/12", "", "http://172.31.255.254/", derrors.ErrInvalid, "private"},
		{"172.32 is public", "", "http://172.32.0.1/", nil, ""},
		{"192.168/16", "", "http://192.168.0.10/", derrors.ErrInvalid, "private"},
		{"fc00::/7", "", "http://ula.example/", derrors.ErrInvalid, "private"},
		{"cloud metadata", "", "http://169.254.169.254/latest/meta-data/", derrors.ErrInvalid, "link-local"},
		{"metadata by name", "", "http://metadata.example/", derrors.ErrInvalid, "link-local"},
		{"fe80::/10", "", "http://v6ll.example/", derrors.ErrInvalid, "link-local"},
		{"unspecified", "", "http://0.0.0.0/", derrors.ErrInvalid, "unspecified"},
		{"unspecified v6", "", "http://[::]/", derrors.ErrInvalid, "unspecified"},
		{"multicast", "", "http://224.0.0.1/", derrors.ErrInvalid, "multicast"},
		{"CGNAT", "", "http://cgnat.example/", derrors.ErrInvalid, "carrier-grade NAT"},
		{"any private address refuses", "", "http://mixed.example/", derrors.ErrInvalid, "10.1.2.3"},
		{"scheme ftp", "", "ftp://public.example/", derrors.ErrInvalid, `scheme "ftp"`},
		{"scheme file", "", "file:///etc/passwd", derrors.ErrInvalid, "scheme"},
		{"no scheme", "", "public.example/hook", derrors.ErrInvalid, "scheme"},
		{"userinfo", "", "https://user:pw@public.example/", derrors.ErrInvalid, "user:password@"},
		{"no host", "", "https:///path", derrors.ErrInvalid, "no host"},
		{"bad port", "", "https://public.example:99999/", derrors.ErrInvalid, "port"},
		{"unresolvable", "", "https://nowhere.example/", derrors.ErrInvalid, "does not resolve"},
		{"no addresses", "", "https://empty.example/", derrors.ErrInvalid, "no addresses"},
		{"unparsable", "", "http://[::1/", derrors.ErrInvalid, "not a valid URL"},

		{"allow CIDR", "10.0.0.0/8", "http://10.9.9.9/", nil, ""},
		{"allow CIDR covers name", "10.0.0.0/8", "http://hooks.internal.example/", nil, ""},
		{"allow CIDR not other range", "10.0.0.0/8", "http://192.168.0.1/", derrors.ErrInvalid, "private"},
		{"allow IP", "127.0.0.1", "http://127.0.0.1:8080/", nil, ""},
		{"allow IP not ::1", "127.0.0.1", "http://localhost/", derrors.ErrInvalid, "::1"},
		{"allow IP also via mapped form", "127.0.0.1", "http://[::ffff:127.0.0.1]/", nil, ""},
		{"allow host", "localhost", "http://localhost:3000/", nil, ""},
		{"allow host case-insensitive", "LocalHost", "http://LOCALHOST./", nil, ""},
		{"allow host:port matches", "localhost:3000", "http://localhost:3000/", nil, ""},
		{"allow host:port other port", "localhost:3000", "http://localhost:3001/", derrors.ErrInvalid, "loopback"},
		{"allow host:port default port", "localhost:80", "http://localhost/", nil, ""},
		{"allow IP:port", "127.0.0.1:8080", "http://127.0.0.1:8080/", nil, ""},
		{"allow IP:port other port", "127.0.0.1:8080", "http://127.0.0.1:8081/", derrors.ErrInvalid, "loopback"},
		{"allow [v6]:port", "[::1]:9000", "http://[::1]:9000/", nil, ""},
		{"allow wildcard", "*.internal.example", "https://hooks.internal.example/", nil, ""},
		{"wildcard excludes apex", "*.internal.example", "https://internal.example/", derrors.ErrInvalid, "private"},
		{"wildcard with port", "*.internal.example:8443", "https://hooks.internal.example:8443/", nil, ""},
		{"wildcard other port", "*.internal.example:8443", "https://hooks.internal.example/", derrors.ErrInvalid, "private"},
		{"allow list with spaces", " 192.168.0.0/16 , localhost ,", "http://localhost/", nil, ""},
		{"allow metadata explicitly", "169.254.169.254", "http://169.254.169.254/", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGuard(tc.allow)
			if err != nil {
				t.Fatalf("NewGuard(%q) = %v", tc.allow, err)
			}
			g.Resolver = testDNS
			err = g.CheckURL(ctx, tc.url)
			if tc.want == nil {
				if err != nil {
					t.Errorf("CheckURL(%q) = %v, want nil", tc.url, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("CheckURL(%q) = %v, want %v", tc.url, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("CheckURL(%q) = %q, want it to contain %q", tc.url, err, tc.msg)
			}
		})
	}
}

// errResolver fails every lookup the way a broken DNS server does.
type errResolver struct{}

func (errResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "server misbehaving", Name: "x", IsTemporary: true}
}

func TestCheckURLDNSOutageIsUnavailable(t *testing.T) {
	g, err := NewGuard("")
	if err != nil {
		t.Fatal(err)
	}
	g.Resolver = errResolver{}
	if err := g.CheckURL(context.Background(), "https://public.example/"); !errors.Is(err, derrors.ErrUnavailable) {
		t.Errorf("CheckURL during DNS outage = %v, want ErrUnavailable", err)
	}
}

func TestNewGuardRejects(t *testing.T) {
	for _, entry := range []string{
		"10.0.0.0/33",
		"10.0.0/8",
		"not a host",
		"*",
		"a.*.example",
		"**.example",
		"host:0",
		"host:70000",
		"host:http",
		"[::1]:",
		"a..b",
		"-",
		"10.0.0.0/8:80",
	} {
		t.Run(entry, func(t *testing.T) {
			_, err := NewGuard("localhost," + entry)
			if !errors.Is(err, derrors.ErrInvalid) {
				t.Fatalf("NewGuard(%q) = %v, want ErrInvalid", entry, err)
			}
			if !strings.Contains(err.Error(), `"`+entry+`"`) {
				t.Errorf("NewGuard(%q) error %q does not name the entry", entry, err)
			}
		})
	}
}

// TestClientDialCheck drives a real connection: the dial-time check is what
// stops DNS rebinding, so it must refuse without any CheckURL having run.
func TestClientDialCheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	byName := "http://localhost:" + u.Port() + "/"

	for _, tc := range []struct {
		name, allow, url string
		wantStatus       int // 0 = refused at dial
	}{
		{"loopback refused", "", srv.URL + "/", 0},
		{"loopback by name refused", "", byName, 0},
		{"private range does not cover loopback", "10.0.0.0/8", srv.URL + "/", 0},
		{"allowed by IP", "127.0.0.1", srv.URL + "/", http.StatusNoContent},
		{"allowed by CIDR", "127.0.0.0/8", srv.URL + "/", http.StatusNoContent},
		{"allowed by IP:port", "127.0.0.1:" + u.Port(), srv.URL + "/", http.StatusNoContent},
		{"allowed by host name", "localhost", byName, http.StatusNoContent},
		{"redirect not followed", "127.0.0.1", srv.URL + "/redirect", http.StatusFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGuard(tc.allow)
			if err != nil {
				t.Fatal(err)
			}
			c := g.Client(0)
			defer c.CloseIdleConnections()
			resp, err := c.Get(tc.url)
			if tc.wantStatus == 0 {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("GET %s with allow %q succeeded (%s), want refusal", tc.url, tc.allow, resp.Status)
				}
				if !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), "loopback") {
					t.Fatalf("GET %s = %v, want ErrInvalid naming loopback", tc.url, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("GET %s with allow %q = %v", tc.url, tc.allow, err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("GET %s status = %d, want %d", tc.url, resp.StatusCode, tc.wantStatus)
			}
		})
	}
}

func TestClientIgnoresEnvironmentProxy(t *testing.T) {
	g, err := NewGuard("")
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := g.Client(0).Transport.(*http.Transport)
	if !ok || tr.Proxy != nil {
		t.Errorf("Client transport = %T with Proxy set=%v; want *http.Transport without proxy", g.Client(0).Transport, ok && tr.Proxy != nil)
	}
}

func FuzzGuard(f *testing.F) {
	f.Add("10.0.0.0/8,localhost", "http://localhost/x")
	f.Add("*.internal.example:8443", "https://hooks.internal.example:8443/")
	f.Add("[::1]:9000, 127.0.0.1", "http://[::ffff:127.0.0.1]:9000/")
	f.Add("", "ftp://user@[fe80::1%25eth0]:0/")
	f.Add("a..b,*", "http://%zz/")
	f.Fuzz(func(t *testing.T, allow, raw string) {
		g, err := NewGuard(allow)
		if err != nil {
			if !errors.Is(err, derrors.ErrInvalid) {
				t.Fatalf("NewGuard(%q) = %v, want ErrInvalid", allow, err)
			}
			return
		}
		g.Resolver = testDNS
		if err := g.CheckURL(context.Background(), raw); err != nil && !errors.Is(err, derrors.ErrInvalid) {
			t.Fatalf("CheckURL(%q) = %v, want nil or ErrInvalid", raw, err)
		}
	})
}
