package scorecards

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/scoring"
	"svc/store"
	"svc/store/records"
)

// kidSet is a batch's child runs as the cache last read them, and what the
// detail read makes of them: the per-case table, caseRuns, the summary and
// the progress counts. A read that finds a child changed makes these anew
// (copy on write): earlier reads still hold the old ones.
type kidSet struct {
	valid bool
	byID  map[string]*kid // every child read, shown or not
	// shown holds the shown children (canonical, visible) as their
	// rowKeys, sorted: the table's order, by case, then trial, then run.
	shown []string
	// mark is the latest UpdatedAt read; seen is the store's latest at
	// the last read, and swept when the last read that compared the
	// states of all the children began (service clock).
	mark  time.Time
	seen  time.Time
	swept time.Time

	rows     []eval.CaseRow // of the shown children, in shown's order; nil when dirty
	caseRuns map[string]string
	summary  map[string]eval.MetricSummary // of rows; nil until asked for
	// counts counts the canonical children of every audience, as
	// ChildRunCounts counts the stored ones.
	counts store.RunCounts

	// The JSON of the table, in chunks of neighbouring rows, each made
	// anew when one of its rows changes; and of caseRuns, with its keys
	// sorted (nil when to be made from the map). See docTemplate.
	chunks       []tableChunk
	caseRunsJSON []byte
	caseKeys     []string

	dirty bool // rows and summary are to be made anew
	// dupKeys: two shown children had one caseRuns key (a case and trial
	// with two canonical runs, which the store's unique index rules out),
	// so caseRuns is made whole from the sorted rows, the later run
	// winning, as a fresh read makes it.
	dupKeys bool
}

// rowKey is the key a shown child sorts by in the table: its case id,
// then its trial in numeric order, then its run id. A NUL sorts below
// every byte an id may hold, so a case id that is a prefix of another
// sorts first, as in caseRuns' keys.
func rowKey(caseID string, trial int, runID string) string {
	return fmt.Sprintf("%s\x00%010d\x00%s", caseID, trial, runID)
}

// runOfKey is the run id in a rowKey.
func runOfKey(key string) string { return key[strings.LastIndexByte(key, 0)+1:] }

// kid is one child run: its state, and its case row when shown, with the
// row's JSON once asked for.
type kid struct {
	state store.ChildRunState
	shown bool
	row   eval.CaseRow
	json  []byte
}

