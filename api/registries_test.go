package api_test

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/api"
	"svc/auth"
	"svc/internal/domain/registry"
	"svc/internal/platform/config"
	"svc/internal/service/registries"
	"svc/store"
	"svc/store/records"
)

// testSecretKey is SVC_SECRET_KEY in every test env: base64 of 32 bytes.
const testSecretKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// Specs the registry tests register, one per kind; version and extra
// fields are filled by the helpers.
func datasetSpec(id, version string, cases ...string) string {
	if len(cases) == 0 {
		cases = []string{"a", "b"}
	}
	var cs []string
	for _, c := range cases {
		cs = append(cs, fmt.Sprintf(`{"id":%q,"task":"do %s","graders":[{"id":"g","kind":"exit_code"}]}`, c, c))
	}
	return fmt.Sprintf(`{"id":%q,"version":%q,"cases":[%s]}`, id, version, strings.Join(cs, ","))
}

func judgeSpec(id, version string) string {
	return fmt.Sprintf(`{"id":%q,"version":%q,"kind":"code","language":"python","code":"print(1)"}`, id, version)
}

func rubricSpec(id, version string) string {
	return fmt.Sprintf(`{"id":%q,"version":%q,"text":"be right"}`, id, version)
}

func runtimeSpec(id, version string) string {
	return fmt.Sprintf(`{"id":%q,"version":%q,"kind":"local"}`, id, version)
}

func harnessSpec(id, version, image string) string {
	return fmt.Sprintf(`{"id":%q,"version":%q,"kind":"process","command":["run"],"image":%q}`, id, version, image)
}

const templateSpec = `{"id":"tmpl","version":"1.0.0","parameters":[{"path":"image","required":true},{"path":"model"}],
	"harness":{"kind":"process","command":["agent"],"model":"m0"}}`

func instanceSpec(id, version, image string) string {
	return fmt.Sprintf(`{"id":%q,"version":%q,"template":{"id":"tmpl","version":"1.0.0"},"pins":{"image":%q,"model":"m1"}}`, id, version, image)
}

// registeredJSON is a registration's answer, as the service defines it.
type registeredJSON = registries.VersionInfo

type entryJSON struct {
	Kind           string                     `json:"kind"`
	Owner          string                     `json:"owner"`
	ID             string                     `json:"id"`
	TeamID         string                     `json:"teamId,omitempty"`
	CreatedBy      string                     `json:"createdBy,omitempty"`
	CreatedAt      time.Time                  `json:"createdAt"`
	Versions       []string                   `json:"versions"`
	Latest         string                     `json:"latest"`
	VersionTags    map[string][]string        `json:"versionTags"`
	VersionDates   map[string]time.Time       `json:"versionDates"`
	VersionOrigins map[string]json.RawMessage `json:"versionOrigins"`
}

type validationJSON struct {
	Valid            bool               `json:"valid"`
	Kind             string             `json:"kind"`
	ID               string             `json:"id,omitempty"`
	Version          string             `json:"version,omitempty"`
	Digest           string             `json:"digest,omitempty"`
	Problems         []registry.Problem `json:"problems"`
	ExistingVersions []string           `json:"existingVersions"`
	Identical        bool               `json:"identical"`
	Conflict         bool               `json:"conflict"`
	StoredDigest     string             `json:"storedDigest,omitempty"`
	MissingSecrets   []string           `json:"missingSecrets"`
}

// register posts spec to path as key and checks the status.
func (e *testEnv) register(t testing.TB, key, path, spec string, status int, hs ...header) registeredJSON {
	t.Helper()
	res := e.do(t, http.MethodPost, path, spec, append(hs, bearer(key))...)
	want(t, res, status, "POST "+path)
	if status >= 300 {
		return registeredJSON{}
	}
	return decode[registeredJSON](t, res)
}

// list returns GET path as key.
func (e *testEnv) list(t testing.TB, key, path string, hs ...header) []entryJSON {
	t.Helper()
	res := e.do(t, http.MethodGet, path, "", append(hs, bearer(key))...)
	want(t, res, http.StatusOK, "GET "+path)
	return decode[[]entryJSON](t, res)
}

// entryOf finds id owned by owner in a list.
func entryOf(es []entryJSON, owner, id string) (entryJSON, bool) {
	for _, x := range es {
		if x.Owner == owner && x.ID == id {
			return x, true
		}
	}
	return entryJSON{}, false
}

// getSpec returns GET path's body as a generic JSON object and its headers.
func (e *testEnv) getSpec(t testing.TB, key, path string) (map[string]any, http.Header) {
	t.Helper()
	res := e.do(t, http.MethodGet, path, "", bearer(key))
	want(t, res, http.StatusOK, "GET "+path)
	var m map[string]any
	res.JSON(t, &m)
	return m, res.Header
}

