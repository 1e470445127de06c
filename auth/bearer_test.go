package auth_test

import (
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"svc/auth"
)

func TestParseBearer(t *testing.T) {
	long := strings.Repeat("a", auth.MaxBearerLen)
	tests := []struct {
		header string
		want   string
		ok     bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"BEARER abc", "abc", true},
		{"BeArEr abc", "abc", true},
		{"Bearer   abc", "abc", true}, // RFC 6750: 1*SP
		{"Bearer eyJ.eyJ.sig", "eyJ.eyJ.sig", true},
		{"Bearer ak_A-b_9~+/==", "ak_A-b_9~+/==", true},
		{"Bearer " + long, long, true},
		{"Bearer " + long + "a", "", false}, // oversize
		{"", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearer    ", "", false},
		{"Bearerabc", "", false},
		{"Bearer\tabc", "", false},
		{" Bearer abc", "", false},
		{"Bearer abc ", "", false},
		{"Bearer abc def", "", false},
		{"Bearer abc\x00", "", false},
		{"Bearer ab\x7fc", "", false},
		{"Bearer abc\r\nX-Evil: 1", "", false},
		{"Bearer ab=c", "", false}, // '=' only as trailing padding
		{"Bearer =", "", false},
		{"Bearer abcé", "", false},
		{"Basic dXNlcjpwYXNz", "", false},
		{"Token abc", "", false},
	}
	for _, tt := range tests {
		got, ok := auth.ParseBearer(tt.header)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseBearer(%.40q) = %.20q, %v; want %.20q, %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

func TestBearerTokenHeaders(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	if _, ok := auth.BearerToken(r); ok {
		t.Error("BearerToken with no header: ok")
	}
	r.Header.Add("Authorization", "Bearer one")
	if tok, ok := auth.BearerToken(r); !ok || tok != "one" {
		t.Errorf("BearerToken = %q, %v; want one, true", tok, ok)
	}
	r.Header.Add("Authorization", "Bearer two")
	if _, ok := auth.BearerToken(r); ok {
		t.Error("BearerToken with two Authorization headers: ok; want refused as ambiguous")
	}
}

// bearerOracle is an independent statement of the grammar ParseBearer accepts.
var bearerOracle = regexp.MustCompile(`^(?i:bearer) +([A-Za-z0-9\-._~+/]+=*)$`)

func FuzzParseBearer(f *testing.F) {
	for _, s := range []string{
		"Bearer abc", "bearer ak_AAAA", "Bearer a.b.c", "Bearer  x", "Bearer x=", "Bearer =",
		"Bearer", "Basic abc", "Bearer a b", "Bearer \x00", "bEaReR abc==", "Bearer\tabc",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		tok, ok := auth.ParseBearer(header)

		m := bearerOracle.FindStringSubmatch(header)
		wantOK := m != nil && len(m[1]) <= auth.MaxBearerLen && len(header) <= auth.MaxBearerLen+64
		if ok != wantOK {
			t.Fatalf("ParseBearer(%q) ok = %v; oracle says %v", header, ok, wantOK)
		}
		if !ok {
			if tok != "" {
				t.Fatalf("ParseBearer(%q) = %q with ok=false", header, tok)
			}
			return
		}
		if tok != m[1] {
			t.Fatalf("ParseBearer(%q) = %q; oracle token %q", header, tok, m[1])
		}
		// Round trip: a token it returns is accepted again, under any
		// spelling of the scheme.
		for _, scheme := range []string{"Bearer ", "bearer ", "BEARER "} {
			if again, ok := auth.ParseBearer(scheme + tok); !ok || again != tok {
				t.Fatalf("round trip of %q with %q = %q, %v", tok, scheme, again, ok)
			}
		}
	})
}
