package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"svc/api"
	"svc/internal/imagestore"
	"svc/internal/integrations/images"
	"svc/internal/platform/config"
	"svc/internal/service/sandboxes"
)

// ctWorlds is the world store of the cross-tenant env: its store is set
// by the fixture's Setup (the server keeps the pointer).
var ctWorlds = &sandboxes.Worlds{}

// worldStore serves a managed image store on loopback for t and returns
// the store split by workspace, its guard admitting only that address.
func worldStore(t *testing.T) *images.Workspaces {
	t.Helper()
	st, err := imagestore.Open(t.TempDir(), imagestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(st)
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	guard, err := images.NewGuard(addr)
	if err != nil {
		t.Fatal(err)
	}
	w, err := images.NewWorkspaces(images.Config{Store: srv.URL, Guard: guard}, 10)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// publishWorld publishes a version of world id in workspace ws.
func publishWorld(t *testing.T, w *images.Workspaces, ws, id string) images.Version {
	t.Helper()
	c, err := w.For(ws)
	if err != nil {
		t.Fatal(err)
	}
	layer, err := random.Layer(256, "application/vnd.oci.image.layer.v1.tar+gzip")
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Publish(context.Background(), id, empty.Image, layer, "someone")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func init() {
	crossTenantEnv = append(crossTenantEnv, func(_ *config.Config, s *envSettings) {
		s.opts = append(s.opts, func(o *api.Options) { o.Worlds = ctWorlds })
	})
	registerCrossTenant("GET /worlds/:id", crossTenantFixture{
		Setup: func(t *testing.T, e *testEnv, a tenant) map[string]string {
			if ctWorlds.Store == nil {
				ctWorlds.Store = worldStore(t)
			}
			publishWorld(t, ctWorlds.Store, a.ws, "shared-name")
			return map[string]string{"id": "shared-name"}
		},
		Snapshot: func(t *testing.T, e *testEnv, a tenant, params map[string]string) any {
			res := e.do(t, http.MethodGet, "/worlds/"+params["id"], "", bearer(a.key))
			return res.Status
		},
	})
}

// TestWorldsBelongToTheirWorkspace: a world is listed and read in its
// workspace only; the same id in another workspace is another world
// (404 until it has a version there), and the listing shows the pinned
// reference without the store's address.
func TestWorldsBelongToTheirWorkspace(t *testing.T) {
	w := worldStore(t)
	e := newEnv(t, func(_ *config.Config, s *envSettings) {
		s.opts = append(s.opts, func(o *api.Options) { o.Worlds = &sandboxes.Worlds{Store: w} })
	})
	a, b := e.tenant(t, "a"), e.tenant(t, "b")
	v1 := publishWorld(t, w, a.ws, "shop")
	v2 := publishWorld(t, w, a.ws, "shop")

	res := e.do(t, http.MethodGet, "/worlds/shop", "", bearer(a.key))
	want(t, res, http.StatusOK, "A reads its world")
	var got sandboxes.World
	if err := json.Unmarshal(res.Body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Versions) != 2 || got.Latest == nil || got.Latest.Tag != "v2" || got.Latest.Digest != v2.Digest ||
		got.Versions[0].Ref != "shop:v1@"+v1.Digest {
		t.Fatalf("GET /worlds/shop = %+v, want v1 and v2 pinned (%s, %s)", got, v1.Digest, v2.Digest)
	}
	want(t, e.do(t, http.MethodGet, "/worlds/shop", "", bearer(b.key)), http.StatusNotFound, "B reads A's world")
	res = e.do(t, http.MethodGet, "/worlds", "", bearer(b.key))
	want(t, res, http.StatusOK, "B lists")
	if strings.TrimSpace(string(res.Body)) != "[]" {
		t.Errorf("B's worlds = %s, want none", res.Body)
	}
	res = e.do(t, http.MethodGet, "/worlds", "", bearer(a.key))
	want(t, res, http.StatusOK, "A lists")
	var list []sandboxes.World
	if err := json.Unmarshal(res.Body, &list); err != nil || len(list) != 1 || list[0].ID != "shop" || list[0].Latest.Tag != "v2" {
		t.Errorf("A's worlds = %s (%v), want shop at v2", res.Body, err)
	}
	want(t, e.do(t, http.MethodGet, "/worlds/Not_A_World", "", bearer(a.key)), http.StatusBadRequest, "an invalid world id")
}
