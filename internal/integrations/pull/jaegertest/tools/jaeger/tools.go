//go:build tools

// Package tools pins Jaeger, whose binary the otel pull kind's real-server
// test runs (traces/pull/jaegertest/build.sh builds it).
package tools

import _ "github.com/jaegertracing/jaeger/cmd/jaeger"
