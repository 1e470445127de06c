package auth

import (
	"net/http"
	"strings"
)

// MaxBearerLen is the longest bearer token accepted (4 KiB).
const MaxBearerLen = 4096

// maxAuthorizationLen bounds the whole header value (scheme, spaces, token),
// so an oversize header is refused before any scanning.
const maxAuthorizationLen = MaxBearerLen + 64

// ParseBearer extracts the token of an Authorization header value of the form
// "Bearer <token>" (RFC 6750 §2.1): the scheme is case-insensitive, one or
// more spaces separate it from exactly one token, and the token is a
// b64token (letters, digits, - . _ ~ + /, then optional '=' padding) of at
// most MaxBearerLen bytes, in a header value of at most MaxBearerLen+64
// bytes. Anything else (empty, other schemes, tabs,
// control characters, trailing data) is refused.
func ParseBearer(header string) (token string, ok bool) {
	const scheme = "bearer"
	if len(header) > maxAuthorizationLen || len(header) < len(scheme)+2 {
		return "", false
	}
	if !strings.EqualFold(header[:len(scheme)], scheme) || header[len(scheme)] != ' ' {
		return "", false
	}
	token = strings.TrimLeft(header[len(scheme):], " ")
	if len(token) == 0 || len(token) > MaxBearerLen || !isB64Token(token) {
		return "", false
	}
	return token, true
}

// isB64Token reports whether s matches 1*( ALPHA / DIGIT / "-" / "." / "_" /
// "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' {
			continue
		}
		break
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// BearerToken returns the bearer token of r when r carries exactly one
// well-formed Authorization header; ok is false otherwise (no header, several
// headers, another scheme, a malformed token).
func BearerToken(r *http.Request) (token string, ok bool) {
	vs := r.Header.Values("Authorization")
	if len(vs) != 1 {
		return "", false
	}
	return ParseBearer(vs[0])
}

// hasAuthorization reports whether r carries any Authorization header, even
// an empty or malformed one: only a request without one may fall back to the
// dev principal.
func hasAuthorization(r *http.Request) bool {
	return len(r.Header.Values("Authorization")) > 0
}
