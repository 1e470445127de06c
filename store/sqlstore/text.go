package sqlstore

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"svc/internal/platform/derrors"
)

// checkText refuses what PostgreSQL cannot store but SQLite would: NUL
// characters and invalid UTF-8, so both backends answer ErrInvalid alike
// instead of one storing the value and the other failing.
func checkText(fields ...string) error {
	for _, f := range fields {
		if !utf8.ValidString(f) {
			return derrors.Invalidf("text %q is not valid UTF-8", f)
		}
		if strings.ContainsRune(f, 0) {
			return derrors.Invalidf("text %q contains a NUL character", f)
		}
	}
	return nil
}

// checkDoc refuses a JSON document holding a \u0000 escape, which jsonb
// rejects. A backslash-escaped backslash before "u0000" is not one.
func checkDoc(doc []byte) error {
	for i := 0; ; {
		j := bytes.Index(doc[i:], []byte(`u0000`))
		if j < 0 {
			return nil
		}
		at := i + j
		n := 0
		for k := at - 1; k >= 0 && doc[k] == '\\'; k-- {
			n++
		}
		if n%2 == 1 {
			return derrors.Invalidf("text contains a NUL character (\\u0000)")
		}
		i = at + len(`u0000`)
	}
}
