package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"svc/internal/client"
	"svc/internal/domain/graders"
	"svc/internal/domain/registry"
)

const datasetSynopsis = `usage: svc dataset push FILE [--id id] [--version v] [--grader g]... [--dry-run] [--json]
       svc dataset diff <id> [<base> [<candidate>]] [--format f] [--exit-code] [--json]
       svc dataset list [--format f] [--json]

push registers the cases of FILE as a dataset version (POST /datasets). FILE is
  .json   a dataset {id, version, cases: [...]} or an array of cases;
  .jsonl  one case (a JSON object) a line;
  .csv    a header row, then one case a row. Columns: id (default: the row number),
          task (or input, prompt), expected (or target), tags and graders (separated
          by ; or ,; a graders cell may also be a JSON array), timeoutSec, image;
          task.<name> and expected.<name> columns build an object member by member.
--type json|jsonl|csv overrides the extension (FILE - reads stdin). A case with an
expected answer and no graders is graded by exit_code and the default answer
grader, exact (json_match for an object or list); push names such cases. The id
defaults to the file's name without extension. Pushing the same content again is harmless
(the version is unchanged); other content under a registered version is refused.
--dry-run validates without registering (POST /datasets/validate).

diff compares two versions of a dataset (GET /datasets/:id/diff): cases added,
removed and changed (with the fields that differ). base and candidate default to
latest.

Exit codes: 0 done; 1 diff --exit-code found differences, or push --dry-run found
the spec invalid or in conflict; 2 usage or service error (an invalid spec, a
conflicting version).`

// RunDataset is `svc dataset`.
func RunDataset(ctx context.Context, x *cli, args []string) (int, error) {
	return subcommand(ctx, x, datasetSynopsis, []sub{
		{"push", runDatasetPush},
		{"diff", runDatasetDiff},
		{"list", func(ctx context.Context, x *cli, args []string) (int, error) {
			return runRegistryList(ctx, x, "dataset list", datasetSynopsis, "/datasets", args)
		}},
	}, args)
}

// Dataset file types.
const (
	typeJSON  = "json"
	typeJSONL = "jsonl"
	typeCSV   = "csv"
)

