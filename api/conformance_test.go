package api_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"svc/api"
	"svc/internal/platform/config"
)

// conformanceDoc is the table of the spec's rules and of the routes.
const conformanceDoc = "../docs/conformance.md"

var (
	ruleID      = regexp.MustCompile(`^(\d+(?:\.\d+)?)-(\d+)$`)
	ruleIDInRow = regexp.MustCompile(`\b\d+(?:\.\d+)?-\d+\b`)
	backticked  = regexp.MustCompile("`([^`]+)`")
	// testRef is `dir.TestName/subtest`, dir and subtest optional.
	testRef   = regexp.MustCompile(`^(?:([a-z0-9_]+(?:/[a-z0-9_]+)*)\.)?(Test[A-Za-z0-9_]*)(?:/(\S+))?$`)
	testFunc  = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
	countLine = regexp.MustCompile(`(?m)^Counts: rules (\d+), held (\d+), partial (\d+), open (\d+)\.$`)
)

// docRow is one table row of the page: its line number and cells.
type docRow struct {
	line  int
	cells []string
}

// tablesOf returns the rows of the table under each "## " heading, without
// the header and separator rows.
func tablesOf(doc string) map[string][]docRow {
	tables := map[string][]docRow{}
	heading := ""
	seen := 0 // rows of the current table, header and separator included
	for i, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			heading, seen = strings.TrimPrefix(line, "## "), 0
		case strings.HasPrefix(line, "|"):
			seen++
			if seen <= 2 {
				continue
			}
			cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(line), "|"), "|"), "|")
			for j := range cells {
				cells[j] = strings.TrimSpace(cells[j])
			}
			tables[heading] = append(tables[heading], docRow{line: i + 1, cells: cells})
		default:
			seen = 0
		}
	}
	return tables
}

// repoTests reads the repository under root: the Test functions each
// directory's *_test.go files declare, and all Go source as one text, where
// subtest names are looked up.
func repoTests(t *testing.T, root string) (map[string]map[string]bool, string) {
	t.Helper()
	byDir := map[string]map[string]bool{}
	var all strings.Builder
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		all.Write(b)
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(rel)
		for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
			if byDir[dir] == nil {
				byDir[dir] = map[string]bool{}
			}
			byDir[dir][m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the repository's Go files: %v", err)
	}
	return byDir, all.String()
}

// TestConformanceTableIsTrue keeps docs/conformance.md true: every test it
// names exists, every held row names one, its counts are its rows', its
// rule ids are unique, and its routes table is the route table.
func TestConformanceTableIsTrue(t *testing.T) {
	raw, err := os.ReadFile(conformanceDoc)
	if err != nil {
		t.Fatal(err)
	}
	byDir, source := repoTests(t, "..")
	var routes []string
	for _, r := range api.New(api.Options{Config: config.Defaults()}).Routes() {
		routes = append(routes, r.Method+" "+r.Path)
	}
	for _, p := range conformanceProblems(conformanceDoc, string(raw), routes, byDir, source) {
		t.Error(p)
	}
}

