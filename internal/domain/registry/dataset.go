package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// DatasetSpec is a registered dataset version: an ordered list of cases.
type DatasetSpec struct {
	ID          string   `json:"id"`
	Version     string   `json:"version"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	// Cases are the eval cases, in order; ids are unique.
	Cases []EvalCase `json:"cases,omitempty"`
	// Meta is free-form metadata about the dataset (source, licence, ...);
	// part of the content, shown by the dataset diff.
	Meta map[string]any `json:"meta,omitempty"`
}

// EvalCase is one case of a dataset (spec §2.4), also the body's `case` of
// POST /runs. The harness receives it as JSON (SVC_CASE_FILE).
type EvalCase struct {
	// ID names the case within its dataset: 1 to 256 characters, no
	// whitespace (ids of public benchmarks such as "HumanEval/0" pass).
	ID string `json:"id"`
	// Env is the environment the case runs in, interpreted by drivers.
	Env *Env `json:"env,omitempty"`
	// Task is what the agent is asked to do: usually the prompt string; an
	// object is passed to the harness as it is.
	Task any `json:"task,omitempty"`
	// Graders score the case's result; ids are unique within the case.
	Graders []Grader `json:"graders,omitempty"`
	// TimeoutSec bounds one attempt; 0 means the harness's or runtime's
	// default.
	TimeoutSec int      `json:"timeoutSec,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	// Placement says where the case runs; POST /runs' `runtime` sets Target.
	Placement *Placement `json:"placement,omitempty"`
	// Resources the case declares; admission and GPU routing use them.
	Resources *Resources `json:"resources,omitempty"`
	// Image is the container image the case's world starts from.
	Image string `json:"image,omitempty"`
	// Expected is the reference answer, free-form, read by graders.
	Expected any `json:"expected,omitempty"`
	// Milestones merge into a judge's criteria as milestone:<id>.
	Milestones []Milestone `json:"milestones,omitempty"`
}

// Env is a case's environment: a kind and a kind-specific source.
type Env struct {
	// Kind is a lowercase token; "repo" (a source holding files) is the
	// kind the spec shows and the only one whose source is checked here.
	Kind string `json:"kind"`
	// Source is the environment's content. For kind "repo" it holds
	// `files`, an object of relative path -> file content; other members
	// and other kinds are interpreted by the driver.
	Source map[string]any `json:"source,omitempty"`
}

// EnvRepo is the environment kind whose source is a set of files.
const EnvRepo = "repo"

// Grader is one grader of a case. Only its id is fixed by the spec; every
// other member (its kind and settings) is kept in Params, for the grading
// code to interpret.
type Grader struct {
	// ID names the grader's scores (Score.graderId).
	ID string
	// Params holds every member but "id", as sent.
	Params map[string]any
}

// MarshalJSON writes the grader as one object: id plus Params.
func (g Grader) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(g.Params)+1)
	for k, v := range g.Params {
		m[k] = v
	}
	m["id"] = g.ID
	return json.Marshal(m)
}

// UnmarshalJSON reads a grader object; "id", when present, must be a string.
func (g *Grader) UnmarshalJSON(b []byte) error {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("grader: %w", err)
	}
	*g = Grader{}
	if id, ok := m["id"]; ok && id != nil {
		s, ok := id.(string)
		if !ok {
			return fmt.Errorf("grader id must be a string")
		}
		g.ID = s
	}
	delete(m, "id")
	if len(m) > 0 {
		g.Params = m
	}
	return nil
}

// checkShape implements shaper: an object whose id, if any, is a string.
func (*Grader) checkShape(v any, p string, pr *problems) {
	obj, ok := v.(map[string]any)
	if !ok {
		pr.add(p, "must be a JSON object, not %s", describe(v))
		return
	}
	if id, ok := obj["id"]; ok && id != nil {
		if _, ok := id.(string); !ok {
			pr.add(field(p, "id"), "must be a string, not %s", describe(id))
		}
	}
}

