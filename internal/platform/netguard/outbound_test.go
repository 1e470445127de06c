package netguard

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// dialSites are the places in the module's non-test code that build an
// HTTP client or transport, or dial, by themselves ("file function"), and
// why each may: it dials through a Guard, or it dials an address only the
// operator sets, or it is a fallback of a constructor that production
// code never takes (each caller passes the guard), or test tooling. A new
// site fails TestOutboundDialsGoThroughTheGuard until it is added here
// with its reason, so no tenant-supplied address (webhook URLs, model base
// URLs, trace-source endpoints, trace pulls, artifact fetches, runtime
// probes) can be dialled around the guard by accident.
var dialSites = map[string]string{
	// The guard itself.
	"internal/platform/netguard/guard.go Client":      "the guarded client",
	"internal/platform/netguard/guard.go Transport":   "the guarded transport",
	"internal/platform/netguard/guard.go DialContext": "the guarded dialer (Control re-checks each address)",
	// Tenant addresses, through the guard.
	"drivers/nomad/nomad.go NewClient":                                "its transport is cfg.Guard's (probe.DefaultGuard when nil)",
	"internal/integrations/images/images.go tagIfAbsent":              "its transport wraps c.tr, cfg.Guard's (images.New refuses a nil Guard)",
	"internal/client/sandbox.go within":                               "the CLI calls the service URL its user gives (a copy of the client with a longer bound)",
	"internal/app/approvals.go newApprovalRunner":                     "the worker calls the API's own internal route at SVC_PUBLIC_URL, the operator's",
	"internal/integrations/modeljudge/anthropic.go completeAnthropic": "ep.Client: the model guard's client (models.Service.Resolve)",
	"internal/integrations/modeljudge/model.go completeOpenAI":        "ep.Client: the model guard's client (models.Service.Resolve)",
	// Fallbacks when a constructor gets no guard: every production caller
	// passes one (internal/app, api/server.go,
	// activities); kept for package tests against loopback servers.
	"internal/integrations/modeljudge/model.go Complete": "fallback for an Endpoint without Client; callers pass access.Client",
	"internal/service/models/models.go Resolve":          "fallback for a Service without Guard; the API and the worker set Guard",
	"internal/integrations/pull/pull.go New":             "fallback for a nil client; traces.Sources passes its Guard's client",
	"drivers/k8s/kubetest/kubetest.go":                   "test tooling: a loopback kube-apiserver",
	// Operator-set addresses.
	"auth/oidc.go": "OIDC_ISSUER, the operator's",
	"ui/oidc.go":   "OIDC_ISSUER, the operator's",
	"internal/orchestration/orchestration.go":       "TEMPORAL_ADDRESS, the operator's",
	"internal/orchestration/devserver/devserver.go": "the embedded Temporal server on loopback",
	"internal/client/client.go":                     "the CLI calls the service URL its user gives",
	"internal/cli/runner.go":                        "svc runner calls the service URL its operator gives",
	// The local runtime's isolated network: a job's own traffic leaves
	// through slirp4netns; this relays a job's connection to a host address
	// the driver forwards (the service's own doors), not one a tenant names.
	"drivers/local/network_linux.go pipe": "relay to a host address the local driver forwards",
	// Test and benchmark tooling, not linked into serving paths.
	"internal/testing/stacktest/stacktest.go":             "test tooling",
	"internal/cmd/otlpload/main.go":                       "benchmark tool",
	"internal/integrations/pull/jaegertest/jaegertest.go": "test tooling: a loopback Jaeger",
}

// dialCalls are the functions and values whose use dials or builds a way
// to: package path -> names.
var dialCalls = map[string][]string{
	"net/http":                               {"Client", "Transport", "Get", "Head", "Post", "PostForm", "DefaultClient", "DefaultTransport"},
	"net":                                    {"Dial", "DialTimeout", "DialTCP", "DialUDP", "DialIP", "DialUnix", "Dialer"},
	"crypto/tls":                             {"Dial", "DialWithDialer", "Dialer"},
	"go.temporal.io/sdk/client":              {"Dial", "DialContext", "NewLazyClient"},
	"github.com/openai/openai-go/v3":         {"NewClient"},
	"github.com/anthropics/anthropic-sdk-go": {"NewClient"},
}

// TestOutboundDialsGoThroughTheGuard reads every non-test Go file of the
// module and fails on a place that builds an HTTP client or transport, or
// dials, that dialSites does not explain (issue 30, finding 7: every
// outbound dial of a tenant's address goes through the guard).
func TestOutboundDialsGoThroughTheGuard(t *testing.T) {
	root, err := filepath.Abs("../../..") // the module
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "e2e" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, site := range dialUses(f) {
			key := rel + " " + site.fn
			seen[key], seen[rel] = true, true
			if _, ok := dialSites[key]; ok {
				continue
			}
			if _, ok := dialSites[rel]; ok {
				continue
			}
			t.Errorf("%s: %s uses %s outside the guard; dial a tenant's address through netguard.Guard (Client, Transport or DialContext), or add the site to dialSites with the reason it may", fset.Position(site.pos), site.fn, site.what)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for site := range dialSites {
		file, _, _ := strings.Cut(site, " ")
		if _, err := os.Stat(filepath.Join(root, file)); err == nil && !seen[site] {
			t.Errorf("dialSites lists %q, which no longer dials: remove it", site)
		}
	}
}

type dialUse struct {
	fn, what string
	pos      token.Pos
}

// dialUses lists f's uses of dialCalls, each with its enclosing function.
func dialUses(f *ast.File) []dialUse {
	names := map[string]string{} // local import name -> path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if _, ok := dialCalls[p]; !ok {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if strings.HasPrefix(name, "v") && strings.Contains(p, "/") { // .../openai-go/v3
			q := strings.TrimSuffix(p, "/"+name)
			name = q[strings.LastIndex(q, "/")+1:]
		}
		name = strings.TrimSuffix(strings.TrimSuffix(name, "-go"), "-sdk")
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = p
	}
	if len(names) == 0 {
		return nil
	}
	var out []dialUse
	for _, decl := range f.Decls {
		fn := ""
		if fd, ok := decl.(*ast.FuncDecl); ok {
			fn = fd.Name.Name
		}
		use := func(e ast.Expr, value bool) {
			sel, ok := e.(*ast.SelectorExpr)
			if !ok {
				return
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok {
				return
			}
			p, ok := names[id.Name]
			if !ok || !slices.Contains(dialCalls[p], sel.Sel.Name) {
				return
			}
			if value && !strings.HasPrefix(sel.Sel.Name, "Default") {
				return // a type in a declaration dials nothing
			}
			out = append(out, dialUse{fn: fn, what: id.Name + "." + sel.Sel.Name, pos: sel.Pos()})
		}
		ast.Inspect(decl, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit: // http.Client{...}, net.Dialer{...}
				use(n.Type, false)
			case *ast.CallExpr: // http.Get(...), new(http.Client)
				use(n.Fun, false)
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "new" && len(n.Args) == 1 {
					use(n.Args[0], false)
				}
			case *ast.SelectorExpr: // http.DefaultClient
				use(n, true)
			}
			return true
		})
	}
	return out
}
