package scorecards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"sort"
	"strings"

	"svc/internal/domain/eval"
)

// A docTemplate is the JSON of a batch's detail read with holes where the
// pieces go that change between reads: the per-case table, caseRuns, the
// summary, the steps and the progress. The rest (the record, with its
// selection and manifest, hundreds of KB for a large batch) is encoded
// once per version of the record, the table one row at a time as rows
// change, and a read fills the holes.
//
// encoding/json makes the template: it encodes the answer with a marker
// in each hole (a value no stored document can hold: text with a NUL,
// which the store refuses) and the template is cut at the markers. The
// bytes are the ones json.Marshal gives for the whole answer, which the
// tests check at every step of a batch's life.
type docTemplate struct {
	shape docShape
	parts [][]byte // parts[i] comes before holes[i]; one more part than holes
	holes []hole
}

// docShape is what a template is good for: the record's version, and which
// of the omitempty pieces are there (an empty one is left out, its key
// too).
type docShape struct {
	version                        int64
	rows, caseRuns, summary, steps bool
	// page names the page (its cursor, limit, length, first and last
	// rows), "" for the whole table: a page shows the manifest digests of
	// its own cases.
	page string
}

type hole int

const (
	holeRows hole = iota
	holeCaseRuns
	holeSummary
	holeSteps
	holeProgress
)

// holeText marks a hole: the store refuses NUL in any text it keeps, so
// no stored value encodes to it.
const holeText = "\x00svc:hole\x00"

// progressMarker marks the progress hole: Progress has no text, but
// nothing counts below zero, and a template is made only when each marker
// occurs once.
var progressMarker = eval.Progress{Total: math.MinInt64, Done: math.MinInt64, Passed: math.MinInt64,
	Failed: math.MinInt64, Cancelled: math.MinInt64, Queued: math.MinInt64, Running: math.MinInt64}

// newDocTemplate makes the template of sc's shape, or returns nil when a
// marker does not occur exactly once (then the answer is encoded whole).
func newDocTemplate(sc eval.Scorecard, shape docShape) (*docTemplate, error) {
	type mark struct {
		h   hole
		v   any
		at  int
		enc []byte
	}
	sc.Progress = progressMarker
	marks := []mark{{h: holeProgress, v: sc.Progress}}
	if shape.rows {
		sc.Scorecard = []eval.CaseRow{{CaseID: holeText}}
		marks = append(marks, mark{h: holeRows, v: sc.Scorecard})
	}
	if shape.caseRuns {
		sc.CaseRuns = map[string]string{holeText: ""}
		marks = append(marks, mark{h: holeCaseRuns, v: sc.CaseRuns})
	}
	if shape.summary {
		sc.Summary = map[string]eval.MetricSummary{holeText: {}}
		marks = append(marks, mark{h: holeSummary, v: sc.Summary})
	}
	if shape.steps {
		sc.Steps = []eval.Step{{Phase: holeText}}
		marks = append(marks, mark{h: holeSteps, v: sc.Steps})
	}
	doc, err := json.Marshal(sc)
	if err != nil {
		return nil, err
	}
	for i := range marks {
		if marks[i].enc, err = json.Marshal(marks[i].v); err != nil {
			return nil, err
		}
		if bytes.Count(doc, marks[i].enc) != 1 {
			return nil, nil
		}
		marks[i].at = bytes.Index(doc, marks[i].enc)
	}
	slices.SortFunc(marks, func(a, b mark) int { return a.at - b.at })
	t := &docTemplate{shape: shape}
	from := 0
	for _, m := range marks {
		t.parts = append(t.parts, doc[from:m.at])
		t.holes = append(t.holes, m.h)
		from = m.at + len(m.enc)
	}
	t.parts = append(t.parts, doc[from:])
	return t, nil
}

