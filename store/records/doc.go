// Package records is the codec between the store's rows and the domain's
// records: a run (Row, FromRow, DecodeCache), a scorecard (LoadScorecard,
// ScorecardRow, UpdateScorecard, PlanCache), a batch's child runs
// (ListChildren), its progress counts, the name of a scoring
// revision's analysis bundle, a pending span's event (SpanEvents), and a
// registry spec's version and case rows (VersionRecord, JoinDataset). The services (runs, scorecards, the registry service) and
// the activities import it, so none imports another to read or write a
// record.
//
// It imports the store and domain packages only, never a service, the
// activities, the workflows or a driver.
package records
