package api

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"svc/internal/platform/derrors"
)

// checkPathParams vets every path parameter of the matched route with
// pathParam's rules (escaping, length, UTF-8, no control characters) before
// the handler runs. NewServer adds it to every row of the route table, so a
// route cannot skip the check by reading c.Param directly, and an id that
// no record can have never reaches a service or the store (whose errors
// name internal calls). The refusal names the parameter and its length,
// never the value.
func checkPathParams(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		for _, name := range c.ParamNames() {
			if _, err := pathParam(c, name); err != nil {
				return err
			}
		}
		return next(c)
	}
}

// queryID returns the optional id-like query parameter name ("" when it is
// absent), refused with 400 under the rules pathParam applies to path
// parameters: these values are looked up in the store like path ids.
func queryID(c echo.Context, name string) (string, error) {
	v := c.QueryParam(name)
	switch {
	case v == "":
		return "", nil
	case len(v) > maxParamLen:
		return "", derrors.Invalidf("query parameter %s is %d bytes long; the limit is %d", name, len(v), maxParamLen)
	case !utf8.ValidString(v) || strings.IndexFunc(v, unicode.IsControl) >= 0:
		return "", derrors.Invalidf("query parameter %s must be valid UTF-8 without control characters", name)
	}
	return v, nil
}
