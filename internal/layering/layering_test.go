// Package layering holds the test that keeps the layers of
// docs/architecture.md true: it reads the import graph with `go list` and
// fails on an import that crosses a layer the wrong way.
package layering

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// pkg is one package of the module: its direct imports and every package
// it depends on.
type pkg struct {
	imports, deps []string
}

// graph lists the module's packages (tests excluded, as they link nothing
// into the binary).
func graph(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "svc/...")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errOut.String())
	}
	g := map[string]pkg{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "|", 3)
		if len(parts) != 3 {
			continue
		}
		g[parts[0]] = pkg{imports: strings.Fields(parts[1]), deps: strings.Fields(parts[2])}
	}
	if len(g) == 0 {
		t.Fatal("go list found no package")
	}
	return g
}

// under reports whether path is root or a package below it.
func under(path, root string) bool { return path == root || strings.HasPrefix(path, root+"/") }

// rule is one thing a layer must not do.
type rule struct {
	name string
	// from selects the packages the rule applies to.
	from func(string) bool
	// transitive: the rule reads every dependency, not only direct imports.
	transitive bool
	// forbidden are the roots (package paths, with what is below them)
	// the packages must not reach.
	forbidden []string
	// allowed, when set, forbids every package of svc outside these roots.
	allowed []string
}

// The layers of docs/architecture.md, by directory: a package's place in
// the tree says what it may import, so a new package is covered without
// being listed.
var rules = []rule{
	{name: "the API never reaches the activities, workflows or drivers", transitive: true,
		from:      func(p string) bool { return under(p, "svc/api") },
		forbidden: []string{"svc/activities", "svc/workflows", "svc/drivers"}},
	{name: "workflows never link the store or drivers", transitive: true,
		from:      func(p string) bool { return under(p, "svc/workflows") },
		forbidden: []string{"svc/store", "svc/drivers"}},
	{name: "the domain is pure: no store, driver, service, integration, worker or API", transitive: true,
		from: func(p string) bool { return under(p, "svc/internal/domain") },
		forbidden: []string{"svc/store", "svc/drivers", "svc/internal/service", "svc/internal/integrations",
			"svc/activities", "svc/workflows", "svc/api", "svc/internal/orchestration"}},
	{name: "the domain speaks no HTTP",
		from:      func(p string) bool { return under(p, "svc/internal/domain") },
		forbidden: []string{"net/http"}},
	{name: "the platform leaves reach nothing of svc but each other", transitive: true,
		from:    func(p string) bool { return under(p, "svc/internal/platform") },
		allowed: []string{"svc/internal/platform"}},
	{name: "drivers reach nothing of svc above them", transitive: true,
		from:    func(p string) bool { return under(p, "svc/drivers") },
		allowed: []string{"svc/drivers", "svc/internal/platform"}},
	{name: "the worker never calls request-side services", transitive: true,
		from:      func(p string) bool { return under(p, "svc/activities") || under(p, "svc/workflows") },
		forbidden: []string{"svc/internal/service"}},
	{name: "integrations reach only the platform, the domain and each other", transitive: true,
		from:    func(p string) bool { return under(p, "svc/internal/integrations") },
		allowed: []string{"svc/internal/integrations", "svc/internal/platform", "svc/internal/domain"}},
	{name: "the store and drivers never reach Echo", transitive: true,
		from:      func(p string) bool { return under(p, "svc/store") || under(p, "svc/drivers") },
		forbidden: []string{"github.com/labstack/echo"}},
	{name: "the API client reaches only the domain and the platform", transitive: true,
		from:    func(p string) bool { return under(p, "svc/internal/client") },
		allowed: []string{"svc/internal/client", "svc/internal/domain", "svc/internal/platform"}},
	{name: "the CLI reaches only the API client, the domain, the platform and drivers", transitive: true,
		from: func(p string) bool { return under(p, "svc/internal/cli") },
		allowed: []string{"svc/internal/cli", "svc/internal/client", "svc/internal/domain", "svc/internal/platform",
			"svc/drivers"}},
}

// known are violations accepted for a while, each "rule name: package ->
// forbidden root" with the reason beside it. The test fails on a violation
// not listed here and on an entry that no longer happens, so the list only
// shrinks. Each is a boundary issue 31 mends.
var known = map[string]bool{}

// roots are the forbidden roots r checks in reach: its forbidden list,
// or, with allowed, every package of svc in reach outside the allowed roots.
func (r rule) roots(reach []string) []string {
	if r.allowed == nil {
		return r.forbidden
	}
	var out []string
	for _, d := range reach {
		if strings.HasPrefix(d, "svc/") && !slices.ContainsFunc(r.allowed, func(a string) bool { return under(d, a) }) {
			out = append(out, d)
		}
	}
	return out
}

func TestLayering(t *testing.T) {
	g := graph(t)
	seen := map[string]bool{}
	var paths []string
	for p := range g {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, r := range rules {
		for _, p := range paths {
			if !r.from(p) || strings.HasSuffix(p, "test") {
				continue
			}
			reach := g[p].imports
			if r.transitive {
				reach = g[p].deps
			}
			for _, root := range r.roots(reach) {
				if !slices.ContainsFunc(reach, func(d string) bool { return under(d, root) }) {
					continue
				}
				key := r.name + ": " + p + " -> " + root
				seen[key] = true
				if !known[key] {
					t.Errorf("%s (%s)", key, chain(g, p, root))
				}
			}
		}
	}
	for k := range known {
		if !seen[k] {
			t.Errorf("known violation %q no longer happens: remove it from the list", k)
		}
	}
}

// chain finds one import path from p to a package under root, to say
// which import to cut.
func chain(g map[string]pkg, p, root string) string {
	prev := map[string]string{p: ""}
	queue := []string{p}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur != p && under(cur, root) {
			var path []string
			for at := cur; at != ""; at = prev[at] {
				path = append(path, at)
			}
			slices.Reverse(path)
			return strings.Join(path, " -> ")
		}
		for _, next := range g[cur].imports {
			if _, ok := prev[next]; !ok {
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return "via the standard library or a module outside svc"
}