// events lists a workspace's events of type typ.
func (e *testEnv) events(t testing.TB, ws, typ string) []store.Event {
	t.Helper()
	evs, err := e.store.ListEvents(t.Context(), store.EventFilter{Workspace: ws, Type: typ})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// seedShared registers spec of kind under the reserved `_shared` owner,
// straight through the store (no route writes there).
func (e *testEnv) seedShared(t testing.TB, kind registry.Kind, spec string) {
	t.Helper()
	s, err := registry.Parse(kind, []byte(spec), true)
	if err != nil {
		t.Fatal(err)
	}
	v, cases, err := records.VersionRecord(registry.SharedOwner, s)
	if err != nil {
		t.Fatal(err)
	}
	v.CreatedBy, v.CreatedAt = "operator", e.clock.Now()
	if _, _, err := e.store.RegisterVersion(t.Context(), v, "", cases); err != nil {
		t.Fatal(err)
	}
}

func init() {
	// Every registry route with a :param. Setup registers what the route
	// reads in A; the snapshot is A's view of the collection (versions,
	// tags, dates, origins, team) and of the version itself.
	type fx struct {
		route  string
		body   string
		setup  func(t *testing.T, e *testEnv, a tenant) map[string]string
		snap   func(t *testing.T, e *testEnv, a tenant, p map[string]string) any
		noop   bool
		status int
	}
	collection := func(path string) func(t *testing.T, e *testEnv, a tenant, p map[string]string) any {
		return func(t *testing.T, e *testEnv, a tenant, _ map[string]string) any { return e.list(t, a.key, path) }
	}
	reg := func(path, spec string, extra ...func(t *testing.T, e *testEnv, a tenant)) func(t *testing.T, e *testEnv, a tenant) map[string]string {
		return func(t *testing.T, e *testEnv, a tenant) map[string]string {
			for _, f := range extra {
				f(t, e, a)
			}
			r := e.register(t, a.key, path, spec, http.StatusCreated)
			return map[string]string{"id": r.ID, "version": r.Version}
		}
	}
	withTemplate := func(t *testing.T, e *testEnv, a tenant) {
		e.register(t, a.key, "/harness-templates", templateSpec, http.StatusCreated)
	}
	withTeam := func(t *testing.T, e *testEnv, a tenant) {
		e.createTeam(t, a.key, `{"id":"dest"}`)
	}
	fixtures := []fx{
		{route: "GET /datasets/:id/versions/:version", setup: reg("/datasets", datasetSpec("ds", "1.0.0")), snap: collection("/datasets")},
		{route: "GET /judges/:id/versions/:version", setup: reg("/judges", judgeSpec("jd", "1.0.0")), snap: collection("/judges")},
		{route: "GET /rubrics/:id/versions/:version", setup: reg("/rubrics", rubricSpec("rb", "1.0.0")), snap: collection("/rubrics")},
		{route: "GET /runtimes/:id/versions/:version", setup: reg("/runtimes", runtimeSpec("rt", "1.0.0")), snap: collection("/runtimes")},
		{route: "PUT /datasets/:id/versions/:version/tags", body: `["x"]`, setup: reg("/datasets", datasetSpec("ds", "1.0.0")), snap: collection("/datasets")},
		{route: "PUT /judges/:id/versions/:version/tags", body: `["x"]`, setup: reg("/judges", judgeSpec("jd", "1.0.0")), snap: collection("/judges")},
		{route: "PUT /rubrics/:id/versions/:version/tags", body: `["x"]`, setup: reg("/rubrics", rubricSpec("rb", "1.0.0")), snap: collection("/rubrics")},
		{route: "PUT /runtimes/:id/versions/:version/tags", body: `["x"]`, setup: reg("/runtimes", runtimeSpec("rt", "1.0.0")), snap: collection("/runtimes")},
		{route: "PUT /harnesses/:id/versions/:version/tags", body: `["x"]`, setup: reg("/harnesses", harnessSpec("h", "1.0.0", "img:1")), snap: collection("/harnesses")},
		{route: "DELETE /datasets/:id/versions/:version", setup: reg("/datasets", datasetSpec("ds", "1.0.0")), snap: collection("/datasets")},
		{route: "GET /datasets/:id/diff", setup: reg("/datasets", datasetSpec("ds", "1.0.0")), snap: collection("/datasets")},
		{route: "GET /harnesses/:id", setup: reg("/harnesses", harnessSpec("h", "1.0.0", "img:1")), snap: collection("/harnesses")},
		{route: "GET /harnesses/:id/diff", setup: reg("/harnesses", harnessSpec("h", "1.0.0", "img:1")), snap: collection("/harnesses")},
		{route: "GET /harnesses/:id/:version/instance", setup: reg("/harnesses", instanceSpec("inst", "1.0.0", "img:1"), withTemplate), snap: collection("/harnesses")},
		{route: "GET /harness-templates/:id/:version", setup: reg("/harness-templates", templateSpec), snap: collection("/harness-templates")},
		{route: "POST /datasets/:id/team", body: `{"teamId":"dest"}`, setup: reg("/datasets", datasetSpec("ds", "1.0.0"), withTeam), snap: collection("/datasets")},
		{route: "POST /judges/:id/team", body: `{"teamId":"dest"}`, setup: reg("/judges", judgeSpec("jd", "1.0.0"), withTeam), snap: collection("/judges")},
		{route: "POST /harnesses/:id/team", body: `{"teamId":"dest"}`, setup: reg("/harnesses", harnessSpec("h", "1.0.0", "img:1"), withTeam), snap: collection("/harnesses")},
		{route: "POST /harness-templates/:id/team", body: `{"teamId":"dest"}`, setup: reg("/harness-templates", templateSpec, withTeam), snap: collection("/harness-templates")},
	}
	for _, f := range fixtures {
		registerCrossTenant(f.route, crossTenantFixture{Setup: f.setup, Body: f.body, Snapshot: f.snap, ForeignNoop: f.noop, OwnStatus: f.status})
	}
	// Secrets: B's PUT stores B's own secret of that name and B's DELETE
	// removes B's (none): both 204 by design, and A's must not change.
	secretSetup := func(t *testing.T, e *testEnv, a tenant) map[string]string {
		want(t, e.do(t, http.MethodPut, "/secrets/tok", `{"value":"a-secret"}`, bearer(a.key)), http.StatusNoContent, "PUT /secrets/tok")
		return map[string]string{"name": "tok"}
	}
	secretSnap := func(t *testing.T, e *testEnv, a tenant, _ map[string]string) any {
		res := e.do(t, http.MethodGet, "/secrets", "", bearer(a.key))
		want(t, res, http.StatusOK, "GET /secrets")
		var ss []map[string]any
		res.JSON(t, &ss)
		return ss
	}
	registerCrossTenant("PUT /secrets/:name", crossTenantFixture{Setup: secretSetup, Snapshot: secretSnap, Body: `{"value":"b-secret"}`, ForeignNoop: true})
	registerCrossTenant("DELETE /secrets/:name", crossTenantFixture{Setup: secretSetup, Snapshot: secretSnap, ForeignNoop: true})
}

func TestRegisterCreateIdempotentConflict(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "reg")
	tests := []struct {
		path string
		kind registry.Kind
		spec string
		diff string // same id and version, other content
	}{
		{"/datasets", registry.Dataset, datasetSpec("qa", "1.0.0"), datasetSpec("qa", "1.0.0", "z")},
		{"/judges", registry.Judge, judgeSpec("exact", "1.0.0"), `{"id":"exact","version":"1.0.0","kind":"code","language":"node","code":"x"}`},
		{"/rubrics", registry.Rubric, rubricSpec("helpful", "1"), `{"id":"helpful","version":"1","text":"other"}`},
		{"/runtimes", registry.Runtime, runtimeSpec("local", "1"), `{"id":"local","version":"1","kind":"local","maxConcurrent":2}`},
		{"/harnesses", registry.Harness, harnessSpec("cli", "0.1.0", "img:1"), harnessSpec("cli", "0.1.0", "img:2")},
		{"/harness-templates", registry.HarnessTemplate, templateSpec, strings.Replace(templateSpec, "m0", "m9", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			first := e.register(t, a.key, tt.path, tt.spec, http.StatusCreated)
			if !first.Created || first.Owner != a.ws || first.Kind != string(tt.kind) || !strings.HasPrefix(first.Digest, "sha256:") {
				t.Errorf("first registration: %+v", first)
			}
			again := e.register(t, a.key, tt.path, tt.spec, http.StatusOK)
			if again.Created || again.Digest != first.Digest {
				t.Errorf("identical registration: created %v digest %s, want false %s", again.Created, again.Digest, first.Digest)
			}
			res := e.do(t, http.MethodPost, tt.path, tt.diff, bearer(a.key))
			want(t, res, http.StatusConflict, "different content")
			info := res.ErrorInfo(t)
			if info.Details["storedDigest"] != first.Digest || info.Details["digest"] == first.Digest ||
				!strings.Contains(info.Message, first.ID+"@"+first.Version) {
				t.Errorf("409 body %s: want both digests and id@version", res.Body)
			}
			if n := len(e.events(t, a.ws, string(tt.kind)+".registered")); n != 1 {
				t.Errorf("%d %s.registered events, want 1 (only the creation)", n, tt.kind)
			}
		})
	}
}

