package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/domain/graders"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/internal/service/registries"
)

// The versioned registries (spec §4.3): datasets, judges, rubrics,
// runtimes, harnesses and harness templates. Handlers here read the
// request and call package registry/service, which holds the rules.

// OriginHeader carries the CapabilityOrigin (spec §2.4) of a registration
// as JSON; it is stamped once, the first answer wins.
const OriginHeader = "x-svc-origin"

// Response headers of GET .../versions/:version, which answers the spec
// itself as its body.
const (
	headerOwner     = "X-Svc-Owner"
	headerVersion   = "X-Svc-Version"
	headerDigest    = "X-Svc-Digest"
	headerCaseCount = "X-Svc-Case-Count"
	headerNextFrom  = "X-Svc-Next-From"
)

// registryResource is one registry collection and its gates.
type registryResource struct {
	kind  registry.Kind
	path  string // "/datasets"
	noun  string // "dataset", for summaries
	nouns string // "datasets"
	read  auth.Action
	write auth.Action
}

var (
	datasetsRes         = registryResource{registry.Dataset, "/datasets", "dataset", "datasets", auth.DatasetsRead, auth.DatasetsWrite}
	judgesRes           = registryResource{registry.Judge, "/judges", "judge", "judges", auth.JudgesRead, auth.JudgesWrite}
	rubricsRes          = registryResource{registry.Rubric, "/rubrics", "rubric", "rubrics", auth.JudgesRead, auth.JudgesWrite}
	runtimesRes         = registryResource{registry.Runtime, "/runtimes", "runtime", "runtimes", auth.RuntimesRead, auth.RuntimesWrite}
	harnessesRes        = registryResource{registry.Harness, "/harnesses", "harness", "harnesses", auth.HarnessesRead, auth.HarnessesRegister}
	harnessTemplatesRes = registryResource{registry.HarnessTemplate, "/harness-templates", "harness template", "harness templates", auth.HarnessesRead, auth.HarnessesRegister}
)

func (s *Server) registryRoutes() []Route {
	var rs []Route
	for _, r := range []registryResource{datasetsRes, judgesRes, rubricsRes, runtimesRes} {
		rs = append(rs,
			Route{Method: http.MethodPost, Path: r.path, Action: r.write,
				Summary: "Register a " + r.noun + " version", Handler: s.register(r)},
			Route{Method: http.MethodPost, Path: r.path + "/validate", Action: r.write,
				Summary: "Validate a " + r.noun + " spec without registering it", Handler: s.validateSpec(r)},
			Route{Method: http.MethodGet, Path: r.path, Action: r.read,
				Summary: "List " + r.nouns, Handler: s.listEntities(r)},
			Route{Method: http.MethodGet, Path: r.path + "/:id/versions/:version", Action: r.read,
				Summary: "Get a " + r.noun + " version's spec", Handler: s.getVersion(r)},
		)
	}
	for _, r := range []registryResource{harnessesRes, datasetsRes, judgesRes, runtimesRes, rubricsRes} {
		rs = append(rs, Route{Method: http.MethodPut, Path: r.path + "/:id/versions/:version/tags", Action: r.write,
			Summary: "Replace a " + r.noun + " version's tags", Handler: s.putTags(r)})
	}
	for _, r := range []registryResource{harnessesRes, harnessTemplatesRes} {
		rs = append(rs,
			Route{Method: http.MethodPost, Path: r.path, Action: r.write,
				Summary: "Register a " + r.noun + " version", Handler: s.register(r)},
			Route{Method: http.MethodGet, Path: r.path, Action: r.read,
				Summary: "List " + r.nouns, Handler: s.listEntities(r)},
		)
	}
	for _, r := range []registryResource{harnessesRes, harnessTemplatesRes, datasetsRes, judgesRes} {
		rs = append(rs, Route{Method: http.MethodPost, Path: r.path + "/:id/team", Action: r.write,
			Summary: "Move a " + r.noun + " to another team", Handler: s.moveEntity(r)})
	}
	return append(rs,
		Route{Method: http.MethodDelete, Path: "/datasets/:id/versions/:version", Action: auth.DatasetsDelete,
			Summary: "Delete a dataset version (tombstone)", Handler: s.deleteDatasetVersion},
		Route{Method: http.MethodGet, Path: "/datasets/:id/diff", Action: auth.DatasetsRead,
			Summary: "Compare two dataset versions", Handler: s.diffDatasets},
		Route{Method: http.MethodPost, Path: "/runtimes/probe", Action: auth.RuntimesWrite,
			Summary: "Probe whether a runtime is reachable", Handler: s.probeRuntime},
		Route{Method: http.MethodGet, Path: "/harnesses/:id", Action: auth.HarnessesRead,
			Summary: "Get a harness with its versions and tags", Handler: s.getHarness},
		Route{Method: http.MethodGet, Path: "/harnesses/:id/:version/instance", Action: auth.HarnessesRead,
			Summary: "Get a harness instance's template and pins", Handler: s.getInstance},
		Route{Method: http.MethodGet, Path: "/harnesses/:id/diff", Action: auth.HarnessesRead,
			Summary: "Compare two harness versions by field path", Handler: s.diffHarnesses},
		Route{Method: http.MethodGet, Path: "/harness-templates/:id/:version", Action: auth.HarnessesRead,
			Summary: "Get a harness template version", Handler: s.getTemplate},
	)
}

