package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"svc/internal/platform/derrors"
)

// seedSpecs adds the example specs of kind (and their canonical forms) and a
// few near misses to a fuzz corpus.
func seedSpecs(f *testing.F, kind Kind) {
	for _, name := range specFiles(f) {
		if kindOfFile(name) != kind {
			continue
		}
		raw := readSpec(f, name)
		f.Add(raw, true)
		f.Add(raw, false)
		if s, err := Parse(kind, raw, false); err == nil {
			f.Add(s.Canonical(), false)
		}
		f.Add(raw[:len(raw)/2], true)
		f.Add(bytes.Replace(raw, []byte(`"id"`), []byte(`"ID"`), 1), true)
	}
	f.Add([]byte(`{}`), true)
	f.Add([]byte(`null`), true)
	f.Add([]byte(`{"kind":null,"id":1e999}`), false)
}

// fuzzParse checks the properties every kind's parser must have: it never
// panics; it fails only with ErrInvalid; and a spec it accepts reads back
// from its canonical form as a stored spec, to the same bytes and digest.
func fuzzParse(t *testing.T, kind Kind, raw []byte, forNew bool) {
	s, err := Parse(kind, raw, forNew)
	if err != nil {
		if !errors.Is(err, derrors.ErrInvalid) {
			t.Fatalf("Parse failed without ErrInvalid: %v", err)
		}
		var ve *ValidationError
		if errors.As(err, &ve) && len(ve.Problems) == 0 {
			t.Fatalf("a ValidationError without problems")
		}
		return
	}
	if s.Digest() != Digest(s.Canonical()) {
		t.Fatalf("Digest() is not the digest of Canonical()")
	}
	if !json.Valid(s.Canonical()) {
		t.Fatalf("canonical form is not JSON: %s", s.Canonical())
	}
	back, err := Parse(kind, s.Canonical(), false)
	if err != nil {
		t.Fatalf("the canonical form of an accepted spec is refused: %v\n%s", err, s.Canonical())
	}
	if !bytes.Equal(back.Canonical(), s.Canonical()) {
		t.Fatalf("canonical form is not a fixed point:\n%s\n%s", s.Canonical(), back.Canonical())
	}
	if forNew {
		if _, err := Parse(kind, raw, false); err != nil {
			t.Fatalf("accepted for registration but refused as stored: %v", err)
		}
	}
	if _, err := s.Parts(); err != nil {
		t.Fatalf("Parts: %v", err)
	}
}

func FuzzParseDataset(f *testing.F) {
	seedSpecs(f, Dataset)
	f.Fuzz(func(t *testing.T, raw []byte, forNew bool) {
		fuzzParse(t, Dataset, raw, forNew)
		s, err := Parse(Dataset, raw, forNew)
		if err != nil {
			return
		}
		p, err := s.Parts()
		if err != nil {
			t.Fatal(err)
		}
		full, err := JoinCases(p.Header, p.Cases)
		if err != nil {
			t.Fatalf("JoinCases: %v", err)
		}
		if Digest(full) != s.Digest() {
			t.Fatalf("JoinCases does not rebuild the digested spec:\n%s\n%s", full, s.Canonical())
		}
		if _, err := DiffDatasets(s.Dataset(), s.Dataset()); err != nil {
			t.Fatalf("DiffDatasets: %v", err)
		}
	})
}

func FuzzParseHarness(f *testing.F) {
	seedSpecs(f, Harness)
	f.Fuzz(func(t *testing.T, raw []byte, forNew bool) { fuzzParse(t, Harness, raw, forNew) })
}

func FuzzParseHarnessTemplate(f *testing.F) {
	seedSpecs(f, HarnessTemplate)
	inst := mustParse(f, "harness-instance", true).Harness()
	f.Fuzz(func(t *testing.T, raw []byte, forNew bool) {
		fuzzParse(t, HarnessTemplate, raw, forNew)
		s, err := Parse(HarnessTemplate, raw, forNew)
		if err != nil {
			return
		}
		// Resolving any valid template never panics, and fails only with
		// ErrInvalid.
		tmpl := s.HarnessTemplate()
		i := *inst
		i.Template = &Ref{ID: tmpl.ID, Version: tmpl.Version}
		i.Pins = map[string]any{}
		for _, prm := range tmpl.Parameters {
			i.Pins[prm.Path] = "acme/x:1"
		}
		if _, err := ResolveInstance(tmpl, &i); err != nil && !errors.Is(err, derrors.ErrInvalid) {
			t.Fatalf("ResolveInstance: %v", err)
		}
	})
}

func FuzzParseJudge(f *testing.F) {
	seedSpecs(f, Judge)
	f.Fuzz(func(t *testing.T, raw []byte, forNew bool) {
		fuzzParse(t, Judge, raw, forNew)
		if s, err := Parse(Judge, raw, true); err == nil && s.Judge().Kind != JudgeCode {
			t.Fatalf("a %s judge was accepted for registration", s.Judge().Kind)
		}
	})
}

func FuzzParseRubric(f *testing.F) {
	seedSpecs(f, Rubric)
	f.Fuzz(func(t *testing.T, raw []byte, forNew bool) { fuzzParse(t, Rubric, raw, forNew) })
}

