package registry

import (
	"fmt"
	"strings"

	"svc/internal/platform/derrors"
)

// CheckDeclared refuses what runtime r cannot run as declared, before
// anything is recorded: resources.cpu declared by harness h or by one of
// cases on a nomad runtime that sets no cpuMhzPerCore, so that the
// millicores cannot be converted to the MHz a Nomad job asks for (spec
// §2.6). Cases declaring no cpu are unaffected. The error wraps
// derrors.ErrInvalid and names the harness or the cases, and the field.
func (r *RuntimeSpec) CheckDeclared(h *HarnessConfig, cases []EvalCase) error {
	if r == nil || r.Kind != RuntimeNomad || r.CPUMhzPerCore != nil {
		return nil
	}
	fix := fmt.Sprintf("nomad runtime %q sets no cpuMhzPerCore to convert millicores to MHz; register a version of the runtime with cpuMhzPerCore, or drop resources.cpu", r.ID)
	if h != nil && h.Resources != nil && h.Resources.CPU != nil {
		return derrors.Invalidf("the harness declares resources.cpu but %s", fix)
	}
	const named = 3
	var ids []string
	n := 0
	for _, c := range cases {
		if c.Resources != nil && c.Resources.CPU != nil {
			if n < named {
				ids = append(ids, fmt.Sprintf("%q", c.ID))
			}
			n++
		}
	}
	switch {
	case n == 0:
		return nil
	case n == 1:
		return derrors.Invalidf("case %s declares resources.cpu but %s", ids[0], fix)
	case n <= named:
		return derrors.Invalidf("cases %s declare resources.cpu but %s", strings.Join(ids, ", "), fix)
	}
	return derrors.Invalidf("cases %s and %d more declare resources.cpu but %s", strings.Join(ids, ", "), n-named, fix)
}
