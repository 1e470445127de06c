package records

import (
	"encoding/json"
	"fmt"
	"io"

	jsoniter "github.com/json-iterator/go"

	"svc/internal/domain/eval"
	"svc/store"
)

// Row is the stored form of run: its indexed columns and the document.
func Row(run eval.Run) (store.Run, error) {
	doc, err := json.Marshal(run)
	if err != nil {
		return store.Run{}, fmt.Errorf("records: encoding run %s: %w", run.ID, err)
	}
	return store.Run{
		ID:                run.ID,
		Workspace:         run.Tenant,
		Kind:              run.Kind,
		Status:            string(run.Status),
		Audience:          run.Audience(),
		CreatedBy:         run.CreatedBy,
		ParentScorecardID: run.ParentScorecardID,
		CaseID:            run.CaseID,
		Trial:             run.Trial,
		Canonical:         run.Canonical != nil && *run.Canonical,
		Outcome:           run.Outcome(),
		Doc:               doc,
		CreatedAt:         run.CreatedAt,
		UpdatedAt:         run.UpdatedAt,
	}, nil
}

// FromRow decodes a stored run.
func FromRow(r store.Run) (eval.Run, error) {
	var run eval.Run
	if err := json.Unmarshal(r.Doc, &run); err != nil {
		return eval.Run{}, fmt.Errorf("records: stored run %s does not decode: %w", r.ID, err)
	}
	run.CreatedAt, run.UpdatedAt = r.CreatedAt, r.UpdatedAt
	return run, nil
}

// AttemptsOf returns the attempt count of a stored run, reading only
// that field of its doc (a finish needs no more of the stored run).
func AttemptsOf(r store.Run) (int, error) {
	it := jsoniter.ConfigCompatibleWithStandardLibrary.BorrowIterator(r.Doc)
	defer jsoniter.ConfigCompatibleWithStandardLibrary.ReturnIterator(it)
	n := 0
	if it.WhatIsNext() != jsoniter.ObjectValue {
		return 0, fmt.Errorf("records: stored run %s is not a JSON object", r.ID)
	}
	for field := it.ReadObject(); field != ""; field = it.ReadObject() {
		if field == "attempts" {
			n = it.ReadInt()
		} else {
			it.Skip()
		}
	}
	if it.Error != nil && it.Error != io.EOF {
		return 0, fmt.Errorf("records: stored run %s does not decode: %w", r.ID, it.Error)
	}
	return n, nil
}