// conformanceProblems checks doc (named name in the messages) against the
// routes ("GET /runs/:id"), the Test functions of each directory and the
// Go source; it returns one message per problem.
func conformanceProblems(name, doc string, routes []string, byDir map[string]map[string]bool, source string) []string {
	var problems []string
	report := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	tables := tablesOf(doc)

	// checkRef reports what is wrong with one test reference, or "".
	checkRef := func(ref string) string {
		m := testRef.FindStringSubmatch(ref)
		if m == nil {
			return "is not a test reference (`dir.TestName`, `TestName` or `dir.TestName/subtest`)"
		}
		dir, fn, sub := m[1], m[2], m[3]
		if dir != "" {
			if !byDir[dir][fn] {
				return "names a test that no *_test.go file in " + dir + "/ declares (no \"func " + fn + "(\")"
			}
		} else {
			found := false
			for _, names := range byDir {
				found = found || names[fn]
			}
			if !found {
				return "names a test that no *_test.go file of the repository declares (no \"func " + fn + "(\")"
			}
		}
		if sub != "" && !strings.Contains(source, strconv.Quote(sub)) {
			return "names subtest " + strconv.Quote(sub) + ", which no Go file writes as a string"
		}
		return ""
	}

	rules := tables["Rules"]
	if len(rules) == 0 {
		report("%s: no rows under \"## Rules\"", name)
	}
	ids := map[string]int{} // rule id -> line
	count := map[string]int{}
	for _, r := range rules {
		where := name + ":" + strconv.Itoa(r.line)
		if len(r.cells) != 6 {
			report("%s: a rules row has %d cells, want 6 (id | § | rule | status | tests | notes)", where, len(r.cells))
			continue
		}
		id, section, status, tests, notes := r.cells[0], r.cells[1], r.cells[3], r.cells[4], r.cells[5]
		m := ruleID.FindStringSubmatch(id)
		if m == nil {
			report("%s: rule id %q is not <section>-<n> (like 4.5-3)", where, id)
		} else if m[1] != section {
			report("%s: rule %s is in section column %q, want %q", where, id, section, m[1])
		}
		if first, dup := ids[id]; dup {
			report("%s: rule id %s repeats the row at line %d", where, id, first)
		} else {
			ids[id] = r.line
		}
		var refs []string
		for _, b := range backticked.FindAllStringSubmatch(tests, -1) {
			refs = append(refs, b[1])
		}
		if rest := strings.TrimSpace(backticked.ReplaceAllString(tests, "")); rest != "" {
			report("%s: rule %s: tests column has %q outside backticks; write each test as `dir.TestName`", where, id, rest)
		}
		for _, ref := range refs {
			if msg := checkRef(ref); msg != "" {
				report("%s: rule %s: `%s` %s", where, id, ref, msg)
			}
		}
		// Tests named in the notes must exist too; they are not the row's tests.
		for _, b := range backticked.FindAllStringSubmatch(notes, -1) {
			if testRef.MatchString(b[1]) {
				if msg := checkRef(b[1]); msg != "" {
					report("%s: rule %s: notes `%s` %s", where, id, b[1], msg)
				}
			}
		}
		switch status {
		case "held", "partial":
			if len(refs) == 0 {
				report("%s: rule %s is %s but names no test", where, id, status)
			}
			if status == "partial" && notes == "" {
				report("%s: rule %s is partial: say in the notes what is not checked end to end", where, id)
			}
		case "open":
			if notes == "" {
				report("%s: rule %s is open: name the issue or decision that says why in the notes", where, id)
			}
		default:
			report("%s: rule %s has status %q, want held, partial or open", where, id, status)
		}
		count[status]++
	}

	if m := countLine.FindStringSubmatch(doc); m == nil {
		report("%s: no line \"Counts: rules N, held N, partial N, open N.\"", name)
	} else {
		for i, want := range []struct {
			what string
			n    int
		}{{"rules", len(rules)}, {"held", count["held"]}, {"partial", count["partial"]}, {"open", count["open"]}} {
			if got, _ := strconv.Atoi(m[i+1]); got != want.n {
				report("%s: the counts line says %s %d, the rows have %d", name, want.what, got, want.n)
			}
		}
	}

	inTable := map[string]bool{}
	for _, r := range routes {
		inTable[r] = true
	}
	listed := map[string]int{}
	for _, r := range tables["Routes"] {
		where := name + ":" + strconv.Itoa(r.line)
		if len(r.cells) != 3 {
			report("%s: a routes row has %d cells, want 3 (method | path | rules)", where, len(r.cells))
			continue
		}
		key := r.cells[0] + " " + strings.Trim(r.cells[1], "`")
		if first, dup := listed[key]; dup {
			report("%s: route %s repeats the row at line %d", where, key, first)
		} else {
			listed[key] = r.line
		}
		if !inTable[key] {
			report("%s: route %s is not in the route table (api.Server.Routes): remove the row or fix its method and path", where, key)
		}
		cover := ruleIDInRow.FindAllString(r.cells[2], -1)
		for _, id := range cover {
			if _, ok := ids[id]; !ok {
				report("%s: route %s names rule %s, which the rules table lacks", where, key, id)
			}
		}
		if len(cover) == 0 && !strings.Contains(r.cells[2], "beyond the spec") && !strings.Contains(r.cells[2], "open (issue") {
			report("%s: route %s names no rule; name the rules that cover it, or say `beyond the spec` and where it is documented", where, key)
		}
	}
	for _, key := range routes {
		if listed[key] == 0 {
			method, path, _ := strings.Cut(key, " ")
			report("route %s of the route table has no row in the routes table of %s: add the row | %s | `%s` | <rule ids> |", key, name, method, path)
		}
	}
	return problems
}