// runDatasetPush is `svc dataset push`.
func runDatasetPush(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "dataset push", datasetSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	id := fs.String("id", "", "the dataset's id (default: the file's, else its name without extension)")
	version := fs.String("version", "", "the version to register (default: the file's own)")
	description := fs.String("description", "", "the dataset's description")
	typ := fs.String("type", "", "the file's `type`: json, jsonl or csv (default: by extension)")
	var graders listJSONFlag
	fs.Var(&graders, "grader", "a `grader` for every case that has none: an id (exact, exit_code, ...) or a JSON object; repeatable")
	dryRun := fs.Bool("dry-run", false, "validate only: say whether registering would succeed, register nothing")
	asJSON := fs.Bool("json", false, "print the service's answer as JSON")
	arg, err := parseOne(fs, args, "dataset file")
	if err != nil {
		return 0, err
	}
	doc, err := loadDataset(arg, *typ)
	if err != nil {
		return 0, err
	}
	if err := completeDataset(doc, arg, *id, *version, *description, graders); err != nil {
		return 0, err
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	// Where the defaults grade a case, say so: on stdout beside the
	// registration line, on stderr when stdout is the service's JSON.
	note := x.stdout
	if *asJSON {
		note = x.stderr
	}
	if *dryRun {
		code, err := validateSpec(ctx, x, c, "/datasets", doc, *asJSON)
		if err == nil {
			writeDefaultGrading(note, doc)
		}
		return code, err
	}
	if _, err := registerSpec(ctx, x, c, "/datasets", "dataset", doc, *asJSON); err != nil {
		return 0, err
	}
	writeDefaultGrading(note, doc)
	return exitOK, nil
}

// writeDefaultGrading says which default graders grade the cases of doc
// that declare none (graders.ForCase): those with an expected answer get
// an answer grader besides exit_code, so a push never leaves answers
// uncompared without saying how they are compared.
func writeDefaultGrading(w io.Writer, doc map[string]any) {
	cases, _ := doc["cases"].([]any)
	byKind := map[string][]string{}
	var kinds []string
	for i, raw := range cases {
		m, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		if gs, _ := m["graders"].([]any); len(gs) > 0 {
			continue
		}
		g, ok := graders.AnswerDefault(registry.EvalCase{Expected: m["expected"]})
		if !ok {
			continue
		}
		id := fmt.Sprint(m["id"])
		if m["id"] == nil {
			id = fmt.Sprintf("#%d", i+1)
		}
		if byKind[g.ID] == nil {
			kinds = append(kinds, g.ID)
		}
		byKind[g.ID] = append(byKind[g.ID], id)
	}
	for _, k := range kinds {
		ids := byKind[k]
		how := "the answer, trimmed, must equal expected"
		if k == graders.KindJSONMatch {
			how = "the answer's JSON must match expected"
		}
		has := "cases have"
		if len(ids) == 1 {
			has = "case has"
		}
		fmt.Fprintf(w, "%d %s an expected answer and no graders%s: each is graded by exit_code and the default %s grader (%s; its score is %q); give a graders column, --grader or graders in the file to choose others\n",
			len(ids), has, sample(ids), k, how, k)
	}
}

// sample lists up to three ids, for a note: " (a, b, c and 4 more)".
func sample(ids []string) string {
	if len(ids) <= 3 {
		return " (" + strings.Join(ids, ", ") + ")"
	}
	return fmt.Sprintf(" (%s and %d more)", strings.Join(ids[:3], ", "), len(ids)-3)
}

// completeDataset sets the flags over what the file says, defaults the id
// to the file's name, and gives every case without graders the --grader
// ones.
func completeDataset(doc map[string]any, path, id, version, description string, graders []any) error {
	if id == "" && doc["id"] == nil && path != "-" {
		id = baseName(path)
	}
	if description != "" {
		doc["description"] = description
	}
	if err := setIDVersion(doc, id, version, "dataset", path); err != nil {
		return err
	}
	if len(graders) == 0 {
		return nil
	}
	cases, _ := doc["cases"].([]any)
	for _, c := range cases {
		if m, ok := c.(map[string]any); ok && m["graders"] == nil {
			m["graders"] = graders
		}
	}
	return nil
}

// loadDataset reads a dataset file of type typ (by extension when empty)
// as a dataset document: {id?, version?, cases}.
func loadDataset(path, typ string) (map[string]any, error) {
	var (
		b   []byte
		err error
	)
	if path == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if typ == "" {
		switch strings.ToLower(filepath.Ext(path)) {
		case ".jsonl", ".ndjson":
			typ = typeJSONL
		case ".csv":
			typ = typeCSV
		default:
			typ = typeJSON
		}
	}
	var cases []any
	switch typ {
	case typeJSON:
		var v any
		if err := decodeJSON(b, &v); err != nil {
			return nil, fmt.Errorf("%w: %s: not JSON: %v", errUsage, path, err)
		}
		switch d := v.(type) {
		case map[string]any:
			if _, ok := d["cases"]; !ok {
				return nil, fmt.Errorf("%w: %s: a JSON dataset is {id, version, cases: [...]} or an array of cases; this object has no cases", errUsage, path)
			}
			return d, nil
		case []any:
			cases = d
		default:
			return nil, fmt.Errorf("%w: %s: a JSON dataset is {id, version, cases: [...]} or an array of cases", errUsage, path)
		}
	case typeJSONL:
		if cases, err = jsonlCases(b); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", errUsage, path, err)
		}
	case typeCSV:
		if cases, err = csvCases(b); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", errUsage, path, err)
		}
	default:
		return nil, fmt.Errorf("%w: --type %q: want json, jsonl or csv", errUsage, typ)
	}
	return map[string]any{"cases": cases}, nil
}

