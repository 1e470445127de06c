package registry

import (
	"strings"
	"unicode/utf8"

	"svc/internal/platform/derrors"
)

// NormalizeTags turns the body of a version-tags PUT into the tags to
// store (spec §2.4): each tag trimmed of surrounding whitespace, empty ones
// dropped, duplicates dropped keeping the first occurrence's position. It
// refuses (ErrInvalid, naming the limit) more than 20 remaining tags, a tag
// longer than 60 characters after trimming, and control characters or
// invalid UTF-8. The result is never nil, so it encodes as [].
func NormalizeTags(tags []string) ([]string, error) {
	out := make([]string, 0, len(tags))
	seen := make(map[string]bool, len(tags))
	for i, t := range tags {
		t = strings.TrimSpace(t)
		switch {
		case t == "":
			continue
		case !utf8.ValidString(t):
			return nil, derrors.Invalidf("tags[%d]: not valid UTF-8", i)
		case hasControl(t):
			return nil, derrors.Invalidf("tags[%d]: must not contain control characters", i)
		case utf8.RuneCountInString(t) > maxTagLen:
			return nil, derrors.Invalidf("tags[%d]: %q is longer than %d characters", i, clip(t), maxTagLen)
		case seen[t]:
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	if len(out) > maxTags {
		return nil, derrors.Invalidf("tags: at most %d distinct tags per version, got %d", maxTags, len(out))
	}
	return out, nil
}
