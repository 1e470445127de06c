package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

var traceSourceCases = []Case{
	{"trace_sources/put_get_list_replace_delete", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		doc := json.RawMessage(`{"kind":"langfuse","endpoint":"https://cloud.langfuse.com","authSecret":"lf-key"}`)
		first, err := s.PutTraceSource(ctx, store.TraceSource{Workspace: "acme", Name: "lf", Doc: doc, CreatedBy: "alice", UpdatedBy: "alice", UpdatedAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		// A replace keeps the first creator and creation time.
		doc2 := json.RawMessage(`{"kind":"langfuse","endpoint":"https://eu.cloud.langfuse.com","authSecret":"lf-key"}`)
		if _, err := s.PutTraceSource(ctx, store.TraceSource{Workspace: "acme", Name: "lf", Doc: doc2, CreatedBy: "bob", UpdatedBy: "bob", UpdatedAt: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PutTraceSource(ctx, store.TraceSource{Workspace: "other", Name: "lf", Doc: doc, UpdatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetTraceSource(ctx, "acme", "lf")
		if err != nil {
			t.Fatal(err)
		}
		want := store.TraceSource{Workspace: "acme", Name: "lf", Doc: doc2, CreatedBy: "alice", UpdatedBy: "bob", CreatedAt: first.CreatedAt, UpdatedAt: t0.Add(time.Hour).UTC().Truncate(time.Microsecond)}
		if diff := cmp.Diff(want, got, jsonEqual); diff != "" {
			t.Errorf("GetTraceSource (-want +got):\n%s", diff)
		}
		list, err := s.ListTraceSources(ctx, "acme")
		if err != nil || len(list) != 1 || list[0].Name != "lf" {
			t.Errorf("ListTraceSources = %+v, %v; want acme's one source", list, err)
		}
		if err := s.DeleteTraceSource(ctx, "acme", "lf"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetTraceSource(ctx, "acme", "lf"); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("GetTraceSource after delete: %v, want ErrNotFound", err)
		}
		if err := s.DeleteTraceSource(ctx, "acme", "lf"); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("DeleteTraceSource again: %v, want ErrNotFound", err)
		}
		if _, err := s.GetTraceSource(ctx, "other", "lf"); err != nil {
			t.Errorf("another workspace's source of the same name: %v", err)
		}
		if _, err := s.PutTraceSource(ctx, store.TraceSource{Workspace: "acme", Name: "x", Doc: json.RawMessage(`not json`), UpdatedAt: t0}); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("a document that is not JSON: %v, want ErrInvalid", err)
		}
	}},
	{"trace_sources/pulls_are_written_once", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		p := store.TracePull{Workspace: "acme", RunID: "r1", ScorecardID: "sc1", CreatedAt: t0, Doc: json.RawMessage(`{"runId":"t1"}`)}
		if err := s.PutTracePulls(ctx, []store.TracePull{p}); err != nil {
			t.Fatal(err)
		}
		again := p
		again.Doc = json.RawMessage(`{"runId":"t2"}`)
		if err := s.PutTracePulls(ctx, []store.TracePull{again}); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetTracePull(ctx, "acme", "r1")
		if err != nil {
			t.Fatal(err)
		}
		p.CreatedAt = t0.UTC().Truncate(time.Microsecond)
		if diff := cmp.Diff(p, got, jsonEqual); diff != "" {
			t.Errorf("GetTracePull (-want +got):\n%s", diff)
		}
		if _, err := s.GetTracePull(ctx, "other", "r1"); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("another workspace's pull: %v, want ErrNotFound", err)
		}
	}},
}