// jsonlCases reads one case object a line; blank lines are skipped.
func jsonlCases(b []byte) ([]any, error) {
	var cases []any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var c map[string]any
		if err := decodeJSON(line, &c); err != nil {
			return nil, fmt.Errorf("line %d: not a JSON object: %v", n, err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(cases) == 0 {
		return nil, errors.New("no cases")
	}
	return cases, nil
}

// csvColumns maps a CSV heading to the case field it fills; the
// synonyms are those of promptfoo's and Inspect's CSV datasets.
var csvColumns = map[string]string{
	"id": "id", "task": "task", "input": "task", "prompt": "task",
	"expected": "expected", "target": "expected", "__expected": "expected",
	"tags": "tags", "graders": "graders", "timeoutsec": "timeoutSec", "image": "image",
}

// csvCases reads a header row, then one case a row.
func csvCases(b []byte) ([]any, error) {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(b, []byte("\ufeff"))))
	r.FieldsPerRecord = 0
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("reading the header row: %v", err)
	}
	fields := make([]string, len(head)) // "task", or "task.question"
	seen := map[string]bool{}
	for i, h := range head {
		h = strings.TrimSpace(h)
		f, ok := csvColumns[strings.ToLower(h)]
		if !ok {
			base, member, dotted := strings.Cut(h, ".")
			if !dotted || member == "" || (base != "task" && base != "expected") {
				return nil, fmt.Errorf("column %q is not a case field (id, task, expected, tags, graders, timeoutSec, image); name it task.%s to pass it to the harness as a member of the task", h, h)
			}
			f = base + "." + member
		}
		if seen[f] {
			return nil, fmt.Errorf("two columns fill %s", f)
		}
		seen[f] = true
		fields[i] = f
	}
	for _, f := range []string{"task", "expected"} {
		for g := range seen {
			if seen[f] && strings.HasPrefix(g, f+".") {
				return nil, fmt.Errorf("columns %s and %s both fill the case's %s", f, g, f)
			}
		}
	}
	var cases []any
	for n := 1; ; n++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		c := map[string]any{}
		for i, v := range rec {
			if v == "" {
				continue
			}
			f := fields[i]
			switch {
			case f == "tags":
				c[f] = splitCell(v)
			case f == "graders":
				g, err := gradersCell(v)
				if err != nil {
					return nil, fmt.Errorf("row %d, graders: %v", n, err)
				}
				c[f] = g
			case f == "timeoutSec":
				t, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil {
					return nil, fmt.Errorf("row %d: timeoutSec %q is not a whole number of seconds", n, v)
				}
				c[f] = t
			case strings.Contains(f, "."):
				base, member, _ := strings.Cut(f, ".")
				obj, _ := c[base].(map[string]any)
				if obj == nil {
					obj = map[string]any{}
					c[base] = obj
				}
				obj[member] = v
			default:
				c[f] = v
			}
		}
		if c["id"] == nil {
			c["id"] = strconv.Itoa(n)
		}
		cases = append(cases, c)
	}
	if len(cases) == 0 {
		return nil, errors.New("no rows under the header")
	}
	return cases, nil
}

// splitCell splits a list cell on semicolons and commas.
func splitCell(v string) []any {
	var out []any
	for _, s := range strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == ',' }) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// gradersCell reads a graders cell: a JSON array, or grader ids.
func gradersCell(v string) ([]any, error) {
	if t := strings.TrimSpace(v); strings.HasPrefix(t, "[") {
		var g []any
		if err := decodeJSON([]byte(t), &g); err != nil {
			return nil, fmt.Errorf("not a JSON array: %v", err)
		}
		return g, nil
	}
	var out []any
	for _, id := range splitCell(v) {
		out = append(out, map[string]any{"id": id})
	}
	return out, nil
}

// listJSONFlag collects grader flags: an id alone, or a JSON object.
type listJSONFlag []any

func (l *listJSONFlag) String() string { return fmt.Sprint(*l) }

func (l *listJSONFlag) Set(v string) error {
	g, err := graderValue(v)
	if err != nil {
		return err
	}
	*l = append(*l, g)
	return nil
}

// graderValue reads a grader given on the command line or in an eval
// file: {"id": ...} from an id, else the JSON object.
func graderValue(v string) (any, error) {
	t := strings.TrimSpace(v)
	if !strings.HasPrefix(t, "{") {
		if t == "" || strings.ContainsAny(t, " \t") {
			return nil, fmt.Errorf("%q is neither a grader id nor a JSON object", v)
		}
		return map[string]any{"id": t}, nil
	}
	var g map[string]any
	if err := decodeJSON([]byte(t), &g); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	return g, nil
}

// validateSpec is a dry run (POST <collection>/validate): 0 when
// registering would succeed, 1 when not, with the problems.
func validateSpec(ctx context.Context, x *cli, c *client.Client, collection string, doc any, asJSON bool) (int, error) {
	v, raw, err := c.Validate(ctx, collection, doc)
	if err != nil {
		return 0, err
	}
	if asJSON {
		writeJSON(x.stdout, raw)
	}
	code := exitOK
	var line string
	switch {
	case !v.Valid:
		line, code = fmt.Sprintf("INVALID: %s %s@%s", v.Kind, v.ID, v.Version), exitVerdict
	case v.Conflict:
		line, code = fmt.Sprintf("CONFLICT: %s %s@%s is registered with other content (%s, this is %s): use a new version",
			v.Kind, v.ID, v.Version, shortDigest(v.Stored), shortDigest(v.Digest)), exitVerdict
	case v.Identical:
		line = fmt.Sprintf("VALID: %s %s@%s is registered with this very content: pushing it changes nothing", v.Kind, v.ID, v.Version)
	default:
		line = fmt.Sprintf("VALID: %s %s@%s would be registered (%s)", v.Kind, v.ID, v.Version, shortDigest(v.Digest))
	}
	if !asJSON {
		fmt.Fprintln(x.stdout, line)
		for _, p := range v.Problems {
			if p.Path == "" {
				fmt.Fprintln(x.stdout, "  "+p.Message)
			} else {
				fmt.Fprintf(x.stdout, "  %s: %s\n", p.Path, p.Message)
			}
		}
	}
	return code, nil
}

