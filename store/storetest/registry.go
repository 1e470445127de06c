package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

// digestOf is a version or case digest as the registry computes it: the
// SHA-256 of the canonical JSON.
func digestOf(doc string) string {
	h := sha256.Sum256([]byte(doc))
	return "sha256:" + hex.EncodeToString(h[:])
}

// entityVersion returns a valid version with spec, created by alice at t0.
func entityVersion(kind, owner, id, version, spec string) store.EntityVersion {
	return store.EntityVersion{
		Kind: kind, Owner: owner, ID: id, Version: version,
		Spec: json.RawMessage(spec), Digest: digestOf(spec),
		CreatedBy: "user:alice", CreatedAt: t0,
	}
}

// specOf is a small spec naming id and version, varied by extra.
func specOf(id, version, extra string) string {
	return fmt.Sprintf(`{"id":%q,"version":%q,"description":%q}`, id, version, extra)
}

// harness returns a valid harness version of owner.
func harness(owner, id, version string) store.EntityVersion {
	return entityVersion("harness", owner, id, version, specOf(id, version, ""))
}

// dataset returns a valid dataset version of owner; its cases are apart.
func dataset(owner, id, version string) store.EntityVersion {
	return entityVersion("dataset", owner, id, version, specOf(id, version, ""))
}

// makeCases returns n cases case-00000, case-00001, ... tagged by tagsOf
// (nil for none).
func makeCases(n int, tagsOf func(i int) []string) []store.DatasetCase {
	cs := make([]store.DatasetCase, n)
	for i := range cs {
		id := fmt.Sprintf("case-%05d", i)
		var tags []string
		if tagsOf != nil {
			tags = tagsOf(i)
		}
		tj, _ := json.Marshal(tags)
		doc := fmt.Sprintf(`{"id":%q,"env":{"kind":"repo","source":{"files":{"main.go":"package main"}}},"task":"Make the test of package %d pass","graders":[{"id":"tests"}],"timeoutSec":600,"tags":%s}`, id, i, tj)
		cs[i] = store.DatasetCase{CaseID: id, Digest: digestOf(doc), Tags: tags, Doc: json.RawMessage(doc)}
	}
	return cs
}

// register registers v (with cases) or fails t.
func register(t *testing.T, tx store.Tx, v store.EntityVersion, team string, cases []store.DatasetCase) (store.EntityVersion, bool) {
	t.Helper()
	got, created, err := tx.RegisterVersion(t.Context(), v, team, cases)
	if err != nil {
		t.Fatalf("RegisterVersion(%s %s/%s@%s): %v", v.Kind, v.Owner, v.ID, v.Version, err)
	}
	return got, created
}

// stored is v as the store returns it after registration with seq.
func stored(v store.EntityVersion, seq int64, caseCount int) store.EntityVersion {
	v.Seq = seq
	v.CreatedAt = norm(v.CreatedAt)
	v.CaseCount = caseCount
	return v
}

// listed is v as list reads carry it: without its spec.
func listed(v store.EntityVersion) store.EntityVersion {
	v.Spec = nil
	return v
}

func getEntity(t *testing.T, tx store.Tx, kind, owner, id string) store.Entity {
	t.Helper()
	e, err := tx.GetEntity(t.Context(), kind, owner, id)
	if err != nil {
		t.Fatalf("GetEntity(%q, %q, %q): %v", kind, owner, id, err)
	}
	return e
}

func listCases(t *testing.T, tx store.Tx, owner, id, version string, f store.CaseFilter) []store.DatasetCase {
	t.Helper()
	cs, err := tx.ListDatasetCases(t.Context(), owner, id, version, f)
	if err != nil {
		t.Fatalf("ListDatasetCases(%q, %q@%q, %+v): %v", owner, id, version, f, err)
	}
	return cs
}

// versionNames are the versions of e, in order.
func versionNames(e store.Entity) []string {
	out := []string{}
	for _, v := range e.Versions {
		out = append(out, v.Version)
	}
	return out
}

// caseIDs are the ids of cs, in order.
func caseIDs(cs []store.DatasetCase) []string {
	return pluck(cs, func(c store.DatasetCase) string { return c.CaseID })
}

// withOrd is cs numbered as the store numbers them.
func withOrd(cs []store.DatasetCase) []store.DatasetCase {
	out := make([]store.DatasetCase, len(cs))
	for i, c := range cs {
		c.Ord = i
		out[i] = c
	}
	return out
}