// rawSpec reads a JSON body as the bytes registry.Parse decodes strictly.
func rawSpec(c echo.Context) ([]byte, error) {
	if err := requireJSON(c.Request()); err != nil {
		return nil, err
	}
	return readBody(c.Request())
}

// register answers 201 with the new version, or 200 when the identical
// content was already registered.
func (s *Server) register(r registryResource) echo.HandlerFunc {
	return func(c echo.Context) error {
		body, err := rawSpec(c)
		if err != nil {
			return err
		}
		if r.kind == registry.Dataset {
			if err := checkDatasetGraders(body); err != nil {
				return err
			}
		}
		var origin []byte
		if h := c.Request().Header.Get(OriginHeader); h != "" {
			origin = []byte(h)
		}
		v, err := s.registries.Register(c.Request().Context(), principal(c), r.kind, body, origin)
		if err != nil {
			return err
		}
		status := http.StatusOK
		if v.Created {
			status = http.StatusCreated
		}
		return c.JSON(status, v)
	}
}

// validateSpec is the dry run: always 200 with the verdict.
func (s *Server) validateSpec(r registryResource) echo.HandlerFunc {
	return func(c echo.Context) error {
		body, err := rawSpec(c)
		if err != nil {
			return err
		}
		v, err := s.registries.Validate(c.Request().Context(), principal(c), r.kind, body)
		if err != nil {
			return err
		}
		if r.kind == registry.Dataset {
			gps, more := graders.CheckCases(registry.CaseGraders(body))
			v.Problems = append(v.Problems, gps...)
			if more > 0 {
				v.Problems = append(v.Problems, registry.Problem{Message: fmt.Sprintf("and %d more grader problems", more)})
			}
			v.Valid = len(v.Problems) == 0
		}
		return c.JSON(http.StatusOK, v)
	}
}

// checkDatasetGraders refuses a dataset body whose case graders the grader
// checker refuses, listing the spec's own problems first so that one 400
// names every problem. It runs here, beside the registry service, because
// package registry cannot call the checker (package graders imports it)
// and must not: stored versions are read with registry.Parse too, and one
// registered before this check keeps grading leniently (skip scores).
func checkDatasetGraders(body []byte) error {
	gps, more := graders.CheckCases(registry.CaseGraders(body))
	if len(gps) == 0 {
		return nil
	}
	ve := &registry.ValidationError{Kind: registry.Dataset}
	var spec *registry.ValidationError
	if _, err := registry.Parse(registry.Dataset, body, true); errors.As(err, &spec) {
		ve.Problems, ve.Truncated = append(ve.Problems, spec.Problems...), spec.Truncated
	}
	ve.Problems, ve.Truncated = append(ve.Problems, gps...), ve.Truncated+more
	return ve
}

func (s *Server) listEntities(r registryResource) echo.HandlerFunc {
	return func(c echo.Context) error {
		es, err := s.registries.List(c.Request().Context(), principal(c), r.kind)
		if err != nil {
			return err
		}
		return listJSON(c, es)
	}
}

// idVersion reads the :id and :version path parameters.
func idVersion(c echo.Context) (id, version string, err error) {
	if id, err = pathParam(c, "id"); err != nil {
		return "", "", err
	}
	if version, err = pathParam(c, "version"); err != nil {
		return "", "", err
	}
	return id, version, nil
}