func TestRegisterInvalid(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "inv")
	tests := []struct{ path, body string }{
		{"/datasets", `{"id":"x","version":"1","cases":[{"id":"a"},{"id":"a"}]}`},
		{"/judges", `{"id":"j","version":"1","kind":"model","model":"m"}`}, // legacy kinds are not offered
		{"/runtimes", `{"id":"r","version":"latest","kind":"local"}`},
		{"/rubrics", `{"id":"r","version":"1","text":"t","extra":1}`},
		{"/harnesses", `[1]`},
	}
	for _, tt := range tests {
		res := e.do(t, http.MethodPost, tt.path, tt.body, bearer(a.key))
		want(t, res, http.StatusBadRequest, tt.path+" "+tt.body)
		if _, ok := res.ErrorInfo(t).Details["problems"]; !ok {
			t.Errorf("%s %s: 400 without details.problems: %s", tt.path, tt.body, res.Body)
		}
		if tt.path == "/harnesses" {
			continue // harnesses have no validate route
		}
		v := decode[validationJSON](t, e.do(t, http.MethodPost, tt.path+"/validate", tt.body, bearer(a.key)))
		if v.Valid || len(v.Problems) == 0 {
			t.Errorf("validate %s: %+v, want invalid with problems", tt.body, v)
		}
	}
}

func TestValidate(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "val")
	e.register(t, a.key, "/datasets", datasetSpec("qa", "1.0.0"), http.StatusCreated)
	e.register(t, a.key, "/datasets", datasetSpec("qa", "1.1.0"), http.StatusCreated)
	tests := []struct {
		name string
		spec string
		want validationJSON
	}{
		{"new version", datasetSpec("qa", "2.0.0"), validationJSON{Valid: true, ExistingVersions: []string{"1.0.0", "1.1.0"}}},
		{"identical", datasetSpec("qa", "1.0.0"), validationJSON{Valid: true, ExistingVersions: []string{"1.0.0", "1.1.0"}, Identical: true}},
		{"conflict", datasetSpec("qa", "1.0.0", "q"), validationJSON{Valid: true, ExistingVersions: []string{"1.0.0", "1.1.0"}, Conflict: true}},
		{"new id", datasetSpec("other", "1"), validationJSON{Valid: true, ExistingVersions: []string{}}},
	}
	for _, tt := range tests {
		res := e.do(t, http.MethodPost, "/datasets/validate", tt.spec, bearer(a.key))
		want(t, res, http.StatusOK, tt.name)
		got := decode[validationJSON](t, res)
		if got.Conflict != (got.StoredDigest != "") {
			t.Errorf("%s: conflict %v with storedDigest %q", tt.name, got.Conflict, got.StoredDigest)
		}
		tt.want.Kind, tt.want.Problems, tt.want.MissingSecrets = "dataset", []registry.Problem{}, []string{}
		if diff := cmp.Diff(tt.want, got, cmp.FilterPath(func(p cmp.Path) bool {
			n := p.Last().String()
			return n == ".ID" || n == ".Version" || n == ".Digest" || n == ".StoredDigest"
		}, cmp.Ignore())); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	// Nothing was written.
	if got := e.list(t, a.key, "/datasets"); len(got) != 1 || len(got[0].Versions) != 2 {
		t.Errorf("after validating: %+v, want qa with two versions", got)
	}
}

func TestRuntimeMissingSecrets(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "ms")
	spec := `{"id":"gke","version":"1","kind":"k8s","image":"img","server":"https://k.example:6443","authSecret":"gke-token","kubeconfigSecret":"gke-kc"}`
	v := decode[validationJSON](t, e.do(t, http.MethodPost, "/runtimes/validate", spec, bearer(a.key)))
	if !v.Valid || !cmp.Equal(v.MissingSecrets, []string{"gke-kc", "gke-token"}) {
		t.Errorf("before storing: %+v", v)
	}
	want(t, e.do(t, http.MethodPut, "/secrets/gke-token", `{"value":"t0ken"}`, bearer(a.key)), http.StatusNoContent, "PUT secret")
	v = decode[validationJSON](t, e.do(t, http.MethodPost, "/runtimes/validate", spec, bearer(a.key)))
	if !cmp.Equal(v.MissingSecrets, []string{"gke-kc"}) {
		t.Errorf("after storing gke-token: missingSecrets %v, want [gke-kc]", v.MissingSecrets)
	}
	// Missing secrets do not block registration.
	e.register(t, a.key, "/runtimes", spec, http.StatusCreated)
}

