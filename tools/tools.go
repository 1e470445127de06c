//go:build tools

// Package tools pins modules the project imports so `go mod tidy` keeps them
// while the packages that use them are being written.
package tools

import (
	_ "github.com/coreos/go-oidc/v3/oidc"
	_ "github.com/getkin/kin-openapi/openapi3"
	_ "github.com/getkin/kin-openapi/openapi3filter"
	_ "github.com/getkin/kin-openapi/routers/gorillamux"
	_ "github.com/go-jose/go-jose/v4"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/labstack/echo/v4"
	_ "github.com/labstack/echo/v4/middleware"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "go.opentelemetry.io/contrib/instrumentation/github.com/labstack/echo/otelecho"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	_ "go.opentelemetry.io/otel/sdk/trace"
	_ "go.temporal.io/sdk/client"
	_ "go.temporal.io/sdk/contrib/opentelemetry"
	_ "go.temporal.io/sdk/testsuite"
	_ "go.temporal.io/sdk/worker"
	_ "go.temporal.io/server/common/config"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	_ "go.temporal.io/server/schema/sqlite"
	_ "go.temporal.io/server/temporal"
	_ "go.temporal.io/server/temporaltest"
	_ "golang.org/x/mod/semver"
	_ "golang.org/x/time/rate"
	_ "gonum.org/v1/gonum/stat"
	_ "gonum.org/v1/gonum/stat/distuv"
	_ "modernc.org/sqlite"
)
