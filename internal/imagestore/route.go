package imagestore

import (
	"errors"
	"regexp"
	"strings"
)

// kind is what a request path addresses in the distribution API.
type kind int

const (
	kindBase     kind = iota + 1 // /v2/
	kindCatalog                  // /v2/_catalog
	kindTags                     // /v2/<name>/tags/list
	kindManifest                 // /v2/<name>/manifests/<reference>
	kindBlob                     // /v2/<name>/blobs/<digest>
	kindUploads                  // /v2/<name>/blobs/uploads/ (start an upload)
	kindUpload                   // /v2/<name>/blobs/uploads/<id>
)

// route is a decoded request path: what it addresses, the repository
// name and the reference (a tag or digest, a blob digest or an upload id).
type route struct {
	kind kind
	name string
	ref  string
}

var (
	// nameRE is the distribution spec's repository name grammar.
	nameRE = regexp.MustCompile(`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$`)
	// tagRE is the distribution spec's tag grammar.
	tagRE = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)
	// digestRE is the one digest algorithm the store keeps.
	digestRE = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
	// uploadRE is an upload id as the store mints them.
	uploadRE = regexp.MustCompile(`^[a-f0-9]{32}$`)
)

// maxNameLen bounds a repository name (the distribution spec's advice:
// at most 255 characters with the host).
const maxNameLen = 255

var (
	errNotAPI    = errors.New("not a distribution API path")
	errName      = errors.New("invalid repository name")
	errReference = errors.New("invalid tag or digest")
	errDigest    = errors.New("invalid digest: want sha256:<64 hex digits>")
	errUpload    = errors.New("unknown upload id")
)

// parseRoute decodes the path of a distribution API request. Names and
// references are checked against the spec's grammars, so an accepted name
// is safe as a relative file path (lowercase alphanumeric components with
// single separators; no "..", no leading "_", no empty component).
func parseRoute(path string) (route, error) {
	rest, ok := strings.CutPrefix(path, "/v2")
	if !ok {
		return route{}, errNotAPI
	}
	if rest == "" || rest == "/" {
		return route{kind: kindBase}, nil
	}
	rest, ok = strings.CutPrefix(rest, "/")
	if !ok {
		return route{}, errNotAPI
	}
	if rest == "_catalog" {
		return route{kind: kindCatalog}, nil
	}
	var r route
	switch {
	case strings.HasSuffix(rest, "/tags/list"):
		r = route{kind: kindTags, name: strings.TrimSuffix(rest, "/tags/list")}
	case strings.HasSuffix(rest, "/blobs/uploads/") || strings.HasSuffix(rest, "/blobs/uploads"):
		r = route{kind: kindUploads, name: strings.TrimSuffix(strings.TrimSuffix(rest, "/"), "/blobs/uploads")}
	default:
		i := strings.LastIndexByte(rest, '/')
		if i < 0 {
			return route{}, errNotAPI
		}
		head, last := rest[:i], rest[i+1:]
		j := strings.LastIndexByte(head, '/')
		if j < 0 {
			return route{}, errNotAPI
		}
		name, verb := head[:j], head[j+1:]
		switch verb {
		case "manifests":
			r = route{kind: kindManifest, name: name, ref: last}
			if !tagRE.MatchString(last) && !digestRE.MatchString(last) {
				return route{}, errReference
			}
		case "blobs":
			r = route{kind: kindBlob, name: name, ref: last}
			if !digestRE.MatchString(last) {
				return route{}, errDigest
			}
		case "uploads":
			name, ok = strings.CutSuffix(name, "/blobs")
			if !ok {
				return route{}, errNotAPI
			}
			r = route{kind: kindUpload, name: name, ref: last}
			if !uploadRE.MatchString(last) {
				return route{}, errUpload
			}
		default:
			return route{}, errNotAPI
		}
	}
	if !validName(r.name) {
		return route{}, errName
	}
	return r, nil
}

// validName says whether name is a repository name the store accepts.
func validName(name string) bool {
	return len(name) <= maxNameLen && nameRE.MatchString(name)
}

// path is the request path of r: parseRoute(r.path()) == r.
func (r route) path() string {
	switch r.kind {
	case kindBase:
		return "/v2/"
	case kindCatalog:
		return "/v2/_catalog"
	case kindTags:
		return "/v2/" + r.name + "/tags/list"
	case kindManifest:
		return "/v2/" + r.name + "/manifests/" + r.ref
	case kindBlob:
		return "/v2/" + r.name + "/blobs/" + r.ref
	case kindUploads:
		return "/v2/" + r.name + "/blobs/uploads/"
	case kindUpload:
		return "/v2/" + r.name + "/blobs/uploads/" + r.ref
	}
	return ""
}