func TestLatest(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "latest")
	for _, v := range []string{"1.9.0", "1.10.0", "1.2.0"} {
		e.register(t, a.key, "/judges", judgeSpec("j", v), http.StatusCreated)
	}
	// Non-semver: the last registered wins, whatever it looks like.
	for _, v := range []string{"2024.05.01", "2024.04.01"} {
		e.register(t, a.key, "/runtimes", runtimeSpec("r", v), http.StatusCreated)
	}
	// `_shared`: read by every workspace, after the workspace's own.
	e.seedShared(t, registry.Rubric, rubricSpec("shared-only", "1.0.0"))
	e.seedShared(t, registry.Judge, judgeSpec("j", "9.0.0"))
	tests := []struct {
		path, wantVersion, wantOwner string
	}{
		{"/judges/j/versions/latest", "1.10.0", a.ws},
		{"/judges/j/versions/1.9.0", "1.9.0", a.ws},
		{"/judges/j/versions/9.0.0", "9.0.0", registry.SharedOwner}, // not in the workspace: fallback
		{"/runtimes/r/versions/latest", "2024.04.01", a.ws},
		{"/rubrics/shared-only/versions/latest", "1.0.0", registry.SharedOwner},
	}
	for _, tt := range tests {
		spec, h := e.getSpec(t, a.key, tt.path)
		if spec["version"] != tt.wantVersion || h.Get("X-Svc-Version") != tt.wantVersion || h.Get("X-Svc-Owner") != tt.wantOwner {
			t.Errorf("GET %s: version %v (header %s) owner %s, want %s from %s", tt.path, spec["version"], h.Get("X-Svc-Version"), h.Get("X-Svc-Owner"), tt.wantVersion, tt.wantOwner)
		}
	}
	for _, path := range []string{"/judges/j/versions/3.0.0", "/judges/nope/versions/latest", "/rubrics/shared-only/versions/2.0.0"} {
		want(t, e.do(t, http.MethodGet, path, "", bearer(a.key)), http.StatusNotFound, path)
	}
	// The list shows own and shared entries with their metadata.
	js := e.list(t, a.key, "/judges")
	own, ok1 := entryOf(js, a.ws, "j")
	shared, ok2 := entryOf(js, registry.SharedOwner, "j")
	if !ok1 || !ok2 || own.Latest != "1.10.0" || shared.Latest != "9.0.0" || len(own.VersionDates) != 3 || own.CreatedBy == "" {
		t.Errorf("GET /judges: %+v", js)
	}
}

func TestTagsAndOrigins(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "tags")
	origin := header{"x-svc-origin", `{"via":"ci","note":"nightly"}`}
	r := e.register(t, a.key, "/datasets", datasetSpec("qa", "1.0.0"), http.StatusCreated, origin)
	if string(r.Origin) != `{"note":"nightly","via":"ci"}` {
		t.Errorf("origin %s", r.Origin)
	}
	// The first origin wins; a later one is no conflict.
	r = e.register(t, a.key, "/datasets", datasetSpec("qa", "1.0.0"), http.StatusOK, header{"x-svc-origin", `{"via":"web"}`})
	if string(r.Origin) != `{"note":"nightly","via":"ci"}` {
		t.Errorf("origin after a second answer: %s", r.Origin)
	}
	want(t, e.do(t, http.MethodPost, "/datasets", datasetSpec("qa", "1.1.0"), bearer(a.key), header{"x-svc-origin", `{"via":"fax"}`}), http.StatusBadRequest, "bad origin")

	res := e.do(t, http.MethodPut, "/datasets/qa/versions/1.0.0/tags", `[" prod ","", "prod", "gold"]`, bearer(a.key))
	want(t, res, http.StatusOK, "PUT tags")
	if got := decode[struct {
		Kind, ID, Version string
		Tags              []string
	}](t, res); !cmp.Equal(got.Tags, []string{"prod", "gold"}) {
		t.Errorf("tags %v, want [prod gold]", got.Tags)
	}
	got, _ := entryOf(e.list(t, a.key, "/datasets"), a.ws, "qa")
	if !cmp.Equal(got.VersionTags["1.0.0"], []string{"prod", "gold"}) || string(got.VersionOrigins["1.0.0"]) != `{"note":"nightly","via":"ci"}` {
		t.Errorf("list metadata: tags %v origins %v", got.VersionTags, got.VersionOrigins)
	}
	want(t, e.do(t, http.MethodPut, "/datasets/qa/versions/1.0.0/tags", `[]`, bearer(a.key)), http.StatusOK, "clearing tags")
	got, _ = entryOf(e.list(t, a.key, "/datasets"), a.ws, "qa")
	if tags := got.VersionTags["1.0.0"]; tags == nil || len(tags) != 0 {
		t.Errorf("after clearing: %v, want []", tags)
	}
	var distinct []string
	for i := range 21 {
		distinct = append(distinct, fmt.Sprintf("%q", fmt.Sprint("t", i)))
	}
	many := "[" + strings.Join(distinct, ",") + "]"
	e.seedShared(t, registry.Judge, judgeSpec("shared-j", "1.0.0"))
	e.register(t, a.key, "/datasets", datasetSpec("gone", "1.0.0"), http.StatusCreated)
	want(t, e.do(t, http.MethodDelete, "/datasets/gone/versions/1.0.0", "", bearer(a.key)), http.StatusNoContent, "delete")
	for _, tt := range []struct {
		path, body string
		status     int
	}{
		{"/datasets/qa/versions/1.0.0/tags", `["` + strings.Repeat("x", 61) + `"]`, http.StatusBadRequest},
		{"/datasets/qa/versions/1.0.0/tags", many, http.StatusBadRequest},
		{"/datasets/qa/versions/9.9.9/tags", `["a"]`, http.StatusNotFound},
		{"/datasets/qa/versions/latest/tags", `["a"]`, http.StatusBadRequest},
		{"/judges/shared-j/versions/1.0.0/tags", `["a"]`, http.StatusNotFound}, // _shared is not ours
		{"/datasets/gone/versions/1.0.0/tags", `["a"]`, http.StatusNotFound},   // tombstoned
	} {
		want(t, e.do(t, http.MethodPut, tt.path, tt.body, bearer(a.key)), tt.status, tt.path)
	}
}