// casePage reads ?cases=false, ?from= and ?limit=.
func casePage(c echo.Context) (registries.CasePage, error) {
	var p registries.CasePage
	switch v := c.QueryParam("cases"); v {
	case "", "true":
	case "false":
		p.Omit = true
	default:
		return p, derrors.Invalidf("cases=%q: want true or false", clip(v))
	}
	for _, q := range []struct {
		name string
		dst  *int
		min  int
		max  int
	}{{"from", &p.From, 0, 1 << 30}, {"limit", &p.Limit, 1, registries.MaxCasePage}} {
		v := c.QueryParam(q.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < q.min || n > q.max {
			return p, derrors.Invalidf("%s=%q: want an integer from %d to %d", q.name, clip(v), q.min, q.max)
		}
		*q.dst, p.Paged = n, true
	}
	return p, nil
}

// writeVersion answers a version's spec as the body, its identity in headers.
func writeVersion(c echo.Context, kind registry.Kind, d registries.VersionDoc) error {
	h := c.Response().Header()
	h.Set(headerOwner, d.Owner)
	h.Set(headerVersion, d.Version)
	h.Set(headerDigest, d.Digest)
	if kind == registry.Dataset {
		h.Set(headerCaseCount, strconv.Itoa(d.CaseCount))
		if d.NextFrom >= 0 {
			h.Set(headerNextFrom, strconv.Itoa(d.NextFrom))
		}
	}
	return c.JSONBlob(http.StatusOK, d.Spec)
}

func (s *Server) getVersion(r registryResource) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, version, err := idVersion(c)
		if err != nil {
			return err
		}
		var page registries.CasePage
		if r.kind == registry.Dataset {
			if page, err = casePage(c); err != nil {
				return err
			}
		}
		d, err := s.registries.GetVersion(c.Request().Context(), principal(c), r.kind, id, version, page)
		if err != nil {
			return err
		}
		return writeVersion(c, r.kind, d)
	}
}

func (s *Server) getTemplate(c echo.Context) error {
	return s.getVersion(harnessTemplatesRes)(c)
}

func (s *Server) putTags(r registryResource) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, version, err := idVersion(c)
		if err != nil {
			return err
		}
		var tags []string
		if err := Bind(c, &tags); err != nil {
			return err
		}
		res, err := s.registries.SetTags(c.Request().Context(), principal(c), r.kind, id, version, tags)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, res)
	}
}

func (s *Server) deleteDatasetVersion(c echo.Context) error {
	id, version, err := idVersion(c)
	if err != nil {
		return err
	}
	if err := s.registries.DeleteDatasetVersion(c.Request().Context(), principal(c), id, version); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// diffParams reads :id, ?base= and ?candidate=; an absent side is `latest`.
func diffParams(c echo.Context) (id, base, candidate string, err error) {
	if id, err = pathParam(c, "id"); err != nil {
		return "", "", "", err
	}
	base, candidate = c.QueryParam("base"), c.QueryParam("candidate")
	if base == "" {
		base = registry.LatestVersion
	}
	if candidate == "" {
		candidate = registry.LatestVersion
	}
	return id, base, candidate, nil
}

func (s *Server) diffDatasets(c echo.Context) error {
	id, base, candidate, err := diffParams(c)
	if err != nil {
		return err
	}
	d, err := s.registries.DiffDatasets(c.Request().Context(), principal(c), id, base, candidate)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

func (s *Server) diffHarnesses(c echo.Context) error {
	id, base, candidate, err := diffParams(c)
	if err != nil {
		return err
	}
	d, err := s.registries.DiffHarnesses(c.Request().Context(), principal(c), id, base, candidate)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

func (s *Server) getHarness(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	e, err := s.registries.Entity(c.Request().Context(), principal(c), registry.Harness, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, e)
}

func (s *Server) getInstance(c echo.Context) error {
	id, version, err := idVersion(c)
	if err != nil {
		return err
	}
	v, err := s.registries.Instance(c.Request().Context(), principal(c), id, version)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// moveRequest is the body of POST /<resource>/:id/team.
type moveRequest struct {
	// TeamID is the destination; absent, null or "" means workspace-owned.
	TeamID *string `json:"teamId"`
}

// Validate implements Validator.
func (r *moveRequest) Validate() error {
	if r.TeamID != nil && *r.TeamID != "" {
		return checkTeamID(*r.TeamID)
	}
	return nil
}

func (s *Server) moveEntity(r registryResource) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathParam(c, "id")
		if err != nil {
			return err
		}
		var req moveRequest
		if err := Bind(c, &req); err != nil {
			return err
		}
		to := ""
		if req.TeamID != nil {
			to = *req.TeamID
		}
		e, err := s.registries.Move(c.Request().Context(), principal(c), r.kind, id, to)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, e)
	}
}

func (s *Server) probeRuntime(c echo.Context) error {
	body, err := rawSpec(c)
	if err != nil {
		return err
	}
	res, err := s.registries.Probe(c.Request().Context(), principal(c), body)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}