// encode returns sc, the answer of this read of d, as json.Encoder writes
// it, in pieces: the template's, shared by the reads of a version, and the
// holes' (the table's, shared until a row changes). No piece is written
// again. With page, sc holds one page of the table (see pageOf) and the
// answer is PagedScorecard's: the page's rows and caseRuns, and
// scorecardPage last. The caller holds d.mu.
func (d *batchDetail) encode(sc eval.Scorecard, page *ScorecardPage) (net.Buffers, error) {
	shape := docShape{version: d.version, rows: len(sc.Scorecard) > 0, caseRuns: len(sc.CaseRuns) > 0,
		summary: len(sc.Summary) > 0, steps: len(sc.Steps) > 0}
	if page != nil {
		// Rows only join a table, in its order: the page's bounds and
		// length name the cases it holds.
		shape.page = fmt.Sprintf("%d:%s:%d", page.Limit, page.After, len(sc.Scorecard))
		if n := len(sc.Scorecard); n > 0 {
			shape.page += ":" + CaseRunKey(sc.Scorecard[0].CaseID, sc.Scorecard[0].Trial) + ":" + CaseRunKey(sc.Scorecard[n-1].CaseID, sc.Scorecard[n-1].Trial)
		}
	}
	if d.tmpl == nil || d.tmpl.shape != shape {
		t, err := newDocTemplate(sc, shape)
		if err != nil {
			return nil, err
		}
		if t == nil {
			var doc []byte
			var err error
			if page != nil {
				doc, err = json.Marshal(PagedScorecard{Scorecard: sc, ScorecardPage: page})
			} else {
				doc, err = json.Marshal(sc)
			}
			return net.Buffers{doc, newline}, err
		}
		d.tmpl = t
	}
	doc := make(net.Buffers, 0, 2*len(d.tmpl.holes)+4)
	for i, h := range d.tmpl.holes {
		doc = append(doc, d.tmpl.parts[i])
		var fill []byte
		var err error
		switch h {
		case holeRows:
			if page != nil {
				fill, err = d.kids.rowsJSON(sc.Scorecard)
				break
			}
			var rows [][]byte
			if rows, err = d.kids.tablePieces(); err == nil {
				doc = append(doc, rows[:len(rows)-1]...)
				fill = rows[len(rows)-1]
			}
		case holeCaseRuns:
			if page != nil {
				fill, err = json.Marshal(sc.CaseRuns)
				break
			}
			fill = d.kids.caseRunsJSONOf()
		case holeSummary:
			fill, err = json.Marshal(sc.Summary)
		case holeSteps:
			var steps []byte
			if steps, err = d.stepsJSONOf(sc.Steps); err == nil {
				doc = append(doc, openArray, steps)
				fill = closeArray
			}
		case holeProgress:
			fill, err = json.Marshal(sc.Progress)
		}
		if err != nil {
			return nil, err
		}
		doc = append(doc, fill)
	}
	last := d.tmpl.parts[len(d.tmpl.holes)]
	if page == nil {
		return append(doc, last, newline), nil
	}
	// PagedScorecard's JSON: the record's fields, then scorecardPage, the
	// last field, before the object's closing brace.
	enc, err := json.Marshal(page)
	if err != nil {
		return nil, err
	}
	tail := make([]byte, 0, len(enc)+len(`,"scorecardPage":}`))
	tail = append(append(append(tail, `,"scorecardPage":`...), enc...), '}')
	return append(doc, last[:len(last)-1], tail, newline), nil
}

// rowsJSON is the JSON of rows, a page of the table, as encoding/json
// writes the slice: each row's JSON as the table keeps it, encoded once
// after the row changed. The caller holds the batch's mu.
func (k *kidSet) rowsJSON(rows []eval.CaseRow) ([]byte, error) {
	b := []byte{'['}
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		n := k.byID[r.RunID]
		if n == nil || !n.shown {
			// Not the table's row (a read rebuilt without the cache).
			enc, err := json.Marshal(r)
			if err != nil {
				return nil, err
			}
			b = append(b, enc...)
			continue
		}
		if n.json == nil {
			enc, err := json.Marshal(n.row)
			if err != nil {
				return nil, err
			}
			n.json = enc
		}
		b = append(b, n.json...)
	}
	return append(b, ']'), nil
}

var (
	newline    = []byte("\n")
	comma      = []byte(",")
	openArray  = []byte("[")
	closeArray = []byte("]")
)

// chunkRows is how many rows a chunk of the table's JSON starts with; a
// chunk that grows to twice that makes the chunks anew.
const chunkRows = 64

// tableChunk is the JSON of the shown children from first (included) to
// the next chunk's first (excluded): the rows, comma-separated; nil when
// to be made anew. first is a rowKey; the first chunk's is "", before
// any key.
type tableChunk struct {
	first string
	json  []byte
}