func TestDeleteDatasetVersion(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "del")
	creator := e.join(t, a, "creator", auth.RoleMember)
	other := e.join(t, a, "other", auth.RoleMember)
	ws := selectWorkspace(a.ws)
	e.register(t, creator, "/datasets", datasetSpec("qa", "1.0.0"), http.StatusCreated, ws)
	e.register(t, creator, "/datasets", datasetSpec("qa", "2.0.0", "a", "b", "c"), http.StatusCreated, ws)
	e.register(t, creator, "/datasets", datasetSpec("qa", "3.0.0"), http.StatusCreated, ws)

	want(t, e.do(t, http.MethodDelete, "/datasets/qa/versions/2.0.0", "", bearer(other), ws), http.StatusForbidden, "another member")
	want(t, e.do(t, http.MethodDelete, "/datasets/qa/versions/latest", "", bearer(creator), ws), http.StatusNotFound, "latest")
	want(t, e.do(t, http.MethodDelete, "/datasets/qa/versions/2.0.0", "", bearer(creator), ws), http.StatusNoContent, "the creator")
	want(t, e.do(t, http.MethodDelete, "/datasets/qa/versions/2.0.0", "", bearer(creator), ws), http.StatusNotFound, "again")
	want(t, e.do(t, http.MethodDelete, "/datasets/qa/versions/3.0.0", "", bearer(a.key)), http.StatusNoContent, "an admin")

	// Tombstones are out of reads and of `latest`.
	want(t, e.do(t, http.MethodGet, "/datasets/qa/versions/2.0.0", "", bearer(a.key)), http.StatusNotFound, "reading a tombstone")
	if _, h := e.getSpec(t, a.key, "/datasets/qa/versions/latest"); h.Get("X-Svc-Version") != "1.0.0" {
		t.Errorf("latest after deletes = %s, want 1.0.0", h.Get("X-Svc-Version"))
	}
	// Identical content revives; other content is still a conflict.
	want(t, e.do(t, http.MethodPost, "/datasets", datasetSpec("qa", "3.0.0", "x"), bearer(a.key)), http.StatusConflict, "other content on a tombstone")
	r := e.register(t, creator, "/datasets", datasetSpec("qa", "2.0.0", "a", "b", "c"), http.StatusOK, ws)
	if r.Created || r.CaseCount != 3 {
		t.Errorf("revival: %+v", r)
	}
	if got, _ := entryOf(e.list(t, a.key, "/datasets"), a.ws, "qa"); !cmp.Equal(got.Versions, []string{"1.0.0", "2.0.0"}) || got.Latest != "2.0.0" {
		t.Errorf("after revival: versions %v latest %s", got.Versions, got.Latest)
	}
}

func TestDatasetPaging(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "big")
	const n = 10000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("case-%05d", i)
	}
	r := e.register(t, a.key, "/datasets", datasetSpec("big", "1.0.0", ids...), http.StatusCreated)
	if r.CaseCount != n {
		t.Fatalf("caseCount %d, want %d", r.CaseCount, n)
	}
	head, h := e.getSpec(t, a.key, "/datasets/big/versions/latest?cases=false")
	if _, ok := head["cases"]; ok || h.Get("X-Svc-Case-Count") != "10000" {
		t.Errorf("cases=false: cases present %v, count %s", ok, h.Get("X-Svc-Case-Count"))
	}
	var got []string
	next, pages := "0", 0
	for next != "" {
		spec, h := e.getSpec(t, a.key, "/datasets/big/versions/1.0.0?limit=4000&from="+next)
		for _, c := range spec["cases"].([]any) {
			got = append(got, c.(map[string]any)["id"].(string))
		}
		if h.Get("X-Svc-Digest") != r.Digest {
			t.Errorf("page digest %s, want the version's %s", h.Get("X-Svc-Digest"), r.Digest)
		}
		next = h.Get("X-Svc-Next-From")
		if pages++; pages > 3 {
			t.Fatal("more pages than 10000/4000 needs")
		}
	}
	if !cmp.Equal(got, ids) || pages != 3 {
		t.Errorf("paged read: %d cases in %d pages, want %d in 3, in order", len(got), pages, n)
	}
	whole, _ := e.getSpec(t, a.key, "/datasets/big/versions/1.0.0")
	if len(whole["cases"].([]any)) != n {
		t.Errorf("whole read: %d cases", len(whole["cases"].([]any)))
	}
	for _, q := range []string{"?limit=0", "?limit=99999", "?from=-1", "?cases=maybe"} {
		want(t, e.do(t, http.MethodGet, "/datasets/big/versions/1.0.0"+q, "", bearer(a.key)), http.StatusBadRequest, q)
	}
}

func TestDiffs(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "diff")
	e.register(t, a.key, "/datasets", datasetSpec("qa", "1.0.0", "a", "b"), http.StatusCreated)
	e.register(t, a.key, "/datasets", `{"id":"qa","version":"1.1.0","cases":[{"id":"a","task":"do a","graders":[{"id":"g","kind":"exit_code"}]},{"id":"b","task":"changed","graders":[{"id":"g","kind":"exit_code"}]},{"id":"c","task":"new"}]}`, http.StatusCreated)
	res := e.do(t, http.MethodGet, "/datasets/qa/diff?base=1.0.0&candidate=latest", "", bearer(a.key))
	want(t, res, http.StatusOK, "dataset diff")
	var dd registry.DatasetDiff
	res.JSON(t, &dd)
	if !cmp.Equal(dd.Added, []string{"c"}) || len(dd.Removed) != 0 || len(dd.Changed) != 1 || dd.Changed[0].ID != "b" || dd.Unchanged != 1 || dd.Candidate.Version != "1.1.0" {
		t.Errorf("dataset diff: %+v", dd)
	}
	want(t, e.do(t, http.MethodGet, "/datasets/qa/diff?base=0.1.0", "", bearer(a.key)), http.StatusNotFound, "unknown base")

	e.register(t, a.key, "/harness-templates", templateSpec, http.StatusCreated)
	e.register(t, a.key, "/harnesses", instanceSpec("h", "1.0.0", "img:1"), http.StatusCreated)
	e.register(t, a.key, "/harnesses", instanceSpec("h", "1.1.0", "img:2"), http.StatusCreated)
	res = e.do(t, http.MethodGet, "/harnesses/h/diff?base=1.0.0&candidate=1.1.0", "", bearer(a.key))
	want(t, res, http.StatusOK, "harness diff")
	var hd struct {
		Base, Candidate struct{ ID, Version, Owner, Digest string }
		Changes         []registry.FieldChange
	}
	res.JSON(t, &hd)
	var paths []string
	for _, c := range hd.Changes {
		paths = append(paths, c.Path)
	}
	// Compared as resolved harnesses: the pinned image, not the pins map.
	if !cmp.Equal(paths, []string{"image", "version"}) {
		t.Errorf("harness diff paths %v, want [image version]; %+v", paths, hd)
	}
}