func FuzzParseRuntime(f *testing.F) {
	seedSpecs(f, Runtime)
	f.Fuzz(func(t *testing.T, raw []byte, forNew bool) {
		fuzzParse(t, Runtime, raw, forNew)
		if s, err := Parse(Runtime, raw, forNew); err == nil {
			for _, n := range s.SecretNames() {
				if err := ValidateSecretName(n); err != nil {
					t.Fatalf("accepted secret name %q fails ValidateSecretName: %v", n, err)
				}
			}
		}
	})
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1.50,-0,1e3,"x"]}`, `"<\u2028>"`, `[{"a":{"b":{}}},null,true]`, `1E-7`, `{"a":1,"a":2}`, `"\ud800"`, `0.1e+400`} {
		f.Add([]byte(s))
	}
	for _, name := range specFiles(f) {
		f.Add(readSpec(f, name))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := CanonicalJSON(data)
		if err != nil {
			if !errors.Is(err, derrors.ErrInvalid) {
				t.Fatalf("CanonicalJSON failed without ErrInvalid: %v", err)
			}
			return
		}
		c2, err := CanonicalJSON(c)
		if err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("not idempotent: %s -> %s (%v)", c, c2, err)
		}
		if !json.Valid(c) || !utf8.Valid(c) {
			t.Fatalf("canonical form is not valid JSON: %q", c)
		}
		// Same meaning: both decode to the same values (numbers as float64,
		// which exact decimal normalisation cannot change).
		var a, b any
		if json.Unmarshal(data, &a) != nil || json.Unmarshal(c, &b) != nil {
			t.Fatalf("accepted input or output does not decode")
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("meaning changed:\n%s\n%s", data, c)
		}
	})
}

func FuzzNormalizeTags(f *testing.F) {
	f.Add(" a, b ,a,,\tc")
	f.Add(strings.Repeat("x,", 25))
	f.Add(strings.Repeat("é", 61))
	f.Fuzz(func(t *testing.T, joined string) {
		got, err := NormalizeTags(strings.Split(joined, ","))
		if err != nil {
			if !errors.Is(err, derrors.ErrInvalid) {
				t.Fatalf("NormalizeTags failed without ErrInvalid: %v", err)
			}
			return
		}
		if len(got) > maxTags {
			t.Fatalf("%d tags", len(got))
		}
		seen := map[string]bool{}
		for _, tag := range got {
			if tag == "" || strings.TrimSpace(tag) != tag || utf8.RuneCountInString(tag) > maxTagLen || seen[tag] {
				t.Fatalf("bad tag %q in %q", tag, got)
			}
			seen[tag] = true
		}
		again, err := NormalizeTags(got)
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("not idempotent: %q -> %q (%v)", got, again, err)
		}
	})
}

func FuzzParseOrigin(f *testing.F) {
	f.Add([]byte(`{"via":"mcp","from":{"type":"run","id":"r1"},"note":"x"}`))
	f.Add([]byte(`{"via":"web"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		o, canon, err := ParseOrigin(raw)
		if err != nil {
			if !errors.Is(err, derrors.ErrInvalid) {
				t.Fatalf("ParseOrigin failed without ErrInvalid: %v", err)
			}
			return
		}
		o2, canon2, err := ParseOrigin(canon)
		if err != nil || !bytes.Equal(canon, canon2) || !reflect.DeepEqual(o, o2) {
			t.Fatalf("canonical origin does not read back: %s -> %s (%v)", canon, canon2, err)
		}
	})
}

func FuzzPath(f *testing.F) {
	for _, s := range []string{"a.b[0]", `env["A.B"]`, `meta["a]b"][2].c`, "[0][1]", `["\u0000"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		segs, err := parsePath(p)
		if err != nil {
			return
		}
		canon := formatPath(segs)
		again, err := parsePath(canon)
		if err != nil {
			t.Fatalf("formatPath(%q) = %q does not parse: %v", p, canon, err)
		}
		if !reflect.DeepEqual(segs, again) {
			t.Fatalf("%q -> %q: segments differ %v %v", p, canon, segs, again)
		}
	})
}

func FuzzDiffSpecs(f *testing.F) {
	f.Add([]byte(`{"a":[1,2],"b":{"c":1}}`), []byte(`{"a":[1],"b":{"c":2},"d":null}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		changes, err := DiffSpecs(a, b)
		if err != nil {
			if !errors.Is(err, derrors.ErrInvalid) {
				t.Fatalf("DiffSpecs failed without ErrInvalid: %v", err)
			}
			return
		}
		ca, _ := CanonicalJSON(a)
		cb, _ := CanonicalJSON(b)
		if (len(changes) == 0) != bytes.Equal(ca, cb) {
			t.Fatalf("%d changes between %s and %s", len(changes), ca, cb)
		}
		for _, c := range changes {
			if c.Path != "" {
				if _, err := parsePath(c.Path); err != nil {
					t.Fatalf("change path %q does not parse: %v", c.Path, err)
				}
			}
		}
	})
}
