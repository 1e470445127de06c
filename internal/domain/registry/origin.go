package registry

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// OriginVia says through which door a capability was registered.
type OriginVia string

// The doors of spec §2.4.
const (
	ViaWeb    OriginVia = "web"
	ViaMCP    OriginVia = "mcp"
	ViaCI     OriginVia = "ci"
	ViaImport OriginVia = "import"
)

// OriginFromType says what a capability was made from.
type OriginFromType string

// The sources of spec §2.4.
const (
	FromIssue     OriginFromType = "issue"
	FromScorecard OriginFromType = "scorecard"
	FromRun       OriginFromType = "run"
	FromOther     OriginFromType = "other"
)

// CapabilityOrigin records where a version came from (spec §2.4). It is
// registry metadata outside the spec: stamped once (the first answer wins,
// see store.Registry.StampVersionOrigin), never a version or a conflict.
type CapabilityOrigin struct {
	Via            OriginVia   `json:"via"`
	From           *OriginFrom `json:"from,omitempty"`
	AgentID        string      `json:"agentId,omitempty"`
	AgentName      string      `json:"agentName,omitempty"`
	ConversationID string      `json:"conversationId,omitempty"`
	RunID          string      `json:"runId,omitempty"`
	Note           string      `json:"note,omitempty"`
}

// OriginFrom is the thing a capability was made from.
type OriginFrom struct {
	Type    OriginFromType `json:"type"`
	ID      string         `json:"id"`
	Version string         `json:"version,omitempty"`
	Label   string         `json:"label,omitempty"`
}

// Limits of an origin's free text.
const (
	maxOriginRef  = 256
	maxOriginNote = 2000
)

// ParseOrigin decodes an origin strictly, validates it and returns it with
// its canonical JSON, ready for store.Registry.StampVersionOrigin.
func ParseOrigin(raw []byte) (CapabilityOrigin, json.RawMessage, error) {
	var o CapabilityOrigin
	var p problems
	if decodeStrict(raw, &o, &p) {
		o.validate(&p, "")
	}
	if err := p.err("origin"); err != nil {
		return CapabilityOrigin{}, nil, err
	}
	canon, err := CanonicalJSON(o)
	if err != nil {
		return CapabilityOrigin{}, nil, fmt.Errorf("registry.ParseOrigin: %w", err)
	}
	return o, canon, nil
}

// Validate checks an origin built in code (a *ValidationError when invalid).
func (o CapabilityOrigin) Validate() error {
	var p problems
	o.validate(&p, "")
	return p.err("origin")
}

// validate checks an origin whose path is at.
func (o CapabilityOrigin) validate(p *problems, at string) {
	if !in(o.Via, ViaWeb, ViaMCP, ViaCI, ViaImport) {
		if o.Via == "" {
			p.required(field(at, "via"), "web, mcp, ci or import")
		} else {
			p.add(field(at, "via"), "%q %s", clip(string(o.Via)), oneOf(ViaWeb, ViaMCP, ViaCI, ViaImport))
		}
	}
	if f := o.From; f != nil {
		fp := field(at, "from")
		if !in(f.Type, FromIssue, FromScorecard, FromRun, FromOther) {
			if f.Type == "" {
				p.required(field(fp, "type"), "issue, scorecard, run or other")
			} else {
				p.add(field(fp, "type"), "%q %s", clip(string(f.Type)), oneOf(FromIssue, FromScorecard, FromRun, FromOther))
			}
		}
		if f.ID == "" {
			p.required(field(fp, "id"), "the id of what it was made from")
		}
		checkOriginText(p, field(fp, "id"), f.ID, maxOriginRef)
		checkOriginText(p, field(fp, "version"), f.Version, maxOriginRef)
		checkOriginText(p, field(fp, "label"), f.Label, maxOriginRef)
	}
	checkOriginText(p, field(at, "agentId"), o.AgentID, maxOriginRef)
	checkOriginText(p, field(at, "agentName"), o.AgentName, maxOriginRef)
	checkOriginText(p, field(at, "conversationId"), o.ConversationID, maxOriginRef)
	checkOriginText(p, field(at, "runId"), o.RunID, maxOriginRef)
	if utf8.RuneCountInString(o.Note) > maxOriginNote {
		p.add(field(at, "note"), "at most %d characters", maxOriginNote)
	}
}

// checkOriginText bounds a short origin field and refuses control characters.
func checkOriginText(p *problems, at, s string, max int) {
	switch {
	case utf8.RuneCountInString(s) > max:
		p.add(at, "at most %d characters", max)
	case hasControl(s):
		p.add(at, "must not contain control characters")
	}
}