func TestHarnessInstances(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "inst")
	want(t, e.do(t, http.MethodPost, "/harnesses", instanceSpec("h", "1.0.0", "img:1"), bearer(a.key)), http.StatusBadRequest, "template not registered")
	e.register(t, a.key, "/harness-templates", templateSpec, http.StatusCreated)
	bad := `{"id":"h","version":"1.0.0","template":{"id":"tmpl","version":"1.0.0"},"pins":{"nope":1}}`
	want(t, e.do(t, http.MethodPost, "/harnesses", bad, bearer(a.key)), http.StatusBadRequest, "unknown pin")
	want(t, e.do(t, http.MethodPost, "/harnesses", `{"id":"h","version":"1.0.0","template":{"id":"tmpl","version":"1.0.0"},"pins":{"model":"x"}}`, bearer(a.key)), http.StatusBadRequest, "required pin missing")
	e.register(t, a.key, "/harnesses", instanceSpec("h", "1.0.0", "img:1"), http.StatusCreated)
	e.register(t, a.key, "/harnesses", harnessSpec("plain", "1.0.0", "img:1"), http.StatusCreated)

	res := e.do(t, http.MethodGet, "/harnesses/h/latest/instance", "", bearer(a.key))
	want(t, res, http.StatusOK, "instance")
	var inst struct {
		ID, Version string
		Template    registry.Ref
		Pins        map[string]any
	}
	res.JSON(t, &inst)
	if inst.Template != (registry.Ref{ID: "tmpl", Version: "1.0.0"}) || inst.Pins["image"] != "img:1" || inst.Version != "1.0.0" {
		t.Errorf("instance %+v", inst)
	}
	want(t, e.do(t, http.MethodGet, "/harnesses/plain/1.0.0/instance", "", bearer(a.key)), http.StatusNotFound, "self-contained")
	tmpl, _ := e.getSpec(t, a.key, "/harness-templates/tmpl/latest")
	if tmpl["id"] != "tmpl" || tmpl["parameters"] == nil {
		t.Errorf("template %v", tmpl)
	}
	want(t, e.do(t, http.MethodPut, "/harnesses/h/versions/1.0.0/tags", `["stable"]`, bearer(a.key)), http.StatusOK, "tag")
	res = e.do(t, http.MethodGet, "/harnesses/h", "", bearer(a.key))
	want(t, res, http.StatusOK, "GET /harnesses/h")
	if h := decode[entryJSON](t, res); !cmp.Equal(h.VersionTags, map[string][]string{"1.0.0": {"stable"}}) {
		t.Errorf("versionTags %v", h.VersionTags)
	}
	want(t, e.do(t, http.MethodGet, "/harnesses/nope", "", bearer(a.key)), http.StatusNotFound, "unknown harness")
}

