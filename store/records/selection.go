package records

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	jsoniter "github.com/json-iterator/go"

	"svc/internal/domain/eval"
	"svc/store"
)

// Selection is the part of a batch's record that grows with the batch and
// never changes after the submit: the case ids it runs
// (Orchestration.CaseIDs) and the manifest's per-case digests
// (Manifest.Cases, Manifest.GradingCases). It is stored apart from the
// record (store.Scorecard.Selection), so that the reads and writes of the
// record (every poll, every start, cancel, finish and scoring pass) cost
// what the record holds, not what the batch selected: at 100,000 cases
// the selection is about 20 MB of JSON, the rest of the record a few KB.
//
// LoadScorecard returns a record without it; the reads that show or need
// it (the detail read, manifest verification, the gate, the case pages of
// the workflow) load it with LoadSelection and Attach it.
type Selection struct {
	CaseIDs      []string          `json:"caseIds,omitempty"`
	Cases        map[string]string `json:"cases,omitempty"`
	GradingCases map[string]string `json:"gradingCases,omitempty"`
}

// empty reports whether s holds nothing.
func (s Selection) empty() bool {
	return len(s.CaseIDs) == 0 && len(s.Cases) == 0 && len(s.GradingCases) == 0
}

// SelectionOf returns what of the selection sc carries.
func SelectionOf(sc eval.Scorecard) Selection {
	var s Selection
	if sc.Orchestration != nil {
		s.CaseIDs = sc.Orchestration.CaseIDs
	}
	if sc.Manifest != nil {
		s.Cases, s.GradingCases = sc.Manifest.Cases, sc.Manifest.GradingCases
	}
	return s
}

// Attach sets the selection's fields of sc to s's. sc's Orchestration and
// Manifest are copied first, so that a record shared with a cache is not
// modified.
func (s Selection) Attach(sc *eval.Scorecard) {
	if s.CaseIDs != nil {
		o := eval.Orchestration{}
		if sc.Orchestration != nil {
			o = *sc.Orchestration
		}
		o.CaseIDs = s.CaseIDs
		sc.Orchestration = &o
	}
	if sc.Manifest != nil && (s.Cases != nil || s.GradingCases != nil) {
		m := *sc.Manifest
		m.Cases, m.GradingCases = s.Cases, s.GradingCases
		sc.Manifest = &m
	}
}

// Only returns the selection restricted to the given cases: their
// manifest digests, and no case ids (a page of a large batch's detail
// read shows the digests of its own cases).
func (s Selection) Only(caseIDs []string) Selection {
	var out Selection
	pick := func(m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		o := make(map[string]string, len(caseIDs))
		for _, id := range caseIDs {
			if d, ok := m[id]; ok {
				o[id] = d
			}
		}
		return o
	}
	out.Cases, out.GradingCases = pick(s.Cases), pick(s.GradingCases)
	return out
}

// detach returns sc without its selection, and the selection's JSON (nil
// when sc carries none). sc's Orchestration and Manifest are copied, not
// modified.
func detach(sc eval.Scorecard) (eval.Scorecard, []byte, error) {
	s := SelectionOf(sc)
	if s.empty() {
		return sc, nil, nil
	}
	doc, err := json.Marshal(s)
	if err != nil {
		return sc, nil, fmt.Errorf("encoding the selection of scorecard %s: %w", sc.ID, err)
	}
	if sc.Orchestration != nil {
		o := *sc.Orchestration
		o.CaseIDs = nil
		sc.Orchestration = &o
	}
	if sc.Manifest != nil {
		m := *sc.Manifest
		m.Cases, m.GradingCases = nil, nil
		sc.Manifest = &m
	}
	return sc, doc, nil
}

// SelectionReader reads a stored selection (store.Scorecards does).
type SelectionReader interface {
	GetScorecardSelection(ctx context.Context, ws, id string) ([]byte, error)
}

// LoadSelection reads the selection of the batch whose record is sc, read
// as row: the one stored apart, or, for a record written before the
// selection moved out of it, what the record itself carries.
func LoadSelection(ctx context.Context, st SelectionReader, sc eval.Scorecard, row store.Scorecard) (Selection, error) {
	if !row.HasSelection {
		s := SelectionOf(sc)
		s.CaseIDs = slices.Clip(s.CaseIDs)
		return s, nil
	}
	doc, err := st.GetScorecardSelection(ctx, row.Workspace, row.ID)
	if err != nil {
		return Selection{}, err
	}
	var s Selection
	if err := json.Unmarshal(doc, &s); err != nil {
		return Selection{}, fmt.Errorf("the stored selection of scorecard %s does not decode: %w", row.ID, err)
	}
	return s, nil
}

// LoadSelectionOf reads what LoadSelection does, restricted to caseIDs as
// Only restricts it: the manifest digests of those cases, and no case ids.
// A stored selection is scanned rather than decoded, keeping only those
// cases' entries: at 100,000 cases decoding it whole costs about 50 MB and
// a third of a second, for a detail page that shows 1,000 digests.
func LoadSelectionOf(ctx context.Context, st SelectionReader, sc eval.Scorecard, row store.Scorecard, caseIDs []string) (Selection, error) {
	if !row.HasSelection {
		return SelectionOf(sc).Only(caseIDs), nil
	}
	doc, err := st.GetScorecardSelection(ctx, row.Workspace, row.ID)
	if err != nil {
		return Selection{}, err
	}
	want := make(map[string]bool, len(caseIDs))
	for _, id := range caseIDs {
		want[id] = true
	}
	var out Selection
	it := jsoniter.ConfigCompatibleWithStandardLibrary.BorrowIterator(doc)
	defer jsoniter.ConfigCompatibleWithStandardLibrary.ReturnIterator(it)
	pick := func() map[string]string {
		m := make(map[string]string, len(caseIDs))
		it.ReadMapCB(func(it *jsoniter.Iterator, id string) bool {
			if want[id] {
				m[id] = it.ReadString()
			} else {
				it.Skip()
			}
			return true
		})
		return m
	}
	it.ReadObjectCB(func(it *jsoniter.Iterator, field string) bool {
		switch field {
		case "cases":
			out.Cases = pick()
		case "gradingCases":
			out.GradingCases = pick()
		default:
			it.Skip()
		}
		return true
	})
	if it.Error != nil {
		return Selection{}, fmt.Errorf("the stored selection of scorecard %s does not decode: %w", row.ID, it.Error)
	}
	return out, nil
}

// LoadScorecardFull reads a batch's record with its selection attached.
func LoadScorecardFull(ctx context.Context, st store.Scorecards, ws, id string) (eval.Scorecard, store.Scorecard, error) {
	sc, row, err := LoadScorecard(ctx, st, ws, id)
	if err != nil {
		return sc, row, err
	}
	sel, err := LoadSelection(ctx, st, sc, row)
	if err != nil {
		return eval.Scorecard{}, row, err
	}
	sel.Attach(&sc)
	return sc, row, nil
}
