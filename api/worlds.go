package api

import (
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/labstack/echo/v4"

	"svc/auth"
	"svc/internal/platform/derrors"
)

// Worlds and image imports (spec §2.9, §4.8; docs/sandboxes.md, Worlds). Listing a
// workspace's worlds and versions and importing an image are routes
// beyond the spec (docs/decisions.md): `svc world ls` and `svc image
// import` call them. A world belongs to its workspace (its repository is
// under the workspace's namespace of the image store), so another
// workspace's world is 404.

// ImageImportMaxBytes bounds the body of POST /images: an image's tar,
// streamed to a temporary file (the API's body limit does not apply).
const ImageImportMaxBytes int64 = 8 << 30

// routeBodyLimits are the routes whose body may pass SVC_MAX_BODY_BYTES,
// with their own bound.
var routeBodyLimits = map[string]int64{"/images": ImageImportMaxBytes}

func (s *Server) worldRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/worlds", Action: auth.RunsRead,
			Summary: "List the workspace's worlds", Handler: s.listWorlds},
		{Method: http.MethodGet, Path: "/worlds/:id", Action: auth.RunsRead,
			Summary: "List a world's versions", Handler: s.getWorld},
		{Method: http.MethodPost, Path: "/images", Action: auth.ImagesPush,
			Summary: "Import an image into the image store", Handler: s.importImage},
	}
}

func (s *Server) listWorlds(c echo.Context) error {
	out, err := s.worlds.ListWorlds(c.Request().Context(), principal(c))
	if err != nil {
		return err
	}
	return listJSON(c, out)
}

func (s *Server) getWorld(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	w, err := s.worlds.GetWorld(c.Request().Context(), principal(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, w)
}

// importImage reads the body (an image's tar: docker save or an OCI
// layout, gzip or not) into a temporary file and pushes it as ?as=repo:tag.
func (s *Server) importImage(c echo.Context) error {
	target := strings.TrimSpace(c.QueryParam("as"))
	if target == "" {
		return derrors.Invalidf("as: name the image as repo:tag (POST /images?as=busybox:1)")
	}
	if err := s.worlds.CanSnapshot(); err != nil {
		return err
	}
	f, err := os.CreateTemp("", "svc-image-import-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	n, err := io.Copy(f, c.Request().Body)
	if err != nil {
		return err
	}
	if n == 0 {
		return derrors.Invalidf("the body is empty: send the image's tar (docker save, or an OCI image layout)")
	}
	if err := f.Close(); err != nil {
		return err
	}
	im, err := s.worlds.ImportImage(c.Request().Context(), principal(c), f.Name(), target)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, im)
}