func TestTeamMoves(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "move")
	e.createTeam(t, a.key, `{"id":"alpha","private":true}`)
	e.createTeam(t, a.key, `{"id":"beta"}`)
	inAlpha := e.join(t, a, "in-alpha", auth.RoleMember)
	outsider := e.join(t, a, "outsider", auth.RoleMember)
	inBeta := e.join(t, a, "in-beta", auth.RoleMember)
	for _, m := range []struct{ team, subject string }{{"alpha", "in-alpha"}, {"beta", "in-beta"}} {
		want(t, e.do(t, http.MethodPut, "/teams/"+m.team+"/members/"+m.subject, "", bearer(a.key)), http.StatusNoContent, "team member")
	}
	ws := selectWorkspace(a.ws)
	e.register(t, a.key, "/datasets", datasetSpec("qa", "1.0.0"), http.StatusCreated)
	e.register(t, a.key, "/datasets", datasetSpec("qa", "1.1.0"), http.StatusCreated)
	want(t, e.do(t, http.MethodDelete, "/datasets/qa/versions/1.1.0", "", bearer(a.key)), http.StatusNoContent, "tombstone")
	e.register(t, a.key, "/judges", judgeSpec("j", "1"), http.StatusCreated)
	e.seedShared(t, registry.Dataset, datasetSpec("shared-ds", "1.0.0"))

	move := func(key, path, body string, status int, hs ...header) {
		t.Helper()
		want(t, e.do(t, http.MethodPost, path, body, append(hs, bearer(key))...), status, "POST "+path+" "+body)
	}
	move(inAlpha, "/datasets/qa/team", `{"teamId":"alpha"}`, http.StatusOK, ws)
	move(inAlpha, "/datasets/qa/team", `{"teamId":"alpha"}`, http.StatusConflict, ws) // no-op
	if evs := e.events(t, a.ws, "dataset.moved"); len(evs) != 1 || evs[0].Actor != "in-alpha" {
		t.Errorf("dataset.moved events: %+v", evs)
	}
	// A private team's asset is invisible to outsiders: 404 on read and write.
	want(t, e.do(t, http.MethodGet, "/datasets/qa/versions/1.0.0", "", bearer(outsider), ws), http.StatusNotFound, "outsider reads")
	if _, ok := entryOf(e.list(t, outsider, "/datasets", ws), a.ws, "qa"); ok {
		t.Error("outsider lists the private team's dataset")
	}
	want(t, e.do(t, http.MethodPut, "/datasets/qa/versions/1.0.0/tags", `["x"]`, bearer(outsider), ws), http.StatusNotFound, "outsider tags")
	move(outsider, "/datasets/qa/team", `{"teamId":null}`, http.StatusNotFound, ws)
	// Members and admins see it, tombstones moved along.
	want(t, e.do(t, http.MethodGet, "/datasets/qa/versions/1.0.0", "", bearer(inAlpha), ws), http.StatusOK, "team member reads")
	if got, _ := entryOf(e.list(t, a.key, "/datasets"), a.ws, "qa"); got.TeamID != "alpha" {
		t.Errorf("teamId %q, want alpha", got.TeamID)
	}
	// Moving to a team the caller is not in is 403; an admin may.
	move(inAlpha, "/datasets/qa/team", `{"teamId":"beta"}`, http.StatusForbidden, ws)
	move(a.key, "/datasets/qa/team", `{"teamId":"beta"}`, http.StatusOK)
	// beta is not private: visible to the outsider, but not writable.
	want(t, e.do(t, http.MethodGet, "/datasets/qa/versions/1.0.0", "", bearer(outsider), ws), http.StatusOK, "outsider reads a public team's")
	want(t, e.do(t, http.MethodPut, "/datasets/qa/versions/1.0.0/tags", `["x"]`, bearer(outsider), ws), http.StatusForbidden, "outsider writes beta's")
	want(t, e.do(t, http.MethodPost, "/datasets", datasetSpec("qa", "2.0.0"), bearer(outsider), ws), http.StatusForbidden, "outsider registers a version of beta's")
	move(outsider, "/datasets/qa/team", `{}`, http.StatusForbidden, ws)
	move(inBeta, "/datasets/qa/team", `{"teamId":""}`, http.StatusOK, ws)
	// The tombstone moved too: reviving it keeps the entity's team (none).
	e.register(t, a.key, "/datasets", datasetSpec("qa", "1.1.0"), http.StatusOK)

	move(a.key, "/datasets/shared-ds/team", `{"teamId":"beta"}`, http.StatusNotFound)
	move(a.key, "/judges/j/team", `{"teamId":"nope"}`, http.StatusNotFound)
	move(a.key, "/judges/j/team", `{"teamId":"Bad Id"}`, http.StatusBadRequest)
	move(a.key, "/judges/j/team", `{"teamId":"beta"}`, http.StatusOK)
	if n := len(e.events(t, a.ws, "judge.moved")); n != 1 {
		t.Errorf("%d judge.moved events, want 1", n)
	}
	// Moves mint no version.
	if got, _ := entryOf(e.list(t, a.key, "/judges"), a.ws, "j"); !cmp.Equal(got.Versions, []string{"1"}) {
		t.Errorf("judge versions after a move: %v", got.Versions)
	}
}

func TestSecrets(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "sec")
	const value = "super-secret-value-123"
	want(t, e.do(t, http.MethodPut, "/secrets/nomad-token", fmt.Sprintf(`{"value":%q}`, value), bearer(a.key)), http.StatusNoContent, "PUT")
	want(t, e.do(t, http.MethodPut, "/secrets/nomad-token", `{"value":"v2-`+value+`"}`, bearer(a.key)), http.StatusNoContent, "replace")
	res := e.do(t, http.MethodGet, "/secrets", "", bearer(a.key))
	want(t, res, http.StatusOK, "GET /secrets")
	if strings.Contains(string(res.Body), value) {
		t.Fatalf("GET /secrets leaks the value: %s", res.Body)
	}
	var ss []struct {
		Name         string    `json:"name"`
		AllowedHosts []string  `json:"allowedHosts"`
		CreatedBy    string    `json:"createdBy,omitempty"`
		UpdatedAt    time.Time `json:"updatedAt"`
	}
	res.JSON(t, &ss)
	if len(ss) != 1 || ss[0].Name != "nomad-token" {
		t.Errorf("secrets %+v", ss)
	}
	for _, tt := range []struct{ name, body string }{{"bad%20name", `{"value":"x"}`}, {"ok", `{"value":""}`}, {"ok", `{}`}} {
		want(t, e.do(t, http.MethodPut, "/secrets/"+tt.name, tt.body, bearer(a.key)), http.StatusBadRequest, tt.name+" "+tt.body)
	}
	want(t, e.do(t, http.MethodDelete, "/secrets/nomad-token", "", bearer(a.key)), http.StatusNoContent, "DELETE")
	want(t, e.do(t, http.MethodDelete, "/secrets/nomad-token", "", bearer(a.key)), http.StatusNoContent, "DELETE again")

	// Without SVC_SECRET_KEY values cannot be stored, and the answer says why.
	off := newEnv(t, withConfig(func(c *config.Config) { c.SecretKey = "" }))
	res = off.do(t, http.MethodPut, "/secrets/x", `{"value":"v"}`)
	if res.Status != http.StatusServiceUnavailable || !strings.Contains(res.ErrorInfo(t).Message, "SVC_SECRET_KEY") {
		t.Errorf("without a key: %d %s", res.Status, res.Body)
	}
}

// fakeNomad answers the two probe endpoints and records the token it saw.
type fakeNomad struct {
	token string
	seen  chan string
}

func (f *fakeNomad) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	select {
	case f.seen <- r.Header.Get("X-Nomad-Token"):
	default:
	}
	switch r.URL.Path {
	case "/v1/status/leader":
		fmt.Fprint(w, `"127.0.0.1:4647"`)
	case "/v1/agent/self":
		if r.Header.Get("X-Nomad-Token") != f.token {
			http.Error(w, "Permission denied", http.StatusForbidden)
			return
		}
		fmt.Fprint(w, `{"config":{"Version":{"Version":"1.9.3","VersionPrerelease":"","VersionMetadata":""}},"member":{"Name":"s1"}}`)
	default:
		http.NotFound(w, r)
	}
}