// CaseGraders reads the id and graders of each case of a dataset document
// leniently, so that a checker outside this package (package graders, which
// imports this one) can list its problems beside Parse's. It never fails:
// what does not decode (a body that is not JSON, a case or grader that is
// not an object, an id that is not a string) is left empty, for Parse to
// report. Cases and graders keep their positions in the document, so
// problem paths agree with Parse's.
func CaseGraders(raw []byte) []EvalCase {
	var doc struct {
		Cases []json.RawMessage `json:"cases"`
	}
	if json.Unmarshal(raw, &doc) != nil {
		return nil
	}
	cases := make([]EvalCase, len(doc.Cases))
	for i, rc := range doc.Cases {
		var c struct {
			ID      any               `json:"id"`
			Graders []json.RawMessage `json:"graders"`
		}
		if json.Unmarshal(rc, &c) != nil {
			continue
		}
		cases[i].ID, _ = c.ID.(string)
		cases[i].Graders = make([]Grader, len(c.Graders))
		for j, rg := range c.Graders {
			var g Grader
			if json.Unmarshal(rg, &g) == nil {
				cases[i].Graders[j] = g
			}
		}
	}
	return cases
}

// Placement says where a case runs.
type Placement struct {
	// Target is the id of the registered runtime to run on.
	Target string `json:"target,omitempty"`
	// OS is the operating system the world needs (a lowercase token such
	// as "linux").
	OS string `json:"os,omitempty"`
}

// Resources a case or harness declares. A nil field is undeclared, which
// differs from zero: an undeclared cpu needs no MHz conversion, an
// undeclared memory stays outside the runtime's memory budget, and an
// undeclared gpu takes the runtime's default.
type Resources struct {
	CPU      *int `json:"cpu,omitempty"`      // millicores
	MemoryMb *int `json:"memoryMb,omitempty"` // MiB
	GPU      *int `json:"gpu,omitempty"`      // GPUs reserved
}

// Milestone is an intermediate goal of a case, judged as a criterion.
type Milestone struct {
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
}

// Limits of declared numbers: generous, but keep the arithmetic on them
// (millicores x MHz, seconds -> time.Duration) far from overflow.
const (
	maxTimeoutSec = 7 * 24 * 3600
	maxCPU        = 1_000_000 // millicores: 1000 cores
	maxMemoryMb   = 1 << 24   // 16 TiB
	maxGPU        = 1024
	maxCaseIDLen  = 256
	maxGraderID   = 128
)

// validate checks a dataset and normalises empty optional objects away.
func (d *DatasetSpec) validate(p *problems) {
	checkID(p, "id", d.ID)
	checkVersion(p, "version", d.Version)
	checkSpecTags(p, "tags", d.Tags)
	if len(d.Cases) == 0 {
		p.required("cases", "at least one case")
	}
	seen := make(map[string]int, len(d.Cases))
	for i := range d.Cases {
		c := &d.Cases[i]
		cp := index("cases", i)
		c.validate(p, cp)
		if c.ID == "" {
			continue
		}
		if j, dup := seen[c.ID]; dup {
			p.add(field(cp, "id"), "duplicate case id %q (also cases[%d]); case ids must be unique", clip(c.ID), j)
			continue
		}
		seen[c.ID] = i
	}
}

// Validate checks one case on its own (as POST /runs receives it), with
// problem paths from the case's root.
func (c *EvalCase) Validate() error {
	var p problems
	c.validate(&p, "")
	return p.err("case")
}

