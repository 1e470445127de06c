package gate

import (
	"maps"
	"slices"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/domain/scoring"
)

// digest is a sha256 stamp of a label: equal labels, equal digests.
func digest(label string) string { return registry.Digest([]byte(label)) }

// rowsOf builds per-case rows from trial strings, one letter a trial:
// P pass, F fail, E error, . pending. Each decided trial also carries an
// "exact" score (1 and pass, or 0 and fail) so metrics have something to
// compare.
func rowsOf(cases map[string]string) []eval.CaseRow {
	var rows []eval.CaseRow
	for _, id := range slices.Sorted(maps.Keys(cases)) {
		for i, r := range cases[id] {
			row := eval.CaseRow{CaseID: id, Trial: i + 1, RunID: id + "#" + string(rune('0'+i)), Status: eval.StatusSucceeded}
			switch r {
			case 'P':
				row.Verdict, row.CasePass = scoring.VerdictPass, true
			case 'F':
				row.Verdict = scoring.VerdictFail
			case 'E':
				row.Verdict = scoring.VerdictError
			case '.':
				row.Verdict, row.Status = scoring.VerdictPending, eval.StatusRunning
			}
			if r == 'P' || r == 'F' {
				pass := r == 'P'
				v := 0.0
				if pass {
					v = 1
				}
				row.Outcomes = map[string]eval.Score{"exact": {GraderID: "exact", Metric: "exact", Value: v, Pass: &pass}}
				row.Scores = []eval.Score{row.Outcomes["exact"]}
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// card builds a succeeded scorecard over dataset ds@1 with harness h@1,
// sealed with the default policy and one scoring revision over its rows.
// Options edit it after the defaults, so a test states only its change.
func card(id string, cases map[string]string, opts ...func(*eval.Scorecard)) eval.Scorecard {
	policy := scoring.DefaultPolicy()
	stamp := scoring.Stamp(policy)
	m := &eval.Manifest{
		IdentityVersion: 1,
		Cases:           map[string]string{},
		GradingCases:    map[string]string{},
		Dataset:         digest("dataset ds@1"),
		Harness:         digest("harness h@1"),
		GradingPlan:     digest("plan"),
		Policy:          &policy,
		PolicyDigest:    stamp.Digest,
		Runtime:         "local",
		SealedAt:        time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	for cid := range cases {
		m.Cases[cid] = digest("case " + cid)
		m.GradingCases[cid] = digest("graders " + cid)
	}
	sc := eval.Scorecard{
		ID:            id,
		Tenant:        "ws",
		Kind:          eval.KindScorecard,
		Dataset:       registry.Ref{ID: "ds", Version: "1"},
		Harness:       registry.Ref{ID: "h", Version: "1"},
		Status:        eval.ScorecardSucceeded,
		Scorecard:     rowsOf(cases),
		VerdictPolicy: &stamp,
		Manifest:      m,
		Trials:        1,
	}
	sc.Scoring = []eval.ScoringRevision{{Revision: 1, Kind: "initial", ScorePlaneDigest: scoring.ScorePlaneDigest(sc.Scorecard)}}
	for _, o := range opts {
		o(&sc)
	}
	return sc
}

// harness2 makes a scorecard run harness h@2: the treatment.
func harness2(sc *eval.Scorecard) {
	sc.Harness = registry.Ref{ID: "h", Version: "2"}
	sc.Manifest.Harness = digest("harness h@2")
}

// withPolicy stamps and seals p as the scorecard's verdict policy and
// flags the rows it marks critical, as the detail read does.
func withPolicy(p eval.VerdictPolicy) func(*eval.Scorecard) {
	return func(sc *eval.Scorecard) {
		stamp := scoring.Stamp(p)
		sc.VerdictPolicy = &stamp
		sc.Manifest.Policy = &p
		sc.Manifest.PolicyDigest = stamp.Digest
		for i := range sc.Scorecard {
			sc.Scorecard[i].Critical = scoring.IsCritical(p, sc.Scorecard[i].CaseID)
		}
	}
}

// critical returns the default policy with the given critical case ids.
func critical(t *testing.T, ids ...string) eval.VerdictPolicy {
	t.Helper()
	var ms []eval.CaseMatcher
	for _, id := range ids {
		ms = append(ms, eval.CaseMatcher{CaseID: id})
	}
	p, err := scoring.ComposePolicy(scoring.DefaultPolicy(), ms)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// unresolvablePolicy stamps a policy whose document no manifest embeds
// and that is not known.
func unresolvablePolicy(sc *eval.Scorecard) {
	sc.VerdictPolicy = &eval.PolicyStamp{ID: "team-policy", Version: "7", Digest: digest("gone")}
	sc.Manifest.Policy = nil
	sc.Manifest.PolicyDigest = ""
}

// same returns n cases with the same trial string.
func same(n int, trials string) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[caseName(i)] = trials
	}
	return m
}

func caseName(i int) string { return "c" + string(rune('a'+i/26)) + string(rune('a'+i%26)) }

// with returns a copy of cases with the given entries replaced ("" removes).
func with(cases map[string]string, kv ...string) map[string]string {
	out := maps.Clone(cases)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(out, kv[i])
		} else {
			out[kv[i]] = kv[i+1]
		}
	}
	return out
}
