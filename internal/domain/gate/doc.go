// Package gate compares two scorecards (spec §2.8, §4.5): Diff reads what
// changed between a baseline and a candidate, and Gate decides whether the
// candidate may replace the baseline. It is pure: it reads two scorecards
// as the detail read serves them (record, per-case rows, policyResolution)
// and does no I/O. docs/gate.md is the user's description; this comment is
// the contract the tests hold.
//
// # Cases and transitions
//
// A row is decided when its verdict is pass, fail or error; pending rows
// are left out. Per side, a case has trials (its decided rows) and passes
// (rows whose verdict is pass). An error counts as a failure, as in the
// casePass summary: a harness that cannot be dispatched must not look
// better. A case passes on a side when a strict majority of its trials
// passed (2*passes > trials; 1 of 2 does not). Its transition is broke
// (passing to not passing), fixed, still_passing, still_failing, added
// (decided in the candidate only) or removed (decided in the baseline
// only). A case is critical when either side's verdict policy marks it or
// a row of it is flagged critical: the gate takes the union, so that a
// candidate cannot drop a critical marker to pass.
//
// # Experiment axes
//
// Each axis reads the two manifests: held (equal digests), a named confound
// (dataset_changed, different_dataset, grading_changed, judges_changed,
// policy_changed, runtime_changed), treatment for the harness (the axis
// under test), or unverified (a side lacks the facet, or its digests cannot
// be compared). A legacy 16-hex stamp compares with a sha256 one by prefix.
// Judges are those that produced the scores: the manifest's, replaced by
// those of later scoring revisions. The policy axis compares only what
// decides verdicts (the policy's metrics); critical markers do not change
// a verdict, and the gate unions them.
//
// # Comparability
//
// none: a side's verdict policy is unresolvable, the datasets differ (ids),
// or no case is decided on both sides. partial: a confound on some axis,
// or a case decided on one side only. full otherwise. Metrics and
// transitions are reported even when none, for inspection.
//
// # Metrics
//
// For every metric on either side, the means and pass rates are those of
// scoring.Summarize over each side's rows, so they agree with the
// scorecards' summaries. A metric with pass verdicts on both sides is
// compared on its pass rate (higher is better: regressed or improved); one
// without is compared on its mean, whose direction is unknown (changed).
// PairedDelta and CI are over the cases decided on both sides only: the
// per-case difference of the compared quantity (the case's pass fraction,
// or its mean value), with a percentile bootstrap of BootstrapResamples
// resamples at BootstrapLevel, seeded from the two scorecard ids and the
// metric so a diff is reproducible. The change reads the interval: a
// metric is regressed, improved or changed only when its interval excludes
// 0, else unchanged even when its delta is not 0 (NotSignificant: shown as
// "unchanged (n.s.)"); without paired cases it is unchanged.
//
// # Gate decision rules
//
// Gate applies these in order; the first outcome that applies wins, and
// every reason found on the way is reported.
//
//  1. A side whose verdict policy is unresolvable: not_comparable, reason
//     policy_unresolvable (checked before comparability).
//  2. Different datasets (reason different_dataset), a confound on an axis
//     not in allowConfounds (reason confound, one per axis), no case decided
//     on both sides (no_common_cases), or the gate metric absent on a side
//     or without paired cases (metric_missing): not_comparable.
//  3. A case decided in the baseline but not in the candidate: blocked_missing
//     (reason missing_case, one per case) unless allowPartial (alias
//     allow_partial); a missing critical case (critical_case_missing) is
//     blocked_missing even then.
//  4. Per case decided on both sides, the table [[baseline passes, baseline
//     fails], [candidate passes, candidate fails]] gets Fisher's exact test,
//     one-sided for "the candidate passes less often" (FisherExact's
//     greater). With fdrAlpha, Benjamini-Hochberg q-values are computed over
//     all the case tests. A case is a significant regression when its
//     candidate pass rate is lower, p <= alpha and, with fdrAlpha, q <=
//     fdrAlpha (each within a relative 1e-7, so that 3 of 3 broken trials,
//     p = 1/20 exactly, meets alpha 0.05). A critical case blocks regardless
//     of significance (critical_case_broke) when it broke or when it passed
//     every baseline trial and fails any candidate trial.
//  5. More significant case regressions than maxRegressions (default 0):
//     block (regressions_exceeded, and case_regression per case).
//  6. The gate metric (default casePass) regresses when its paired delta is
//     below -minDelta and the upper bound of its bootstrap interval is below
//     zero: block (metric_regression). The interval keeps one flaky case
//     from blocking a large batch; minDelta tolerates a real but small drop.
//     A metric without pass verdicts is read higher-is-better.
//  7. Otherwise pass.
//
// Outcome precedence is therefore not_comparable, blocked_missing, block,
// pass. Notes record what did not decide the outcome: unverified axes,
// allowed confounds, tolerated missing cases or regressions, underpowered
// case tests, and rows whose score plane differs from the pinned scoring
// revision.
//
// # Power
//
// A gate never fails open silently. A case's smallest reachable p-value is
// MinPValue of its trial counts (the test itself on the most extreme
// table: 0.5 for one trial a side, 0.05 for three). A lone regression
// among m case tests needs p <= alpha and, with fdrAlpha, m * p <= fdrAlpha
// (its q-value at Benjamini-Hochberg rank 1), within relErr as above. A
// case test that cannot meet that is underpowered; when any is, the
// decision carries an underpowered note naming the smallest reachable p,
// the level needed, the trials per side that would reach it (TrialsNeeded)
// and, with fdrAlpha, how many cases breaking together could still be
// significant (JointRegressions). Decision.Power holds the same numbers
// whenever a case was tested. The analysis is held to the decision: a lone
// broken case is significant exactly when it is not underpowered.
package gate
