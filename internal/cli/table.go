package cli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Output formats of the listing commands (--format). A table is for
// people; csv, jsonl and md are for spreadsheets, scripts and pull-request
// comments, and carry every cell in full.
const (
	formatTable = "table"
	formatCSV   = "csv"
	formatJSONL = "jsonl"
	formatMD    = "md"
)

// formats lists the values --format accepts, for usage lines.
var formats = []string{formatTable, formatCSV, formatJSONL, formatMD}

// checkFormat refuses a --format this binary cannot write.
func checkFormat(f string) error {
	for _, ok := range formats {
		if f == ok {
			return nil
		}
	}
	return fmt.Errorf("%w: --format %q: want one of %s", errUsage, f, strings.Join(formats, ", "))
}

// column is one column of a sheet: its heading in a table, csv and md,
// and its key in jsonl.
type column struct {
	head string // "CASE"
	key  string // "case"
	// clip bounds the column in a table (0: no bound): a long detail is cut
	// with an ellipsis there and given whole in the other formats.
	clip int
}

// sheet is rows of typed cells under columns, written in one of the
// formats. A cell is a string, an int, a float64, a bool, a time.Time or
// nil (unknown); jsonl keeps its type, the other formats print it with
// cellText.
type sheet struct {
	cols []column
	rows [][]any
	// indent prefixes every line of a table ("  " under a heading).
	indent string
}

// add appends a row; it must have one cell per column.
func (s *sheet) add(cells ...any) {
	if len(cells) != len(s.cols) {
		panic(fmt.Sprintf("sheet: a row of %d cells under %d columns", len(cells), len(s.cols)))
	}
	s.rows = append(s.rows, cells)
}

// drop removes the column of key: a table leaves out what says nothing
// (no case is critical).
func (s *sheet) drop(key string) {
	for i, c := range s.cols {
		if c.key != key {
			continue
		}
		s.cols = slices.Delete(s.cols, i, i+1)
		for j, r := range s.rows {
			s.rows[j] = slices.Delete(r, i, i+1)
		}
		return
	}
}

// write writes the sheet in format f (checked by checkFormat).
func (s *sheet) write(w io.Writer, f string) error {
	switch f {
	case formatCSV:
		cw := csv.NewWriter(w)
		head := make([]string, len(s.cols))
		for i, c := range s.cols {
			head[i] = c.key
		}
		cw.Write(head)
		for _, r := range s.rows {
			rec := make([]string, len(r))
			for i, v := range r {
				rec[i] = cellText(v)
			}
			cw.Write(rec)
		}
		cw.Flush()
		return cw.Error()
	case formatJSONL:
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, r := range s.rows {
			// An ordered object: the columns' order, not the keys' sorted one.
			var b strings.Builder
			b.WriteByte('{')
			for i, v := range r {
				if i > 0 {
					b.WriteByte(',')
				}
				k, _ := json.Marshal(s.cols[i].key)
				b.Write(k)
				b.WriteByte(':')
				if t, ok := v.(time.Time); ok {
					v = t.UTC().Format(time.RFC3339)
				}
				val, err := json.Marshal(v)
				if err != nil {
					return err
				}
				b.Write(val)
			}
			b.WriteString("}\n")
			if _, err := io.WriteString(w, b.String()); err != nil {
				return err
			}
		}
		return nil
	case formatMD:
		line := func(cells []string) {
			io.WriteString(w, "| "+strings.Join(cells, " | ")+" |\n")
		}
		head := make([]string, len(s.cols))
		rule := make([]string, len(s.cols))
		for i, c := range s.cols {
			head[i], rule[i] = c.head, "---"
		}
		line(head)
		line(rule)
		for _, r := range s.rows {
			cells := make([]string, len(r))
			for i, v := range r {
				cells[i] = strings.ReplaceAll(singleLine(cellText(v)), "|", `\|`)
			}
			line(cells)
		}
		return nil
	}
	tw := newTable(w)
	head := make([]string, len(s.cols))
	for i, c := range s.cols {
		head[i] = c.head
	}
	fmt.Fprintln(tw, s.indent+strings.Join(head, "\t"))
	for _, r := range s.rows {
		cells := make([]string, len(r))
		for i, v := range r {
			t := singleLine(cellText(v))
			if t == "" {
				t = "-"
			}
			cells[i] = clipText(t, s.cols[i].clip)
		}
		fmt.Fprintln(tw, s.indent+strings.Join(cells, "\t"))
	}
	tw.Flush()
	return nil
}

// cellText prints a cell: floats with four significant digits (0.6667,
// not 0.6666666666666666), times to the minute in UTC, nil as "".
func cellText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return num(x)
	case *float64:
		if x == nil {
			return ""
		}
		return num(*x)
	case bool:
		return yes(x)
	case time.Time:
		if x.IsZero() {
			return ""
		}
		return x.UTC().Format("2006-01-02 15:04")
	}
	return fmt.Sprint(v)
}

// singleLine makes a cell one line: line breaks and tabs become spaces, so a
// multi-line detail cannot break a table's rows or columns.
func singleLine(s string) string {
	if !strings.ContainsAny(s, "\r\n\t") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// clipText cuts s to n runes with an ellipsis; n 0 leaves it whole.
func clipText(s string, n int) string {
	if n <= 0 {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
