// Package reqid carries the id of an API request in its context, so that
// code below the handlers (the services) logs the id the client was given
// and one id finds every line of a request. The API's middleware sets it;
// it is a leaf package so that any layer may read it.
package reqid

import (
	"context"
	"log/slog"
)

type key struct{}

// With returns ctx carrying the request id id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From returns the request id ctx carries, or "" outside a request.
func From(ctx context.Context) string {
	id, _ := ctx.Value(key{}).(string)
	return id
}

// Attr is the request id of ctx as the log attribute request_id, the key
// the API's own log lines use.
func Attr(ctx context.Context) slog.Attr {
	return slog.String("request_id", From(ctx))
}
