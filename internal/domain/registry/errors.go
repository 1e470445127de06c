package registry

import (
	"fmt"
	"strings"

	"svc/internal/platform/derrors"
)

// Problem is one reason a spec was refused: where, and what to fix.
type Problem struct {
	// Path locates the offending value from the root of the document, in
	// the path syntax of FieldChange ("cases[2].graders[0].id",
	// `env["A.B"]`); empty for the document as a whole.
	Path string `json:"path"`
	// Message states the rule the value breaks, written for the client.
	Message string `json:"message"`

	// missing marks a "required" problem, which a template may leave to a
	// parameter (see HarnessTemplateSpec).
	missing bool
}

// String renders the problem as "path: message".
func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// ValidationError is a refused spec: every problem found, in document order
// as far as the checks go. It wraps derrors.ErrInvalid, so the API answers
// 400; an API layer that wants structured details reads Problems with
// errors.As.
type ValidationError struct {
	// Kind names what was refused: a registry kind, or "case" and "origin"
	// for EvalCase.Validate and ParseOrigin.
	Kind Kind
	// Problems lists what to fix; never empty.
	Problems []Problem
	// Truncated counts further problems left out to keep the message short.
	Truncated int
}

// maxProblems bounds a ValidationError: a client fixes the first few and
// resubmits, and a huge dataset with one mistake per case must not produce
// a megabyte of error text.
const maxProblems = 20

// Error lists the problems, "invalid argument: <kind> spec: a: rule; b: rule".
func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: ", derrors.ErrInvalid)
	if e.Kind != "" {
		fmt.Fprintf(&b, "%s spec: ", e.Kind.label())
	}
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	if e.Truncated > 0 {
		fmt.Fprintf(&b, "; and %d more", e.Truncated)
	}
	return b.String()
}

// Unwrap makes errors.Is(err, derrors.ErrInvalid) hold.
func (e *ValidationError) Unwrap() error { return derrors.ErrInvalid }

// ErrorDetails lists the problems for the error body (derrors.Details).
func (e *ValidationError) ErrorDetails() map[string]any {
	return map[string]any{"problems": e.Problems}
}

// problems collects the refusals of one check run.
type problems struct {
	list      []Problem
	truncated int
}

// add records a problem at path.
func (p *problems) add(path, format string, args ...any) {
	p.push(Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// required records that a required value at path is absent.
func (p *problems) required(path, what string) {
	p.push(Problem{Path: path, Message: "required: " + what, missing: true})
}

func (p *problems) push(pr Problem) {
	if len(p.list) >= maxProblems {
		p.truncated++
		return
	}
	p.list = append(p.list, pr)
}

// ok reports whether nothing was recorded.
func (p *problems) ok() bool { return len(p.list) == 0 }

// err returns the collected problems as a *ValidationError, or nil.
func (p *problems) err(kind Kind) error {
	if p.ok() {
		return nil
	}
	return &ValidationError{Kind: kind, Problems: p.list, Truncated: p.truncated}
}
