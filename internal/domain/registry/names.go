package registry

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"svc/internal/platform/derrors"
)

// The naming rules, each stated once so messages and docs agree.
var (
	// idPattern: entity ids, also criterion and milestone ids (they become
	// parts of metric names, so no ':'), and runtime references. It cannot
	// spell the reserved owner "_shared" nor the reserved dataset ids
	// "_traces" and "_adhoc".
	idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	idRule    = "must be 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit"

	// versionPattern: versions are path segments; '+' admits semver build
	// metadata.
	versionPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$`)
	versionRule    = "must be 1 to 64 letters, digits, '.', '_', '+' or '-', starting with a letter or digit (no '/' or whitespace)"

	// secretNamePattern: names of entries in the workspace secret store.
	secretNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	secretNameRule    = "must be the NAME of a workspace secret (1 to 64 letters, digits, '.', '_' or '-'), never a credential value; store the value in the workspace secret store and name it here"

	// tokenPattern: small lowercase vocabularies left open (env kinds,
	// operating systems, Nomad task drivers).
	tokenPattern = regexp.MustCompile(`^[a-z][a-z0-9._-]{0,63}$`)
	tokenRule    = "must be 1 to 64 lowercase letters, digits, '.', '_' or '-', starting with a letter"

	// envNamePattern: environment variable names.
	envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

	// dnsLabelPattern: Kubernetes namespaces and service names (RFC 1123
	// label), which become host names in a topology.
	dnsLabelPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	dnsLabelRule    = "must be a DNS label: 1 to 63 lowercase letters, digits or '-', starting and ending with a letter or digit"

	// dnsSubdomainPattern: Kubernetes object names such as a RuntimeClass.
	dnsSubdomainPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$`)

	// labelNamePattern and labelValuePattern: Kubernetes label keys (the
	// part after an optional "prefix/") and values.
	labelNamePattern  = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$`)
	labelValuePattern = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?$`)

	// imagePattern is the reference grammar of the OCI distribution
	// project (github.com/distribution/reference) without IPv6 hosts:
	// [host[:port]/]path[:tag][@digest].
	imagePattern = regexp.MustCompile(`^` +
		`(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?/)?` +
		`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` +
		`(?::[\w][\w.-]{0,127})?` +
		`(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`)
	imageRule = "must be an OCI image reference such as registry.example.com/team/agent:1.2 or name@sha256:<hex>"
)

// maxImageLen bounds an image reference (the distribution project's name
// limit plus a tag and a digest).
const maxImageLen = 512

// credentialPrefixes start well-known credential values (GitHub, OpenAI and
// Anthropic style keys, Slack, AWS access keys, this service's own keys,
// JWTs). A "secret name" that starts with one is almost surely the secret
// itself pasted in the wrong place; refusing it keeps it out of every log
// and of the immutable spec.
var credentialPrefixes = []string{
	"ghp_", "gho_", "ghs_", "ghu_", "github_pat_", "glpat-", "sk-", "xoxb-", "xoxp-",
	"AKIA", "ASIA", "ak_", "rnr_", "inv_", "eyJ",
}

// ValidateID checks an entity id (also a path parameter) against the id rule.
func ValidateID(id string) error {
	if !idPattern.MatchString(id) {
		return derrors.Invalidf("id %q %s", clip(id), idRule)
	}
	return nil
}

// ValidateVersion checks a version to register: the version rule, and never
// "latest" (in any case), which is reserved for resolution.
func ValidateVersion(v string) error {
	switch msg := versionProblem(v); msg {
	case "":
		return nil
	case "required":
		return derrors.Invalidf("version: required")
	default:
		return derrors.Invalidf("version %q %s", clip(v), msg)
	}
}

// ValidateVersionSelector checks a version as a lookup names it (a path
// parameter, a reference): a registrable version or exactly "latest".
func ValidateVersionSelector(v string) error {
	if v == LatestVersion {
		return nil
	}
	return ValidateVersion(v)
}

// ValidateSecretName checks the name of a workspace secret, as runtimes and
// harnesses reference it; the secrets routes use it so every stored secret
// can be referenced.
func ValidateSecretName(name string) error {
	if msg := secretNameProblem(name); msg != "" {
		return derrors.Invalidf("secret name: %s", msg)
	}
	return nil
}

// checkID records a problem unless id obeys the id rule.
func checkID(p *problems, path, id string) {
	switch {
	case id == "":
		p.required(path, "an id")
	case !idPattern.MatchString(id):
		p.add(path, "%q %s", clip(id), idRule)
	}
}

