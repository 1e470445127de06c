// Package trace holds the pure functions over a run's trace and what a
// case leaves: parsing the TraceEvent lines a harness writes
// (ParseTrace), sealing a trace as the ledger stores it (SealEvents),
// building a case's result from what its job left (BuildResult) and the
// analysis bundle a scoring revision freezes (BuildAnalysis).
//
// It is pure: no store, no driver, no Temporal. The activities call it
// with what they read and write the outcome themselves.
package trace
