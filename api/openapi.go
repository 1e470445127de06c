package api

import (
	"bytes"
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"

	"svc/auth"
)

// openapiJSON is the hand-written document in this folder. A test fails when
// it and the route table disagree, so it cannot drift from the code.
//
//go:embed openapi.json
var openapiJSON []byte

// OpenAPIDocument returns the OpenAPI 3.1 document that /openapi.json serves.
func OpenAPIDocument() []byte { return bytes.Clone(openapiJSON) }

func (s *Server) openapiRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/openapi.json", Action: auth.Public,
			Summary: "This OpenAPI document", Handler: s.openapi},
	}
}

func (s *Server) openapi(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openapiJSON)
}