// versionProblem states why v cannot be a registered version, or "".
func versionProblem(v string) string {
	switch {
	case v == "":
		return "required"
	case strings.EqualFold(v, LatestVersion):
		return `is reserved for resolving the newest version; register a concrete version`
	case !versionPattern.MatchString(v):
		return versionRule
	}
	return ""
}

// checkVersion records a problem unless v can be a registered version.
func checkVersion(p *problems, path, v string) {
	switch msg := versionProblem(v); {
	case msg == "required":
		p.required(path, "a version")
	case msg != "":
		p.add(path, "%q %s", clip(v), msg)
	}
}

// checkVersionRef records a problem unless v is a version or "latest", as a
// reference inside a spec may name.
func checkVersionRef(p *problems, path, v string) {
	if v == LatestVersion {
		return
	}
	checkVersion(p, path, v)
}

// secretNameProblem states why name cannot name a secret, or "". It never
// repeats the value: it may be a credential.
func secretNameProblem(name string) string {
	if !secretNamePattern.MatchString(name) {
		return secretNameRule
	}
	for _, pre := range credentialPrefixes {
		if strings.HasPrefix(name, pre) {
			return "looks like a credential value, not a secret name; " + secretNameRule
		}
	}
	return ""
}

// checkSecretName records a problem unless name can name a secret; the
// message never echoes the value.
func checkSecretName(p *problems, path, name string) {
	if msg := secretNameProblem(name); msg != "" {
		p.add(path, "%s", msg)
	}
}

// checkImage records a problem unless ref is an image reference.
func checkImage(p *problems, path, ref string) {
	if len(ref) > maxImageLen || !imagePattern.MatchString(ref) {
		p.add(path, "%q %s", clip(ref), imageRule)
	}
}

// checkToken records a problem unless s is a lowercase token.
func checkToken(p *problems, path, s string) {
	if !tokenPattern.MatchString(s) {
		p.add(path, "%q %s", clip(s), tokenRule)
	}
}

// checkURL records a problem unless s is an http(s) URL with a host and no
// credentials: user info or a query would put a credential into the spec.
func checkURL(p *problems, path, s string) {
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		p.add(path, "%q must be an http:// or https:// URL with a host", clip(s))
	case u.User != nil:
		p.add(path, "must not carry credentials (user info); name a secret in authSecret instead")
	case u.RawQuery != "" || u.Fragment != "":
		p.add(path, "must not have a query or fragment; credentials belong in authSecret")
	}
}

// maxTags and maxTagLen are the spec's limits on version tags (§2.4, §8);
// tags inside specs (a case's tags, a judge's tags) obey the same.
const (
	maxTags   = 20
	maxTagLen = 60
)

// checkSpecTags records a problem for every tag of a spec that is empty,
// padded with whitespace, or too long, and when there are too many. Unlike
// NormalizeTags it does not rewrite: a spec is stored as sent.
func checkSpecTags(p *problems, path string, tags []string) {
	if len(tags) > maxTags {
		p.add(path, "at most %d tags, got %d", maxTags, len(tags))
	}
	for i, t := range tags {
		switch {
		case strings.TrimSpace(t) == "":
			p.add(index(path, i), "must not be empty")
		case strings.TrimSpace(t) != t:
			p.add(index(path, i), "must not start or end with whitespace")
		case utf8.RuneCountInString(t) > maxTagLen:
			p.add(index(path, i), "at most %d characters", maxTagLen)
		case hasControl(t):
			p.add(index(path, i), "must not contain control characters")
		}
	}
}

// hasControl reports whether s contains a control character.
func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

// hasSpaceOrControl reports whether s contains whitespace or a control
// character.
func hasSpaceOrControl(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0
}

// clip shortens a value quoted back in a message.
func clip(s string) string {
	const max = 80
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}

// oneOf formats a closed vocabulary for messages.
func oneOf[T ~string](vals ...T) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = string(v)
	}
	return "must be one of " + strings.Join(parts, ", ")
}

// in reports whether v is one of vals.
func in[T comparable](v T, vals ...T) bool {
	for _, x := range vals {
		if v == x {
			return true
		}
	}
	return false
}

// bounded records a problem unless lo <= n <= hi.
func bounded(p *problems, path string, n, lo, hi int64) {
	if n < lo || n > hi {
		p.add(path, "must be between %s and %s, got %d", fmtInt(lo), fmtInt(hi), n)
	}
}

func fmtInt(n int64) string { return fmt.Sprintf("%d", n) }