var registryCases = []Case{
	{"registry/register_then_get", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		v := harness("acme", "h1", "1.0.0")
		v.Tags = []string{"stable", "gpu"}
		got, created := register(t, s, v, "team-a", nil)
		if !created {
			t.Error("created = false for a new version")
		}
		if got.Seq <= 0 {
			t.Errorf("Seq = %d, want > 0", got.Seq)
		}
		want := stored(v, got.Seq, 0)
		if diff := cmp.Diff(want, got, jsonEqual); diff != "" {
			t.Errorf("RegisterVersion (-want +got):\n%s", diff)
		}
		gv, err := s.GetVersion(ctx, "harness", "acme", "h1", "1.0.0")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, gv, jsonEqual); diff != "" {
			t.Errorf("GetVersion (-want +got):\n%s", diff)
		}
		wantEntity := store.Entity{Kind: "harness", Owner: "acme", ID: "h1", TeamID: "team-a", CreatedBy: "user:alice",
			CreatedAt: norm(t0), Versions: []store.EntityVersion{listed(want)}}
		if diff := cmp.Diff(wantEntity, getEntity(t, s, "harness", "acme", "h1"), jsonEqual); diff != "" {
			t.Errorf("GetEntity (-want +got):\n%s", diff)
		}
	}},
	{"registry/spec_and_case_bytes_come_back_unchanged", func(t *testing.T, s store.Store) {
		// The digest is over these bytes: a caller re-hashing what it reads
		// must get the digest back, on both backends.
		ctx := t.Context()
		spec := `{"version":"1","id":"d", "z":{"b":2.50,"a":[1,2]},"é":"\u00e9"}`
		v := entityVersion("dataset", "acme", "d", "1", spec)
		doc := `{"task":"t","id":"c1",  "n":1.0}`
		cs := []store.DatasetCase{{CaseID: "c1", Digest: digestOf(doc), Doc: json.RawMessage(doc)}}
		got, _ := register(t, s, v, "", cs)
		gv, err := s.GetVersion(ctx, "dataset", "acme", "d", "1")
		if err != nil {
			t.Fatal(err)
		}
		for what, b := range map[string][]byte{"returned spec": got.Spec, "stored spec": gv.Spec} {
			if !bytes.Equal(b, []byte(spec)) {
				t.Errorf("%s = %s, want the registered bytes %s", what, b, spec)
			}
		}
		if c := listCases(t, s, "acme", "d", "1", store.CaseFilter{}); len(c) != 1 || !bytes.Equal(c[0].Doc, []byte(doc)) {
			t.Errorf("stored case = %+v, want the registered doc bytes %s", c, doc)
		}
	}},
	{"registry/same_content_is_idempotent", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		v := dataset("acme", "d", "1.0.0")
		v.Tags = []string{"first"}
		cs := makeCases(3, nil)
		first, _ := register(t, s, v, "team-a", cs)
		again := v
		again.Tags = []string{"second"}
		again.CreatedBy = "user:bob"
		again.CreatedAt = t0.Add(time.Hour)
		got, created, err := s.RegisterVersion(ctx, again, "team-b", cs)
		if err != nil {
			t.Fatal(err)
		}
		if created {
			t.Error("created = true for identical content")
		}
		// Metadata of the call is not applied: the stored version comes back.
		if diff := cmp.Diff(first, got, jsonEqual); diff != "" {
			t.Errorf("second RegisterVersion (-first +second):\n%s", diff)
		}
		e := getEntity(t, s, "dataset", "acme", "d")
		if e.TeamID != "team-a" || len(e.Versions) != 1 {
			t.Errorf("entity = %+v, want team-a with one version", e)
		}
		if n := len(listCases(t, s, "acme", "d", "1.0.0", store.CaseFilter{})); n != 3 {
			t.Errorf("%d cases, want 3 (not stored twice)", n)
		}
	}},
	{"registry/other_content_is_conflict", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		first, _ := register(t, s, harness("acme", "h1", "1.0.0"), "", nil)
		other := entityVersion("harness", "acme", "h1", "1.0.0", specOf("h1", "1.0.0", "changed"))
		// Inside one transaction: the conflict must leave it usable.
		err := s.Transact(ctx, func(tx store.Tx) error {
			_, _, err := tx.RegisterVersion(ctx, other, "", nil)
			wantErr(t, "RegisterVersion(other content)", err, derrors.ErrConflict)
			if err != nil && !strings.Contains(err.Error(), "h1@1.0.0") {
				t.Errorf("conflict %q does not name h1@1.0.0", err)
			}
			_, _, err = tx.RegisterVersion(ctx, harness("acme", "h1", "1.1.0"), "", nil)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetVersion(ctx, "harness", "acme", "h1", "1.0.0")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, got, jsonEqual); diff != "" {
			t.Errorf("the stored version changed (-want +got):\n%s", diff)
		}
		if got := versionNames(getEntity(t, s, "harness", "acme", "h1")); !cmp.Equal(got, []string{"1.0.0", "1.1.0"}) {
			t.Errorf("versions = %q, want 1.0.0 and 1.1.0", got)
		}
	}},
	{"registry/seq_is_registration_order", func(t *testing.T, s store.Store) {
		// Registration order, not version order, across entities and kinds.
		var seqs []int64
		for _, v := range []store.EntityVersion{
			harness("acme", "b", "2.0.0"), harness("acme", "a", "1.0.0"), harness("acme", "b", "1.0.0"),
			entityVersion("judge", "_shared", "j", "1", `{}`), harness("globex", "b", "0.1.0"),
		} {
			got, _ := register(t, s, v, "", nil)
			seqs = append(seqs, got.Seq)
		}
		for i := 1; i < len(seqs); i++ {
			if seqs[i] <= seqs[i-1] {
				t.Errorf("seqs %v are not increasing in registration order", seqs)
				break
			}
		}
		if got := versionNames(getEntity(t, s, "harness", "acme", "b")); !cmp.Equal(got, []string{"2.0.0", "1.0.0"}) {
			t.Errorf("versions of b = %q, want registration order [2.0.0 1.0.0]", got)
		}
	}},
	{"registry/list_entities_by_owner_then_id", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		for _, v := range []store.EntityVersion{
			harness("acme", "h-b", "1"), harness("acme", "h-a", "1"), harness("acme", "h-a", "2"),
			harness("_shared", "h-z", "1"), harness("globex", "h-a", "1"), harness("acme", "h-gone", "1"),
			entityVersion("judge", "acme", "j", "1", `{}`),
		} {
			register(t, s, v, "", nil)
		}
		if err := s.TombstoneVersion(ctx, "harness", "acme", "h-gone", "1", t0); err != nil {
			t.Fatal(err)
		}
		type ref struct{ Owner, ID string }
		refs := func(es []store.Entity) []ref {
			out := []ref{}
			for _, e := range es {
				out = append(out, ref{e.Owner, e.ID})
			}
			return out
		}
		for _, tc := range []struct {
			name   string
			owners []string
			want   []ref
		}{
			// Byte order: "_shared" sorts before "acme".
			{"workspace and shared", []string{"acme", "_shared"}, []ref{{"_shared", "h-z"}, {"acme", "h-a"}, {"acme", "h-b"}}},
			{"another workspace", []string{"globex"}, []ref{{"globex", "h-a"}}},
			{"duplicates once", []string{"globex", "globex"}, []ref{{"globex", "h-a"}}},
			{"unknown owner", []string{"initech"}, []ref{}},
			{"no owners", nil, []ref{}},
		} {
			got, err := s.ListEntities(ctx, "harness", tc.owners)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if diff := cmp.Diff(tc.want, refs(got)); diff != "" {
				t.Errorf("%s: ListEntities(harness, %q) (-want +got):\n%s", tc.name, tc.owners, diff)
			}
		}
		got, err := s.ListEntities(ctx, "harness", []string{"acme"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || !cmp.Equal(versionNames(got[0]), []string{"1", "2"}) {
			t.Fatalf("acme harnesses = %+v, want h-a with versions 1 and 2, then h-b", got)
		}
		for _, v := range got[0].Versions {
			if v.Spec != nil || v.Kind != "harness" || v.Owner != "acme" || v.ID != "h-a" || v.Digest == "" || v.Seq == 0 {
				t.Errorf("listed version %+v, want its key, digest and seq and no spec", v)
			}
		}
	}},
	{"registry/tombstone_is_excluded_and_identical_content_revives", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		cs := makeCases(3, nil)
		v1, _ := register(t, s, dataset("acme", "d", "1"), "", cs)
		register(t, s, dataset("acme", "d", "2"), "", nil)
		if err := s.TombstoneVersion(ctx, "dataset", "acme", "d", "1", t0); err != nil {
			t.Fatal(err)
		}
		_, err := s.GetVersion(ctx, "dataset", "acme", "d", "1")
		wantErr(t, "GetVersion(tombstoned)", err, derrors.ErrNotFound)
		_, err = s.ListDatasetCases(ctx, "acme", "d", "1", store.CaseFilter{})
		wantErr(t, "ListDatasetCases(tombstoned)", err, derrors.ErrNotFound)
		err = s.SetVersionTags(ctx, "dataset", "acme", "d", "1", []string{"x"})
		wantErr(t, "SetVersionTags(tombstoned)", err, derrors.ErrNotFound)
		_, err = s.StampVersionOrigin(ctx, "dataset", "acme", "d", "1", json.RawMessage(`{"via":"web"}`))
		wantErr(t, "StampVersionOrigin(tombstoned)", err, derrors.ErrNotFound)
		err = s.TombstoneVersion(ctx, "dataset", "acme", "d", "1", t0)
		wantErr(t, "TombstoneVersion(tombstoned)", err, derrors.ErrNotFound)
		if got := versionNames(getEntity(t, s, "dataset", "acme", "d")); !cmp.Equal(got, []string{"2"}) {
			t.Errorf("live versions = %q, want [2]", got)
		}

		// With no live version left the entity is gone from reads.
		if err := s.TombstoneVersion(ctx, "dataset", "acme", "d", "2", t0); err != nil {
			t.Fatal(err)
		}
		_, err = s.GetEntity(ctx, "dataset", "acme", "d")
		wantErr(t, "GetEntity(all tombstoned)", err, derrors.ErrNotFound)
		if es, err := s.ListEntities(ctx, "dataset", []string{"acme"}); err != nil || len(es) != 0 {
			t.Errorf("ListEntities = %+v, %v; want none", es, err)
		}

		// Other content under a tombstoned version is still a conflict.
		other := entityVersion("dataset", "acme", "d", "1", specOf("d", "1", "changed"))
		_, _, err = s.RegisterVersion(ctx, other, "", nil)
		wantErr(t, "RegisterVersion(other content over a tombstone)", err, derrors.ErrConflict)

		got, created := register(t, s, dataset("acme", "d", "1"), "", cs)
		if created {
			t.Error("revival reported created = true")
		}
		if diff := cmp.Diff(v1, got, jsonEqual); diff != "" {
			t.Errorf("revived version (-registered +revived):\n%s", diff)
		}
		if got := listCases(t, s, "acme", "d", "1", store.CaseFilter{}); len(got) != 3 {
			t.Errorf("revived version has %d cases, want 3", len(got))
		}
		if got := versionNames(getEntity(t, s, "dataset", "acme", "d")); !cmp.Equal(got, []string{"1"}) {
			t.Errorf("live versions = %q, want [1]", got)
		}
	}},
	{"registry/entity_team_survives_tombstones", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		register(t, s, dataset("acme", "d", "1"), "red", makeCases(1, nil))
		if err := s.TombstoneVersion(ctx, "dataset", "acme", "d", "1", t0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetEntity(ctx, "dataset", "acme", "d"); !errors.Is(err, derrors.ErrNotFound) {
			t.Fatalf("GetEntity with every version tombstoned = %v, want ErrNotFound", err)
		}
		if team, err := s.EntityTeam(ctx, "dataset", "acme", "d"); err != nil || team != "red" {
			t.Errorf("EntityTeam = %q, %v; want red", team, err)
		}
		_, err := s.EntityTeam(ctx, "dataset", "other", "d")
		wantErr(t, "EntityTeam(other owner)", err, derrors.ErrNotFound)
		_, err = s.EntityTeam(ctx, "dataset", "acme", "never")
		wantErr(t, "EntityTeam(unknown)", err, derrors.ErrNotFound)
	}},
	{"registry/set_version_tags_replaces", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		v := harness("acme", "h", "1")
		v.Tags = []string{"a", "b"}
		first, _ := register(t, s, v, "", nil)
		for _, tc := range []struct {
			tags, want []string
		}{
			{[]string{"c"}, []string{"c"}},
			{[]string{"z", "y"}, []string{"z", "y"}}, // order kept
			{[]string{}, nil},
			{nil, nil},
		} {
			if err := s.SetVersionTags(ctx, "harness", "acme", "h", "1", tc.tags); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetVersion(ctx, "harness", "acme", "h", "1")
			if err != nil {
				t.Fatal(err)
			}
			want := first
			want.Tags = tc.want
			if diff := cmp.Diff(want, got, jsonEqual); diff != "" {
				t.Errorf("after SetVersionTags(%q) (-want +got):\n%s", tc.tags, diff)
			}
		}
		err := s.SetVersionTags(ctx, "harness", "acme", "h", "9", []string{"x"})
		wantErr(t, "SetVersionTags(unknown version)", err, derrors.ErrNotFound)
		err = s.SetVersionTags(ctx, "harness", "acme", "h", "1", []string{"a\x00b"})
		wantErr(t, "SetVersionTags(NUL)", err, derrors.ErrInvalid)
	}},
	{"registry/origin_first_wins", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		register(t, s, harness("acme", "h", "1"), "", nil)
		a := json.RawMessage(`{"via":"mcp","agentId":"a1"}`)
		b := json.RawMessage(`{"via":"web"}`)
		for i, in := range []json.RawMessage{a, b} {
			got, err := s.StampVersionOrigin(ctx, "harness", "acme", "h", "1", in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(a, got, jsonEqual); diff != "" {
				t.Errorf("stamp #%d returned (-first +got):\n%s", i+1, diff)
			}
		}
		gv, err := s.GetVersion(ctx, "harness", "acme", "h", "1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(a, gv.Origin, jsonEqual); diff != "" {
			t.Errorf("stored origin (-want +got):\n%s", diff)
		}
		if e := getEntity(t, s, "harness", "acme", "h"); !cmp.Equal(a, e.Versions[0].Origin, jsonEqual) {
			t.Errorf("listed origin = %s, want %s", e.Versions[0].Origin, a)
		}

		// An origin given at registration is the first answer.
		v := harness("acme", "h", "2")
		v.Origin = b
		register(t, s, v, "", nil)
		got, err := s.StampVersionOrigin(ctx, "harness", "acme", "h", "2", a)
		if err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(b, got, jsonEqual) {
			t.Errorf("stamp over a registered origin returned %s, want %s", got, b)
		}

		_, err = s.StampVersionOrigin(ctx, "harness", "acme", "h", "9", a)
		wantErr(t, "StampVersionOrigin(unknown version)", err, derrors.ErrNotFound)
		for _, bad := range []string{"", "null", "{", `{"k":"a\u0000"}`} {
			_, err = s.StampVersionOrigin(ctx, "harness", "acme", "h", "1", json.RawMessage(bad))
			wantErr(t, fmt.Sprintf("StampVersionOrigin(%q)", bad), err, derrors.ErrInvalid)
		}
	}},
	{"registry/concurrent_origin_stamps_one_wins", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		register(t, s, harness("acme", "h", "1"), "", nil)
		const n = 8
		got := make([]json.RawMessage, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				origin := json.RawMessage(fmt.Sprintf(`{"via":"mcp","note":"stamp %d"}`, i))
				if i%2 == 0 {
					got[i], errs[i] = s.StampVersionOrigin(ctx, "harness", "acme", "h", "1", origin)
					return
				}
				// Half of them inside transactions, as a caller would.
				errs[i] = s.Transact(ctx, func(tx store.Tx) error {
					var err error
					got[i], err = tx.StampVersionOrigin(ctx, "harness", "acme", "h", "1", origin)
					return err
				})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("stamp %d: %v", i, err)
			}
		}
		gv, err := s.GetVersion(ctx, "harness", "acme", "h", "1")
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range got {
			if !cmp.Equal(gv.Origin, o, jsonEqual) {
				t.Errorf("stamp %d returned %s, but %s is stored: every caller must see the one winner", i, o, gv.Origin)
			}
		}
	}},
	{"registry/move_entity_moves_every_version", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		v1, _ := register(t, s, dataset("acme", "d", "1"), "team-a", nil)
		register(t, s, dataset("acme", "d", "2"), "team-a", nil)
		if err := s.TombstoneVersion(ctx, "dataset", "acme", "d", "2", t0); err != nil {
			t.Fatal(err)
		}
		if err := s.MoveEntity(ctx, "dataset", "acme", "d", "team-b"); err != nil {
			t.Fatal(err)
		}
		e := getEntity(t, s, "dataset", "acme", "d")
		if e.TeamID != "team-b" {
			t.Errorf("TeamID = %q after the move, want team-b", e.TeamID)
		}
		if diff := cmp.Diff([]store.EntityVersion{listed(v1)}, e.Versions, jsonEqual); diff != "" {
			t.Errorf("versions changed by the move (-want +got):\n%s", diff)
		}
		// The tombstone moved too: revived, it is team-b's.
		register(t, s, dataset("acme", "d", "2"), "team-c", nil)
		if e := getEntity(t, s, "dataset", "acme", "d"); e.TeamID != "team-b" || len(e.Versions) != 2 {
			t.Errorf("after revival: team %q with %d versions, want team-b with 2", e.TeamID, len(e.Versions))
		}
		for _, tc := range []struct{ kind, owner, id string }{
			{"dataset", "acme", "missing"}, {"dataset", "globex", "d"}, {"harness", "acme", "d"},
		} {
			err := s.MoveEntity(ctx, tc.kind, tc.owner, tc.id, "team-b")
			wantErr(t, fmt.Sprintf("MoveEntity(%s, %s, %s)", tc.kind, tc.owner, tc.id), err, derrors.ErrNotFound)
		}
	}},
	{"registry/dataset_cases_selection", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		cs := makeCases(10, func(i int) []string {
			var tags []string
			if i%2 == 0 {
				tags = append(tags, "even")
			}
			if i%3 == 0 {
				tags = append(tags, "three", "three") // a repeated tag matches once
			}
			return tags
		})
		v, _ := register(t, s, dataset("acme", "d", "1"), "", cs)
		if v.CaseCount != 10 {
			t.Errorf("CaseCount = %d, want 10", v.CaseCount)
		}
		if diff := cmp.Diff(withOrd(cs), listCases(t, s, "acme", "d", "1", store.CaseFilter{}), jsonEqual); diff != "" {
			t.Errorf("all cases (-want +got):\n%s", diff)
		}
		ids := func(ns ...int) []string {
			out := []string{}
			for _, n := range ns {
				out = append(out, fmt.Sprintf("case-%05d", n))
			}
			return out
		}
		for _, tc := range []struct {
			name string
			f    store.CaseFilter
			want []string
		}{
			{"all", store.CaseFilter{}, ids(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)},
			{"from a later case", store.CaseFilter{FromOrd: 4}, ids(4, 5, 6, 7, 8, 9)},
			{"ids in Ord order, unknown skipped", store.CaseFilter{IDs: []string{"case-00007", "case-00002", "nope", "case-00002"}}, ids(2, 7)},
			{"tags any match", store.CaseFilter{Tags: []string{"three", "unknown"}}, ids(0, 3, 6, 9)},
			{"ids or tags", store.CaseFilter{IDs: ids(1), Tags: []string{"three"}}, ids(0, 1, 3, 6, 9)},
			{"two tags", store.CaseFilter{Tags: []string{"three", "even"}}, ids(0, 2, 3, 4, 6, 8, 9)},
			{"limit", store.CaseFilter{Limit: 3}, ids(0, 1, 2)},
			{"after, tags, limit", store.CaseFilter{Tags: []string{"even"}, FromOrd: 3, Limit: 3}, ids(4, 6, 8)},
			{"nothing matches", store.CaseFilter{IDs: []string{"nope"}}, ids()},
		} {
			got := listCases(t, s, "acme", "d", "1", tc.f)
			if diff := cmp.Diff(tc.want, caseIDs(got)); diff != "" {
				t.Errorf("%s: %+v (-want +got):\n%s", tc.name, tc.f, diff)
			}
		}

		// Paging with FromOrd visits every case once.
		var paged []string
		from := 0
		for pages := 0; ; pages++ {
			page := listCases(t, s, "acme", "d", "1", store.CaseFilter{FromOrd: from, Limit: 4})
			if len(page) == 0 {
				break
			}
			if pages > 10 {
				t.Fatal("paging does not end")
			}
			paged = append(paged, caseIDs(page)...)
			from = page[len(page)-1].Ord + 1
		}
		if diff := cmp.Diff(caseIDs(cs), paged); diff != "" {
			t.Errorf("pages of 4 (-want +got):\n%s", diff)
		}

		register(t, s, harness("acme", "h", "1"), "", nil)
		for _, tc := range []struct{ owner, id, version string }{
			{"acme", "d", "2"}, {"globex", "d", "1"}, {"acme", "h", "1"}, // a harness has no cases
		} {
			_, err := s.ListDatasetCases(ctx, tc.owner, tc.id, tc.version, store.CaseFilter{})
			wantErr(t, fmt.Sprintf("ListDatasetCases(%s, %s@%s)", tc.owner, tc.id, tc.version), err, derrors.ErrNotFound)
		}
		_, err := s.ListDatasetCases(ctx, "acme", "d", "1", store.CaseFilter{Limit: -1})
		wantErr(t, "ListDatasetCases(Limit -1)", err, derrors.ErrInvalid)
	}},
	{"registry/dataset_of_10000_cases", func(t *testing.T, s store.Store) {
		const n = 10000
		cs := makeCases(n, func(i int) []string { return []string{fmt.Sprintf("bucket-%d", i%10)} })
		start := time.Now()
		v, created := register(t, s, dataset("acme", "big", "1"), "", cs)
		t.Logf("%s: registered %d cases in %v", s.Dialect(), n, time.Since(start))
		if !created || v.CaseCount != n {
			t.Errorf("created = %v, CaseCount = %d; want true, %d", created, v.CaseCount, n)
		}

		start = time.Now()
		page := listCases(t, s, "acme", "big", "1", store.CaseFilter{FromOrd: 5000, Limit: 50})
		t.Logf("%s: read a page of %d in %v", s.Dialect(), len(page), time.Since(start))
		if diff := cmp.Diff(withOrd(cs)[5000:5050], page, jsonEqual); diff != "" {
			t.Errorf("page after 4999 (-want +got):\n%s", diff)
		}

		// More ids than one statement carries, with a tag and a limit.
		var sel []string
		for i := 0; i < n; i += 5 {
			sel = append(sel, cs[i].CaseID)
		}
		var want []string
		for i := 100; len(want) < 120; i++ {
			if i%5 == 0 || i%10 == 3 {
				want = append(want, cs[i].CaseID)
			}
		}
		start = time.Now()
		got := listCases(t, s, "acme", "big", "1", store.CaseFilter{IDs: sel, Tags: []string{"bucket-3"}, FromOrd: 100, Limit: 120})
		t.Logf("%s: selected %d of %d ids or a tag in %v", s.Dialect(), len(got), len(sel), time.Since(start))
		if diff := cmp.Diff(want, caseIDs(got)); diff != "" {
			t.Errorf("selection by %d ids or bucket-3 (-want +got):\n%s", len(sel), diff)
		}

		start = time.Now()
		if _, created := register(t, s, dataset("acme", "big", "1"), "", cs); created {
			t.Error("re-registration created = true")
		}
		t.Logf("%s: re-registered (idempotent) in %v", s.Dialect(), time.Since(start))
	}},
	{"registry/invalid_input_stores_nothing", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		valid := func() store.EntityVersion { return dataset("acme", "d", "1") }
		two := makeCases(2, nil)
		for _, tc := range []struct {
			name  string
			edit  func(v *store.EntityVersion)
			cases []store.DatasetCase
		}{
			{"no kind", func(v *store.EntityVersion) { v.Kind = "" }, nil},
			{"no owner", func(v *store.EntityVersion) { v.Owner = "" }, nil},
			{"no id", func(v *store.EntityVersion) { v.ID = "" }, nil},
			{"no version", func(v *store.EntityVersion) { v.Version = "" }, nil},
			{"no digest", func(v *store.EntityVersion) { v.Digest = "" }, nil},
			{"bad digest", func(v *store.EntityVersion) { v.Digest = "sha256:abc" }, nil},
			{"no spec", func(v *store.EntityVersion) { v.Spec = nil }, nil},
			{"spec not JSON", func(v *store.EntityVersion) { v.Spec = json.RawMessage(`{"a":`) }, nil},
			{"spec with NUL", func(v *store.EntityVersion) { v.Spec = json.RawMessage(`{"a":"\u0000"}`) }, nil},
			{"origin null", func(v *store.EntityVersion) { v.Origin = json.RawMessage(`null`) }, nil},
			{"tag with NUL", func(v *store.EntityVersion) { v.Tags = []string{"a\x00"} }, nil},
			{"id not UTF-8", func(v *store.EntityVersion) { v.ID = "d\xff" }, nil},
			{"cases of a harness", func(v *store.EntityVersion) { v.Kind = "harness" }, two},
			{"duplicate case id", func(*store.EntityVersion) {}, []store.DatasetCase{two[0], two[1], two[0]}},
			{"case without id", func(*store.EntityVersion) {}, []store.DatasetCase{{Digest: "x", Doc: json.RawMessage(`{}`)}}},
			{"case without digest", func(*store.EntityVersion) {}, []store.DatasetCase{{CaseID: "c", Doc: json.RawMessage(`{}`)}}},
			{"case doc not JSON", func(*store.EntityVersion) {}, []store.DatasetCase{{CaseID: "c", Digest: "x", Doc: json.RawMessage(`nope`)}}},
		} {
			v := valid()
			tc.edit(&v)
			_, _, err := s.RegisterVersion(ctx, v, "", tc.cases)
			wantErr(t, tc.name, err, derrors.ErrInvalid)
		}
		for _, kind := range []string{"dataset", "harness"} {
			_, err := s.GetEntity(ctx, kind, "acme", "d")
			wantErr(t, "GetEntity after refused registrations", err, derrors.ErrNotFound)
		}
	}},
	{"registry/owner_and_kind_scoping", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		register(t, s, dataset("acme", "d", "1"), "", makeCases(2, nil))
		origin := json.RawMessage(`{"via":"web"}`)
		for _, tc := range []struct{ kind, owner string }{{"dataset", "globex"}, {"dataset", "_shared"}, {"judge", "acme"}} {
			what := func(op string) string { return fmt.Sprintf("%s(%s, %s)", op, tc.kind, tc.owner) }
			_, err := s.GetVersion(ctx, tc.kind, tc.owner, "d", "1")
			wantErr(t, what("GetVersion"), err, derrors.ErrNotFound)
			_, err = s.GetEntity(ctx, tc.kind, tc.owner, "d")
			wantErr(t, what("GetEntity"), err, derrors.ErrNotFound)
			err = s.SetVersionTags(ctx, tc.kind, tc.owner, "d", "1", []string{"x"})
			wantErr(t, what("SetVersionTags"), err, derrors.ErrNotFound)
			_, err = s.StampVersionOrigin(ctx, tc.kind, tc.owner, "d", "1", origin)
			wantErr(t, what("StampVersionOrigin"), err, derrors.ErrNotFound)
			err = s.TombstoneVersion(ctx, tc.kind, tc.owner, "d", "1", t0)
			wantErr(t, what("TombstoneVersion"), err, derrors.ErrNotFound)
			err = s.MoveEntity(ctx, tc.kind, tc.owner, "d", "team-x")
			wantErr(t, what("MoveEntity"), err, derrors.ErrNotFound)
			if es, err := s.ListEntities(ctx, tc.kind, []string{tc.owner}); err != nil || len(es) != 0 {
				t.Errorf("%s = %+v, %v; want none", what("ListEntities"), es, err)
			}
		}
		_, err := s.ListDatasetCases(ctx, "globex", "d", "1", store.CaseFilter{})
		wantErr(t, "ListDatasetCases(globex)", err, derrors.ErrNotFound)
		// acme's version is untouched by all of the above.
		got, err := s.GetVersion(ctx, "dataset", "acme", "d", "1")
		if err != nil || got.Tags != nil || got.Origin != nil {
			t.Errorf("acme's version = %+v, %v; want it live, untagged, unstamped", got, err)
		}
	}},
	{"registry/transaction_reads_its_writes_and_rolls_back", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		cs := makeCases(5, func(int) []string { return []string{"t"} })
		err := s.Transact(ctx, func(tx store.Tx) error {
			register(t, tx, dataset("acme", "d", "1"), "", cs)
			if got := listCases(t, tx, "acme", "d", "1", store.CaseFilter{Tags: []string{"t"}}); len(got) != 5 {
				t.Errorf("cases in the transaction = %d, want 5", len(got))
			}
			if _, err := tx.GetVersion(ctx, "dataset", "acme", "d", "1"); err != nil {
				t.Errorf("GetVersion in the transaction: %v", err)
			}
			return errAbort
		})
		wantErr(t, "Transact", err, errAbort)
		_, err = s.GetEntity(ctx, "dataset", "acme", "d")
		wantErr(t, "GetEntity after rollback", err, derrors.ErrNotFound)
		// No case row survived the rollback to collide with a new registration.
		if _, created := register(t, s, dataset("acme", "d", "1"), "", cs); !created {
			t.Error("registration after rollback: created = false")
		}
		if got := listCases(t, s, "acme", "d", "1", store.CaseFilter{}); len(got) != 5 {
			t.Errorf("%d cases, want 5", len(got))
		}
	}},
	{"registry/concurrent_registrations_of_one_version", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		cs := makeCases(50, nil)
		const n = 6
		got := make([]store.EntityVersion, n)
		created := make([]bool, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				got[i], created[i], errs[i] = s.RegisterVersion(ctx, dataset("acme", "d", "1"), "", cs)
			})
		}
		wg.Wait()
		creators := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("registration %d: %v", i, errs[i])
			}
			if created[i] {
				creators++
			}
			if got[i].Seq != got[0].Seq {
				t.Errorf("registration %d got seq %d, registration 0 seq %d: want one version", i, got[i].Seq, got[0].Seq)
			}
		}
		if creators != 1 {
			t.Errorf("%d registrations report created, want exactly 1", creators)
		}
		if c := listCases(t, s, "acme", "d", "1", store.CaseFilter{}); len(c) != 50 {
			t.Errorf("%d cases, want 50", len(c))
		}
	}},
}
