package sqlstore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"svc/migrations"
	"svc/store"
)

// TestEventsStoredCompressed: trajectories and pending rows written since
// migration 0020 keep their events in events_z, compressed, and read back
// byte for byte; a trajectory written before (events set) reads as it
// was; a row with both or neither column set is refused by the database.
func TestEventsStoredCompressed(t *testing.T) {
	for _, d := range []string{migrations.SQLite, migrations.Postgres} {
		t.Run(d, func(t *testing.T) {
			ctx := t.Context()
			db, dialect := openDialect(t, d)
			if _, err := migrations.Apply(ctx, db, d); err != nil {
				t.Fatal(err)
			}
			s := New(dialect, db, db, Options{})
			at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

			var evs []string
			for i := range 200 {
				evs = append(evs, fmt.Sprintf(`{"kind":"span","name":"step %d","ts":"2026-11-27T10:00:00Z"}`, i))
			}
			events := "[" + strings.Join(evs, ",") + "]"
			sum := sha256.Sum256([]byte(events))
			tr := store.Trajectory{Workspace: "acme", RunID: "run-z", Source: "otel", EventCount: len(evs),
				Digest: "sha256:" + hex.EncodeToString(sum[:]), SealedAt: at, Events: json.RawMessage(events)}
			if _, _, err := s.SealTrajectory(ctx, tr); err != nil {
				t.Fatal(err)
			}
			var plainNull bool
			var stored int
			if err := db.QueryRowContext(ctx, `SELECT events IS NULL, length(events_z) FROM trajectories WHERE run_id = 'run-z'`).Scan(&plainNull, &stored); err != nil {
				t.Fatal(err)
			}
			if !plainNull || stored == 0 || stored >= len(events)/4 {
				t.Errorf("trajectory stored with events NULL = %v and %d compressed bytes, want NULL and well under %d", plainNull, stored, len(events))
			}
			got, err := s.GetTrajectory(ctx, "acme", "run-z")
			if err != nil || string(got.Events) != events {
				t.Errorf("GetTrajectory = %.60q, %v; want the sealed bytes", got.Events, err)
			}

			// A trajectory of the former form.
			if _, err := db.ExecContext(ctx, `INSERT INTO trajectories (workspace, run_id, source, event_count, digest, sealed_at, audience, events)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, "acme", "run-old", "otel", 1, "sha256:"+strings.Repeat("0", 64), dialect.TimeArg(at), "",
				`[{"kind":"span","name":"old"}]`); err != nil {
				t.Fatal(err)
			}
			if got, err := s.GetTrajectory(ctx, "acme", "run-old"); err != nil || string(got.Events) != `[{"kind":"span","name":"old"}]` {
				t.Errorf("GetTrajectory(a row of the former form) = %q, %v", got.Events, err)
			}
			for _, q := range []string{
				`INSERT INTO trajectories (workspace, run_id, source, event_count, digest, sealed_at, audience) VALUES ('acme', 'none', 'otel', 0, 'x', '2026-11-27T10:00:00Z', '')`,
				`INSERT INTO trajectories (workspace, run_id, source, event_count, digest, sealed_at, audience, events, events_z) VALUES ('acme', 'both', 'otel', 0, 'x', '2026-11-27T10:00:00Z', '', '[]', 'x')`,
			} {
				if _, err := db.ExecContext(ctx, q); err == nil {
					t.Errorf("%s: accepted", q)
				}
			}

			// Pending rows.
			var spans []store.PendingSpan
			for i, ev := range evs {
				spans = append(spans, store.PendingSpan{Workspace: "acme", Group: "ext-z", External: true, Key: fmt.Sprintf("t/%03d", i),
					StartUnixNano: int64(i + 1), Event: json.RawMessage(ev), ReceivedAt: at, Canonical: true})
			}
			if _, err := s.AddPendingSpans(ctx, spans); err != nil {
				t.Fatal(err)
			}
			if err := db.QueryRowContext(ctx, `SELECT events IS NULL, length(events_z) FROM pending_span_batches WHERE grp = 'ext-z'`).Scan(&plainNull, &stored); err != nil {
				t.Fatal(err)
			}
			if !plainNull || stored == 0 || stored >= len(events)/4 {
				t.Errorf("pending row stored with events NULL = %v and %d compressed bytes, want NULL and well under %d", plainNull, stored, len(events))
			}
			pending, err := s.ListPendingSpans(ctx, "acme", "ext-z")
			if err != nil || len(pending) != len(evs) {
				t.Fatalf("ListPendingSpans = %d spans, %v; want %d", len(pending), err, len(evs))
			}
			for i, p := range pending {
				if string(p.Event) != evs[i] {
					t.Fatalf("pending span %d = %q, want %q", i, p.Event, evs[i])
				}
			}
			// Sealed inside the store: the compressed bytes are copied.
			sealed, ok, err := s.SealPendingGroup(ctx, store.Trajectory{Workspace: "acme", RunID: "ext-z", Source: "otel", SealedAt: at}, 1000)
			if err != nil || !ok || sealed.Digest != tr.Digest {
				t.Fatalf("SealPendingGroup = %+v, %v, %v; want sealed with digest %s", sealed, ok, err, tr.Digest)
			}
			if got, err := s.GetTrajectory(ctx, "acme", "ext-z"); err != nil || string(got.Events) != events {
				t.Errorf("GetTrajectory(sealed in the store) = %.60q, %v; want the pending events", got.Events, err)
			}
		})
	}
}

// TestMigration0020KeepsTrajectories: a trajectory sealed before
// migration 0020 (its events in events) reads the same after it, on
// SQLite, whose tables the migration rebuilds, and on PostgreSQL.
func TestMigration0020KeepsTrajectories(t *testing.T) {
	for _, d := range []string{migrations.SQLite, migrations.Postgres} {
		t.Run(d, func(t *testing.T) {
			ctx := t.Context()
			db, dialect := openDialect(t, d)
			migrate(t, db, d, 1, 19)
			if _, err := db.ExecContext(ctx, `INSERT INTO trajectories (workspace, run_id, source, event_count, digest, sealed_at, audience, events)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, "acme", "run-before", "otel", 1, "sha256:"+strings.Repeat("1", 64),
				dialect.TimeArg(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)), "alice", `[{"kind":"span","name":"before"}]`); err != nil {
				t.Fatal(err)
			}
			migrate(t, db, d, 20, 0)
			s := New(dialect, db, db, Options{})
			got, err := s.GetTrajectory(ctx, "acme", "run-before")
			if err != nil || string(got.Events) != `[{"kind":"span","name":"before"}]` || got.Audience != "alice" || got.EventCount != 1 {
				t.Errorf("GetTrajectory after 0020 = %+v, %v", got, err)
			}
			list, err := s.ListTrajectories(ctx, store.TrajectoryFilter{Workspace: "acme", Viewer: "alice"})
			if err != nil || len(list) != 1 {
				t.Errorf("ListTrajectories after 0020 = %v, %v; want the one", list, err)
			}
		})
	}
}
