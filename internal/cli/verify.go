package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"svc/internal/domain/manifest"
)

const verifySynopsis = `usage: svc verify <scorecard-id> [--json] [--url URL]

Checks a scorecard's sealed manifest against what the same references produce now
(POST /scorecards/:id/verify-manifest) and prints each facet with its status: match,
drifted, missing or unverifiable.

Exit codes: 0 every facet matches; 1 any facet drifted, missing or unverifiable; 2 usage or service error.`

// RunVerify is `svc verify`.
func RunVerify(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "verify", verifySynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	asJSON := fs.Bool("json", false, "print the verification as the service's JSON instead of the table")
	arg, err := parseOne(fs, args, "scorecard id")
	if err != nil {
		return 0, err
	}
	id := arg
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	v, raw, err := c.VerifyManifest(ctx, id)
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
	} else {
		renderVerification(x.stdout, id, v)
	}
	if v.Verified {
		return exitOK, nil
	}
	return exitVerdict, nil
}

// renderVerification writes the verdict line, then one row per facet; a
// facet that does not match shows its stamped and current digests.
func renderVerification(w io.Writer, id string, v manifest.Verification) {
	counts := map[string]int{}
	for _, f := range v.Facets {
		counts[f.Status]++
	}
	switch {
	case v.Verified:
		fmt.Fprintf(w, "VERIFIED: scorecard %s: all %d %s match\n", id, len(v.Facets), plural(len(v.Facets), "facet"))
	case len(v.Facets) == 0:
		fmt.Fprintf(w, "NOT VERIFIED: scorecard %s: its manifest seals nothing that can be checked\n", id)
	default:
		var parts []string
		for _, s := range []string{manifest.FacetDrifted, manifest.FacetMissing, manifest.FacetUnverifiable} {
			if counts[s] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
			}
		}
		fmt.Fprintf(w, "DRIFT: scorecard %s: %s of %d %s\n", id, strings.Join(parts, ", "), len(v.Facets), plural(len(v.Facets), "facet"))
	}
	if len(v.Facets) == 0 {
		return
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "  FACET\tSTATUS\tDETAIL")
	for _, f := range v.Facets {
		detail := f.Detail
		if f.Status != manifest.FacetMatch && (f.Stamped != "" || f.Current != "") {
			d := fmt.Sprintf("stamped %s, now %s", shortDigest(f.Stamped), shortDigest(f.Current))
			if detail != "" {
				d = detail + "; " + d
			}
			detail = d
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", f.Facet, f.Status, detail)
	}
	tw.Flush()
}

// shortDigest keeps a digest readable in a table: the algorithm and 12
// hex digits are enough to tell two apart.
func shortDigest(d string) string {
	if d == "" {
		return "-"
	}
	algo, hex, ok := strings.Cut(d, ":")
	if !ok {
		algo, hex = "", d
	} else {
		algo += ":"
	}
	if len(hex) > 12 {
		hex = hex[:12] + "…"
	}
	return algo + hex
}
