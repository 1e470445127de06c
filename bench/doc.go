// Package bench holds end-to-end benchmarks of the whole service: an
// in-process stack (store, Temporal's embedded server, a worker, the API on
// loopback) driven through the public API. Everything is in its tests; the
// figures and the commands that produce them are in docs/benchmarks.md.
//
//	go test -run '^$' -bench Scorecard2000 -benchtime 1x -timeout 30m ./bench/
package bench