func TestProbe(t *testing.T) {
	// The fakes listen on loopback, which probes may reach only when allowed.
	e := newEnv(t, withConfig(func(c *config.Config) { c.ProbeAllow = "127.0.0.1" }))
	a := e.tenant(t, "probe")
	const token = "nomad-acl-token-abcdef"
	fake := &fakeNomad{token: token, seen: make(chan string, 10)}
	nomadSrv := httptestServer(t, fake, false)
	k8sToken := "k8s-bearer-token-xyz"
	k8s := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+k8sToken {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"major":"1","minor":"36","gitVersion":"v1.36.4","platform":"linux/amd64"}`)
	}), true)
	e.putSecret(t, a.key, "nomad-token", token, []string{"127.0.0.1"})
	e.putSecret(t, a.key, "kc", k8s.kubeconfig(k8sToken), []string{"127.0.0.1"})

	nomadSpec := func(secret string) string {
		return fmt.Sprintf(`{"id":"n","version":"1","kind":"nomad","addr":%q,"image":"img","authSecret":%q}`, nomadSrv.URL, secret)
	}
	tests := []struct {
		name, spec    string
		wantReachable bool
		wantDetail    string
		secrets       []string // must not appear in the answer
	}{
		{"local", runtimeSpec("l", "1"), true, "in-process", nil},
		{"nomad with the stored token", nomadSpec("nomad-token"), true, "nomad 1.9.3", []string{token}},
		{"nomad with a missing secret", nomadSpec("absent"), false, `"absent"`, nil},
		{"k8s with a kubeconfig secret", `{"id":"k","version":"1","kind":"k8s","image":"img","kubeconfigSecret":"kc"}`, true, "v1.36.4", []string{k8sToken, k8s.caB64}},
		// Issue 30, finding 4: with no credentials of its own, a runtime
		// would act as the control plane (whose kubeconfig reaches the
		// cluster, below) in a namespace the member picks. Refused unless
		// the operator offers namespaces (SVC_K8S_OPERATOR_NAMESPACES).
		{"k8s with no credentials of its own", `{"id":"k2","version":"1","kind":"k8s","image":"img","namespace":"kube-system"}`, false, "SVC_K8S_OPERATOR_NAMESPACES", []string{k8sToken}},
	}
	// The control plane's own kubeconfig reaches the fake cluster.
	operatorKC := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(operatorKC, []byte(k8s.kubeconfig(k8sToken)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", operatorKC)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, res := e.probe(t, a.key, tt.spec, "probe")
			if got.Reachable != tt.wantReachable || !strings.Contains(got.Detail, tt.wantDetail) {
				t.Errorf("probe: %+v, want reachable %v with %q in detail", got, tt.wantReachable, tt.wantDetail)
			}
			for _, s := range tt.secrets {
				if strings.Contains(string(res.Body), s) {
					t.Errorf("the probe's answer contains a credential: %s", res.Body)
				}
			}
		})
	}
	// The stored token reached the cluster.
	sawToken := false
	for len(fake.seen) > 0 {
		if <-fake.seen == token {
			sawToken = true
		}
	}
	if !sawToken {
		t.Error("the fake Nomad never saw the stored token")
	}
	want(t, e.do(t, http.MethodPost, "/runtimes/probe", `{"id":"x","version":"1","kind":"mars"}`, bearer(a.key)), http.StatusBadRequest, "bad spec")
}

// loopback is a test server on a port from the OS; caB64 is the base64 PEM
// of its certificate when it serves TLS, as a kubeconfig carries it.
type loopback struct{ URL, caB64 string }

// kubeconfig is a kubeconfig for the TLS server l whose one user sends
// token.
func (l loopback) kubeconfig(token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: u
  user:
    token: %s
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`, l.URL, l.caB64, token)
}

func httptestServer(t *testing.T, h http.Handler, tls bool) loopback {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	if !tls {
		srv.Start()
		t.Cleanup(srv.Close)
		return loopback{URL: srv.URL}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return loopback{URL: srv.URL, caB64: base64.StdEncoding.EncodeToString(ca)}
}

func TestBadSecretKeyStopsTheServer(t *testing.T) {
	cfg := config.Defaults()
	cfg.SecretKey = "too-short"
	_, err := api.NewServer(api.Options{Store: openStore(t), Config: cfg})
	if err == nil || !strings.Contains(err.Error(), "SVC_SECRET_KEY") || strings.Contains(err.Error(), "too-short") {
		t.Errorf("NewServer with a bad key: %v, want an error naming SVC_SECRET_KEY without the key", err)
	}
}

// TestRegistryErrorsSpeakToClients: refusals name what the client asked
// for, never the store's internals (method names, arguments).
func TestRegistryErrorsSpeakToClients(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "msg")
	e.register(t, a.key, "/datasets", datasetSpec("qa", "1.0.0"), http.StatusCreated)
	e.register(t, a.key, "/harnesses", harnessSpec("h", "1.0.0", "i"), http.StatusCreated)
	tests := []struct {
		method, path, body string
		status             int
		mention            string
	}{
		{http.MethodGet, "/harnesses/nope/latest/instance", "", http.StatusNotFound, "nope@latest"},
		{http.MethodGet, "/harnesses/h/1.0.0/instance", "", http.StatusNotFound, "self-contained"},
		{http.MethodGet, "/datasets/qa/versions/2.0.0", "", http.StatusNotFound, "qa@2.0.0"},
		{http.MethodPut, "/datasets/qa/versions/2.0.0/tags", `[]`, http.StatusNotFound, "qa@2.0.0"},
		{http.MethodDelete, "/datasets/nope/versions/1.0.0", "", http.StatusNotFound, `"nope"`},
		{http.MethodPost, "/datasets/qa/team", `{"teamId":"ghost"}`, http.StatusNotFound, `"ghost"`},
		{http.MethodGet, "/harnesses/nope", "", http.StatusNotFound, "/harnesses"},
	}
	for _, tt := range tests {
		res := e.do(t, tt.method, tt.path, tt.body, bearer(a.key))
		want(t, res, tt.status, tt.method+" "+tt.path)
		msg := res.ErrorInfo(t).Message
		if !strings.Contains(msg, tt.mention) || strings.Contains(msg, "(ctx") || strings.Contains(msg, "Transact") {
			t.Errorf("%s %s: message %q: want it to mention %s and no internals", tt.method, tt.path, msg, tt.mention)
		}
	}
}
