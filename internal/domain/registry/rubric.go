package registry

import "strings"

// RubricSpec is a registered rubric version (spec §2.5). A judge's effective
// rubric text, criteria and prompt template fall back to its rubric's.
type RubricSpec struct {
	ID          string   `json:"id"`
	Version     string   `json:"version"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	// Text is the rubric the judge is given ({rubric}).
	Text     string      `json:"text"`
	Criteria []Criterion `json:"criteria,omitempty"`
	// PromptTemplate, if set, must contain {verdict_instruction}.
	PromptTemplate string `json:"promptTemplate,omitempty"`
}

// validate checks a rubric.
func (r *RubricSpec) validate(p *problems) {
	checkID(p, "id", r.ID)
	checkVersion(p, "version", r.Version)
	checkSpecTags(p, "tags", r.Tags)
	if strings.TrimSpace(r.Text) == "" {
		p.required("text", "the rubric text")
	}
	checkCriteria(p, "criteria", r.Criteria)
	checkPromptTemplate(p, "promptTemplate", r.PromptTemplate)
}