// validate checks a case whose path is at.
func (c *EvalCase) validate(p *problems, at string) {
	switch {
	case c.ID == "":
		p.required(field(at, "id"), "a case id")
	case utf8.RuneCountInString(c.ID) > maxCaseIDLen || hasSpaceOrControl(c.ID):
		p.add(field(at, "id"), "%q must be 1 to %d characters without whitespace", clip(c.ID), maxCaseIDLen)
	}
	if c.Env != nil {
		c.Env.validate(p, field(at, "env"))
	}
	switch t := c.Task.(type) {
	case nil:
		p.required(field(at, "task"), "the task (a prompt string or an object)")
	case string:
		if strings.TrimSpace(t) == "" {
			p.add(field(at, "task"), "must not be empty")
		}
	case map[string]any:
		if len(t) == 0 {
			p.add(field(at, "task"), "must not be an empty object")
		}
	default:
		p.add(field(at, "task"), "must be a prompt string or an object, not %s", describe(t))
	}
	graders := make(map[string]int, len(c.Graders))
	for i, g := range c.Graders {
		gp := field(index(field(at, "graders"), i), "id")
		switch {
		case g.ID == "":
			p.required(gp, "a grader id")
		case utf8.RuneCountInString(g.ID) > maxGraderID || hasSpaceOrControl(g.ID):
			p.add(gp, "%q must be 1 to %d characters without whitespace", clip(g.ID), maxGraderID)
		default:
			if j, dup := graders[g.ID]; dup {
				p.add(gp, "duplicate grader id %q (also graders[%d])", clip(g.ID), j)
			}
			graders[g.ID] = i
		}
	}
	bounded(p, field(at, "timeoutSec"), int64(c.TimeoutSec), 0, maxTimeoutSec)
	checkSpecTags(p, field(at, "tags"), c.Tags)
	if c.Placement != nil {
		if *c.Placement == (Placement{}) {
			c.Placement = nil
		} else {
			c.Placement.validate(p, field(at, "placement"))
		}
	}
	c.Resources = c.Resources.normalize()
	c.Resources.validate(p, field(at, "resources"))
	if c.Image != "" {
		checkImage(p, field(at, "image"), c.Image)
	}
	checkMilestones(p, field(at, "milestones"), c.Milestones)
}

// validate checks an environment.
func (e *Env) validate(p *problems, at string) {
	if e.Kind == "" {
		p.required(field(at, "kind"), `the environment kind (for example "repo")`)
		return
	}
	checkToken(p, field(at, "kind"), e.Kind)
	if e.Kind != EnvRepo {
		return
	}
	sp := field(at, "source")
	files, ok := e.Source["files"]
	if !ok || files == nil {
		p.required(field(sp, "files"), "a repo environment's files (relative path -> content)")
		return
	}
	fm, ok := files.(map[string]any)
	if !ok {
		p.add(field(sp, "files"), "must be an object of relative path -> file content, not %s", describe(files))
		return
	}
	for _, name := range sortedKeys(fm) {
		fp := field(field(sp, "files"), name)
		if _, ok := fm[name].(string); !ok {
			p.add(fp, "file content must be a string, not %s", describe(fm[name]))
		}
		if name == "" || strings.HasPrefix(name, "/") || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") || strings.ContainsRune(name, '\\') {
			p.add(fp, "file names must be clean relative paths with '/' separators, inside the work tree")
		}
	}
}

// validate checks a placement.
func (pl *Placement) validate(p *problems, at string) {
	if pl.Target != "" && !idPattern.MatchString(pl.Target) {
		p.add(field(at, "target"), "%q must be a runtime id: %s", clip(pl.Target), idRule)
	}
	if pl.OS != "" {
		checkToken(p, field(at, "os"), pl.OS)
	}
}

// normalize returns nil for resources that declare nothing, so `{}` and
// an absent member have one canonical form.
func (r *Resources) normalize() *Resources {
	if r == nil || (r.CPU == nil && r.MemoryMb == nil && r.GPU == nil) {
		return nil
	}
	return r
}

// validate checks declared resources (nil declares nothing).
func (r *Resources) validate(p *problems, at string) {
	if r == nil {
		return
	}
	if r.CPU != nil {
		bounded(p, field(at, "cpu"), int64(*r.CPU), 0, maxCPU)
	}
	if r.MemoryMb != nil {
		bounded(p, field(at, "memoryMb"), int64(*r.MemoryMb), 0, maxMemoryMb)
	}
	if r.GPU != nil {
		bounded(p, field(at, "gpu"), int64(*r.GPU), 0, maxGPU)
	}
}

// checkMilestones checks milestone ids: the id rule (they become metric
// names) and unique.
func checkMilestones(p *problems, at string, ms []Milestone) {
	seen := make(map[string]int, len(ms))
	for i, m := range ms {
		mp := field(index(at, i), "id")
		checkID(p, mp, m.ID)
		if m.ID == "" {
			continue
		}
		if j, dup := seen[m.ID]; dup {
			p.add(mp, "duplicate milestone id %q (also milestones[%d])", clip(m.ID), j)
			continue
		}
		seen[m.ID] = i
	}
}