// runDatasetDiff is `svc dataset diff`.
func runDatasetDiff(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "dataset diff", datasetSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	format := fs.String("format", formatTable, "output `format` of the case table: table, csv, jsonl or md")
	exitCode := fs.Bool("exit-code", false, "exit 1 when the versions differ")
	asJSON := fs.Bool("json", false, "print the service's JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) < 1 || len(pos) > 3 {
		return 0, fmt.Errorf("%w: want a dataset id and up to two versions (base, candidate), got %d arguments", errUsage, len(pos))
	}
	if err := checkFormat(*format); err != nil {
		return 0, err
	}
	id := pos[0]
	base, candidate := registry.LatestVersion, registry.LatestVersion
	if len(pos) > 1 {
		base = pos[1]
	}
	if len(pos) > 2 {
		candidate = pos[2]
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	d, raw, err := c.DatasetDiff(ctx, id, base, candidate)
	if err != nil {
		return 0, err
	}
	differ := len(d.Added)+len(d.Removed)+len(d.Changed)+len(d.Meta) > 0 || d.Reordered
	code := exitOK
	if differ && *exitCode {
		code = exitVerdict
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
		return code, nil
	}
	sh := &sheet{cols: []column{{head: "CASE", key: "case"}, {head: "CHANGE", key: "change"}, {head: "FIELDS", key: "fields"}}}
	for _, a := range d.Added {
		sh.add(a, string(registry.Added), "")
	}
	for _, r := range d.Removed {
		sh.add(r, string(registry.Removed), "")
	}
	for _, ch := range d.Changed {
		sh.add(ch.ID, string(registry.Changed), strings.Join(ch.Fields, ","))
	}
	if *format != formatTable {
		return code, sh.write(x.stdout, *format)
	}
	fmt.Fprintf(x.stdout, "dataset %s: %s (%d %s, %s) -> %s (%d %s, %s)\n", id,
		d.Base.Version, d.Base.CaseCount, plural(d.Base.CaseCount, "case"), shortDigest(d.Base.Digest),
		d.Candidate.Version, d.Candidate.CaseCount, plural(d.Candidate.CaseCount, "case"), shortDigest(d.Candidate.Digest))
	fmt.Fprintf(x.stdout, "  %d added, %d removed, %d changed, %d unchanged", len(d.Added), len(d.Removed), len(d.Changed), d.Unchanged)
	if d.Reordered {
		fmt.Fprint(x.stdout, "; the cases are in another order")
	}
	fmt.Fprintln(x.stdout)
	if len(sh.rows) > 0 {
		fmt.Fprintln(x.stdout)
		sh.indent = "  "
		sh.write(x.stdout, formatTable)
	}
	if len(d.Meta) > 0 {
		fmt.Fprintln(x.stdout, "\nOutside the cases:")
		m := &sheet{indent: "  ", cols: []column{{head: "PATH", key: "path"}, {head: "CHANGE", key: "change"},
			{head: "BASE", key: "base", clip: 40}, {head: "CANDIDATE", key: "candidate", clip: 40}}}
		for _, f := range d.Meta {
			m.add(f.Path, string(f.Change), string(f.Base), string(f.Candidate))
		}
		m.write(x.stdout, formatTable)
	}
	return code, nil
}

// runRegistryList is `svc <kind> list`: GET <collection>, one line per
// entity with its versions.
func runRegistryList(ctx context.Context, x *cli, name, synopsis, collection string, args []string) (int, error) {
	fs := newFlagSet(x, name, synopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	format := fs.String("format", formatTable, "output `format`: table, csv, jsonl or md")
	asJSON := fs.Bool("json", false, "print the service's JSON array")
	if err := parseNone(fs, args); err != nil {
		return 0, err
	}
	c, err := cf.tableClient(x.getenv, *format)
	if err != nil {
		return 0, err
	}
	list, raw, err := c.ListRegistry(ctx, collection)
	if err != nil {
		return 0, err
	}
	sh := &sheet{cols: []column{{head: "ID", key: "id"}, {head: "LATEST", key: "latest"}, {head: "VERSIONS", key: "versions"},
		{head: "OWNER", key: "owner"}, {head: "TEAM", key: "team"}}}
	for _, e := range list {
		sh.add(e.ID, e.Latest, strings.Join(e.Versions, ","), e.Owner, e.TeamID)
	}
	return writeList(x, sh, *format, *asJSON, raw, func() {
		fmt.Fprintf(x.stdout, "None in this workspace (%s).\n", collection)
	})
}