// staleChunk marks the chunk of the table that holds the row of key (a
// rowKey) to be made anew.
func (k *kidSet) staleChunk(key string) {
	if i := sort.Search(len(k.chunks), func(i int) bool { return k.chunks[i].first > key }) - 1; i >= 0 {
		k.chunks[i].json = nil
	}
}

// tablePieces returns the JSON of the per-case table in pieces: each row
// encoded once after it changed, and each chunk of rows joined once after
// one of its rows changed.
func (k *kidSet) tablePieces() ([][]byte, error) {
	if k.chunks == nil {
		for i := 0; i < len(k.shown); i += chunkRows {
			first := k.shown[i]
			if i == 0 {
				first = ""
			}
			k.chunks = append(k.chunks, tableChunk{first: first})
		}
	}
	pieces := make([][]byte, 0, 2*len(k.chunks)+1)
	pieces = append(pieces, openArray)
	for i := range k.chunks {
		c := &k.chunks[i]
		lo, hi := 0, len(k.shown)
		if i > 0 {
			lo, _ = slices.BinarySearch(k.shown, c.first)
		}
		if i+1 < len(k.chunks) {
			hi, _ = slices.BinarySearch(k.shown, k.chunks[i+1].first)
		}
		if hi-lo > 2*chunkRows {
			k.chunks = nil // grown lopsided: chunks anew
			return k.tablePieces()
		}
		if c.json == nil {
			size := 0
			for _, key := range k.shown[lo:hi] {
				n := k.byID[runOfKey(key)]
				if n.json == nil {
					enc, err := json.Marshal(n.row)
					if err != nil {
						return nil, err
					}
					n.json = enc
				}
				size += len(n.json) + 1
			}
			b := make([]byte, 0, size)
			for j, key := range k.shown[lo:hi] {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, k.byID[runOfKey(key)].json...)
			}
			c.json = b
		}
		if len(c.json) == 0 {
			continue
		}
		if len(pieces) > 1 {
			pieces = append(pieces, comma)
		}
		pieces = append(pieces, c.json)
	}
	return append(pieces, closeArray), nil
}

// caseRunsJSONOf returns the JSON of caseRuns, as encoding/json writes a
// map: keys in byte order, strings escaped as it escapes them.
func (k *kidSet) caseRunsJSONOf() []byte {
	if k.caseRunsJSON != nil {
		return k.caseRunsJSON
	}
	if k.caseKeys == nil {
		k.caseKeys = slices.Sorted(maps.Keys(k.caseRuns))
	}
	size := 2
	plain := true
	for _, key := range k.caseKeys {
		id := k.caseRuns[key]
		size += len(key) + len(id) + 6
		plain = plain && plainJSON(key) && plainJSON(id)
	}
	if !plain {
		// Case ids with characters JSON escapes: encoding/json does it.
		k.caseRunsJSON, _ = json.Marshal(k.caseRuns) // strings always encode
		return k.caseRunsJSON
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, key := range k.caseKeys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), key...), `":"`...)
		b = append(append(b, k.caseRuns[key]...), '"')
	}
	k.caseRunsJSON = append(b, '}')
	return k.caseRunsJSON
}

// plainJSON reports whether encoding/json writes s as it is between
// quotes: printable ASCII without the characters it escapes (it escapes
// <, > and & for HTML).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return !strings.ContainsAny(s, `"\<>&`)
}

// stepsJSONOf returns the JSON of steps, the first ones of d.steps,
// without the brackets: each step encoded once (steps are only ever
// appended, and so is d.stepsJSON: the bytes returned are never written
// again).
func (d *batchDetail) stepsJSONOf(steps []eval.Step) ([]byte, error) {
	if d.stepsEncoded > len(steps) {
		d.stepsJSON, d.stepsEncoded = nil, 0
	}
	for _, s := range steps[d.stepsEncoded:] {
		enc, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		if d.stepsEncoded > 0 {
			d.stepsJSON = append(d.stepsJSON, ',')
		}
		d.stepsJSON = append(d.stepsJSON, enc...)
		d.stepsEncoded++
	}
	return slices.Clip(d.stepsJSON), nil
}