func stateOf(r store.Run) store.ChildRunState {
	return store.ChildRunState{ID: r.ID, Status: r.Status, Outcome: r.Outcome, Audience: r.Audience,
		Canonical: r.Canonical, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// sameState reports whether two states of a run are the same write: every
// writer stamps UpdatedAt anew.
func sameState(a, b store.ChildRunState) bool {
	return a.UpdatedAt.Equal(b.UpdatedAt) && a.Status == b.Status && a.Outcome == b.Outcome &&
		a.Audience == b.Audience && a.Canonical == b.Canonical && a.CreatedAt.Equal(b.CreatedAt)
}

// readKids brings d.kids up to date: the children that changed since the
// last read, or all of them when there was none. sweep asks for a
// comparison of every child's state (the record changed: the batch may
// have finished).
func (d *batchDetail) readKids(ctx context.Context, st Store, sweep bool, now func() time.Time) error {
	k := &d.kids
	ws, id := d.key.workspace, d.key.id
	start := now()
	last, err := st.ChildRunsUpdatedAt(ctx, ws, id)
	if err != nil {
		return err
	}
	settled := last.Add(lateCommit)
	due := k.swept.Add(sweepEvery)
	if k.valid && !sweep && last.Equal(k.seen) && !k.swept.Before(settled) && start.Before(due) {
		return nil // nothing changed since a sweep that came after every write settled
	}
	sweep = sweep || !k.valid || !start.Before(settled) || !start.Before(due)
	var fresh []store.Run
	if !k.valid {
		if fresh, err = st.ListChildRuns(ctx, ws, id, nil); err != nil {
			return err
		}
	} else {
		since := k.mark.Add(-lateCommit)
		if sweep {
			since = time.Time{}
		}
		states, err := st.ListChildRunStates(ctx, ws, id, since)
		if err != nil {
			return err
		}
		var changed []string
		for _, s := range states {
			if old := k.byID[s.ID]; old == nil || !sameState(old.state, s) {
				changed = append(changed, s.ID)
			}
		}
		if len(changed) > 0 {
			if fresh, err = st.ListChildRuns(ctx, ws, id, changed); err != nil {
				return err
			}
		}
	}
	// Decode before changing anything, so that an error leaves k as it was.
	next := make([]kid, len(fresh))
	for i, r := range fresh {
		next[i] = kid{state: stateOf(r), shown: records.Counted(r)}
		if next[i].shown {
			run, err := records.FromRow(r)
			if err != nil {
				return err
			}
			next[i].row = scoring.CaseRow(d.policy, run)
		}
	}
	if !k.valid {
		*k = kidSet{valid: true, byID: make(map[string]*kid, len(next)),
			caseRuns: make(map[string]string, len(next)), counts: store.RunCounts{ByStatus: map[string]int{}, ByOutcome: map[string]int{}}}
	}
	k.apply(next)
	// The time read before the children: a write since then changes the
	// next read's, and that read looks again.
	k.seen = last
	if sweep {
		k.swept = start
	}
	return nil
}

// apply records the children read anew.
func (k *kidSet) apply(next []kid) {
	if len(next) == 0 {
		return
	}
	k.dirty, k.rows, k.summary = true, nil, nil
	caseRuns := k.caseRuns // cloned before its first change
	cloned := false
	setKey := func(key, id string) {
		if !cloned {
			caseRuns, cloned = maps.Clone(caseRuns), true
		}
		_, had := caseRuns[key]
		i, _ := slices.BinarySearch(k.caseKeys, key)
		switch {
		case id == "":
			delete(caseRuns, key)
			if had && k.caseKeys != nil {
				k.caseKeys = slices.Delete(k.caseKeys, i, i+1)
			}
		default:
			caseRuns[key] = id
			if !had && k.caseKeys != nil {
				k.caseKeys = slices.Insert(k.caseKeys, i, key)
			}
		}
	}
	c := store.RunCounts{Total: k.counts.Total, ByStatus: maps.Clone(k.counts.ByStatus),
		ByOutcome: maps.Clone(k.counts.ByOutcome), FirstCreatedAt: k.counts.FirstCreatedAt}
	recount := false // FirstCreatedAt may have been a child's that left the count
	for i := range next {
		n := &next[i]
		id := n.state.ID
		if n.state.UpdatedAt.After(k.mark) {
			k.mark = n.state.UpdatedAt
		}
		old := k.byID[id]
		k.byID[id] = n
		if old != nil && old.state.Canonical {
			s := old.state
			c.Total--
			dec(c.ByStatus, s.Status)
			if s.Outcome != "" {
				dec(c.ByOutcome, s.Outcome)
			}
			recount = recount || s.CreatedAt.Equal(c.FirstCreatedAt)
		}
		if s := n.state; s.Canonical {
			c.Total++
			c.ByStatus[s.Status]++
			if s.Outcome != "" {
				c.ByOutcome[s.Outcome]++
			}
			if c.FirstCreatedAt.IsZero() || s.CreatedAt.Before(c.FirstCreatedAt) {
				c.FirstCreatedAt = s.CreatedAt
			}
		}
		var oldKey, newKey, oldRow, newRow string
		if old != nil && old.shown {
			oldKey = CaseRunKey(old.row.CaseID, old.row.Trial)
			oldRow = rowKey(old.row.CaseID, old.row.Trial, id)
			k.staleChunk(oldRow)
		}
		if n.shown {
			newKey = CaseRunKey(n.row.CaseID, n.row.Trial)
			newRow = rowKey(n.row.CaseID, n.row.Trial, id)
			k.staleChunk(newRow)
		}
		if oldKey != newKey {
			if oldKey != "" && caseRuns[oldKey] == id {
				setKey(oldKey, "")
			}
			if newKey != "" {
				if other, ok := caseRuns[newKey]; ok && other != id {
					k.dupKeys = true
				}
				setKey(newKey, id)
			}
		}
		if oldRow != newRow {
			if oldRow != "" {
				if i, found := slices.BinarySearch(k.shown, oldRow); found {
					k.shown = slices.Delete(k.shown, i, i+1)
				}
			}
			if newRow != "" {
				if i, found := slices.BinarySearch(k.shown, newRow); !found {
					k.shown = slices.Insert(k.shown, i, newRow)
				}
			}
		}
	}
	if recount {
		c.FirstCreatedAt = time.Time{}
		for _, n := range k.byID {
			if s := n.state; s.Canonical && (c.FirstCreatedAt.IsZero() || s.CreatedAt.Before(c.FirstCreatedAt)) {
				c.FirstCreatedAt = s.CreatedAt
			}
		}
	}
	if cloned {
		k.caseRuns, k.caseRunsJSON = caseRuns, nil
	}
	k.counts = c
}

// dec takes one from m[key], dropping the key at zero as the store's
// counts have no zero entries.
func dec(m map[string]int, key string) {
	if m[key] <= 1 {
		delete(m, key)
		return
	}
	m[key]--
}

// table returns the per-case table, made anew after a change.
func (k *kidSet) table() []eval.CaseRow {
	if !k.dirty {
		return k.rows
	}
	k.rows = make([]eval.CaseRow, 0, len(k.shown))
	for _, key := range k.shown {
		k.rows = append(k.rows, k.byID[runOfKey(key)].row)
	}
	if k.dupKeys {
		// In table order, the later run (by id) of a key winning.
		k.caseRuns, k.caseRunsJSON, k.caseKeys = make(map[string]string, len(k.rows)), nil, nil
		k.dupKeys = false
		for _, r := range k.rows {
			key := CaseRunKey(r.CaseID, r.Trial)
			if _, ok := k.caseRuns[key]; ok {
				k.dupKeys = true
			}
			k.caseRuns[key] = r.RunID
		}
	}
	k.dirty = false
	return k.rows
}