// TestConformanceCheckCatchesDrift shows that each check can fail: every
// kind of drift in a small page is reported, and the page without it is not.
func TestConformanceCheckCatchesDrift(t *testing.T) {
	byDir := map[string]map[string]bool{"e2e": {"TestReal": true}, "api": {"TestOther": true}}
	source := `t.Run("sub/case", nil)`
	routes := []string{"GET /runs/:id", "POST /runs"}
	const good = "Counts: rules 3, held 1, partial 1, open 1.\n\n" +
		"## Rules\n\n| id | § | rule | status | tests | notes |\n|---|---|---|---|---|---|\n" +
		"| 4.2-1 | 4.2 | a rule | held | `e2e.TestReal` `TestOther` | |\n" +
		"| 4.2-2 | 4.2 | a rule | partial | `e2e.TestReal/sub/case` | only part |\n" +
		"| 9-1 | 9 | a rule | open | | issue 32 |\n\n" +
		"## Routes\n\n| method | path | rules |\n|---|---|---|\n" +
		"| GET | `/runs/:id` | 4.2-1 |\n" +
		"| POST | `/runs` | 4.2-2, 9-1 |\n"
	if got := conformanceProblems("doc", good, routes, byDir, source); len(got) != 0 {
		t.Fatalf("the good page has problems: %q", got)
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"missing test", "`e2e.TestReal` `TestOther`", "`e2e.TestGone`", `no "func TestGone("`},
		{"test in another directory", "`e2e.TestReal` `TestOther`", "`e2e.TestOther`", "no *_test.go file in e2e/"},
		{"missing subtest", "TestReal/sub/case", "TestReal/sub/gone", `subtest "sub/gone"`},
		{"test outside backticks", "`e2e.TestReal` `TestOther`", "e2e.TestReal", "outside backticks"},
		{"held without a test", "| held | `e2e.TestReal` `TestOther` |", "| held | |", "is held but names no test"},
		{"partial without notes", "| only part |", "| |", "is partial: say"},
		{"open without notes", "| issue 32 |", "| |", "is open: name the issue"},
		{"unknown status", "| held |", "| done |", `status "done"`},
		{"repeated id", "| 4.2-2 | 4.2 |", "| 4.2-1 | 4.2 |", "rule id 4.2-1 repeats"},
		{"bad id", "| 9-1 | 9 |", "| 9.x | 9 |", `rule id "9.x"`},
		{"section disagrees", "| 9-1 | 9 |", "| 9-1 | 8 |", `section column "8", want "9"`},
		{"counts", "held 1,", "held 2,", "says held 2, the rows have 1"},
		{"route missing", "| POST | `/runs` | 4.2-2, 9-1 |\n", "", "route POST /runs of the route table has no row"},
		{"route that does not exist", "| POST | `/runs` |", "| PUT | `/runs` |", "route PUT /runs is not in the route table"},
		{"route with an unknown rule", "| 4.2-2, 9-1 |", "| 4.2-9 |", "names rule 4.2-9, which the rules table lacks"},
		{"route with no rule", "| 4.2-2, 9-1 |", "| soon |", "names no rule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(good, tc.old, tc.new, 1)
			if doc == good {
				t.Fatalf("the case does not change the page: %q not found", tc.old)
			}
			got := conformanceProblems("doc", doc, routes, byDir, source)
			if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("problems %q, want one saying %q", got, tc.want)
			}
		})
	}
}
