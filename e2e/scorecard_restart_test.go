package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/testing/testwait"
	"svc/store"
)

// scorecardHarness answers "ok" after about 100 ms of work in a child. On
// every start it appends "<shell pid> <shim pid> <sleep pid>" to the starts
// file, so the test can check that none outlives svc, and its case id to
// the cases file, so the test can count each case's starts.
const scorecardHarness = `set -eu
sleep 0.1 &
st= pst= bst=; read -r st < /proc/$$/stat || true; read -r pst < /proc/$PPID/stat || true; read -r bst < /proc/$!/stat || true
echo "$$ $PPID $! |$st|$pst|$bst" >> %[1]q
id=$(grep -o '"id":"[^"]*"' "$SVC_CASE_FILE" | head -n1 | cut -d'"' -f4)
echo "$id" >> %[2]q
wait
echo ok
`

// TestScorecardSurvivesTwoKills: a 300-case batch whose `svc dev` is killed
// with SIGKILL twice while cases run, and restarted each time on the same
// data dir, still ends succeeded with exactly one canonical child run per
// case, one score per grader, one scoring revision and one notification,
// and leaves no harness process behind.
func TestScorecardSurvivesTwoKills(t *testing.T) {
	survivesKills(t, 300, 16, []int{60, 80})
}

// TestScorecard2000SurvivesFiveKills is issue 12's durability figure: the
// 2,000-case batch at concurrency 64 with svc dev SIGKILLed five times, after
// a random number of further cases each time (the seed is logged), ends
// succeeded with exactly 2,000 canonical runs; the log reports the time
// each kill cost.
func TestScorecard2000SurvivesFiveKills(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2,000-case batch: not in -short")
	}
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	after := make([]int, 5)
	for i := range after {
		after[i] = 100 + rng.IntN(200)
	}
	t.Logf("seed %d: kills after %v more cases", seed, after)
	survivesKills(t, 2000, 64, after)
}

// survivesKills runs a batch of batchCases cases at batchConcurrency and
// SIGKILLs svc dev (restarting it on the same data dir) once killAfter[i]
// more cases are done, for each i; then it checks that the batch ended
// exactly as an undisturbed one would.
func survivesKills(t *testing.T, batchCases, batchConcurrency int, killAfter []int) {
	began := time.Now()
	dataDir, marks := t.TempDir(), t.TempDir()
	// Isolation off: the harness records its host pids and cases in files
	// of the test's, which an isolated job can neither know nor write.
	env := devEnv(dataDir, "SVC_LOCAL_ISOLATION=none")
	startsFile, casesFile := filepath.Join(marks, "starts"), filepath.Join(marks, "cases")
	script := filepath.Join(marks, "harness.sh")
	if err := os.WriteFile(script, fmt.Appendf(nil, scorecardHarness, startsFile, casesFile), 0o755); err != nil {
		t.Fatal(err)
	}

	svc := start(t, env, true, "dev")
	harness := map[string]any{"id": "quick", "version": "1.0.0", "kind": "process", "command": []string{"/bin/sh", script}}
	if code := call(t, "POST", svc.URL+"/harnesses", harness, nil); code != 201 {
		t.Fatalf("POST /harnesses = %d, want 201", code)
	}
	cases := make([]map[string]any, 0, batchCases)
	for i := range batchCases {
		cases = append(cases, map[string]any{"id": fmt.Sprintf("c%04d", i), "task": "say ok", "expected": "ok",
			"graders": []map[string]any{{"id": "exact"}}})
	}
	dataset := map[string]any{"id": "many", "version": "1.0.0", "cases": cases}
	if code := call(t, "POST", svc.URL+"/datasets", dataset, nil); code != 201 {
		t.Fatalf("POST /datasets = %d, want 201", code)
	}
	submit := map[string]any{
		"dataset":     map[string]string{"id": "many", "version": "1.0.0"},
		"harness":     map[string]string{"id": "quick", "version": "1.0.0"},
		"concurrency": batchConcurrency,
	}
	var queued eval.Scorecard
	submitted := time.Now()
	if code := call(t, "POST", svc.URL+"/scorecards", submit, &queued); code != 202 || queued.ID == "" {
		t.Fatalf("POST /scorecards = %d %+v, want 202 with an id", code, queued)
	}
	id := queued.ID
	if queued.Progress.Total != batchCases {
		t.Fatalf("submitted batch has progress.total %d, want %d", queued.Progress.Total, batchCases)
	}

	// done reads progress.done of the running batch and fails the test if
	// the batch ended before it could be killed twice mid-run.
	done := func(base string) int {
		var sc eval.Scorecard
		if code := call(t, "GET", base+"/scorecards/"+id, nil, &sc); code != 200 {
			t.Fatalf("GET /scorecards/%s = %d", id, code)
		}
		if eval.ScorecardTerminal(sc.Status) {
			t.Fatalf("batch ended %s with %d of %d done before the kills; make the harness slower", sc.Status, sc.Progress.Done, sc.Progress.Total)
		}
		return sc.Progress.Done
	}

	// kill SIGKILLs svc once at least `want` cases are done and restarts
	// it on the same data dir.
	var kills []killMark
	kill := func(want int) (restarted *proc, doneAtRestart int) {
		n := len(kills) + 1
		var d int
		testwait.Until(t, 2*time.Minute, fmt.Sprintf("%d cases done before kill %d", want, n), func() bool {
			d = done(svc.URL)
			return d >= want
		})
		svc.signal(syscall.SIGKILL)
		svc.wait(time.Minute)
		before := readStarts(t, startsFile)
		m := killMark{at: time.Now(), done: d, starts: len(before)}

		// The shims notice svc is gone and kill their harnesses' trees.
		testwait.Until(t, 30*time.Second, fmt.Sprintf("the harnesses running at kill %d to die with svc", n), func() bool { return noneAlive(before) })

		next := start(t, env, true, "dev")
		m.listening = time.Now()
		after := done(next.URL)
		testwait.Until(t, 2*time.Minute, fmt.Sprintf("progress after restart %d", n), func() bool { return done(next.URL) > after })
		m.resumed = time.Now()
		kills = append(kills, m)
		return next, after
	}

	base := 0
	for _, n := range killAfter {
		svc, base = kill(base + n)
	}

	var sc eval.Scorecard
	testwait.Until(t, 10*time.Minute, "the batch to end after the last restart", func() bool {
		var cur eval.Scorecard // fresh: decoding does not clear absent fields
		if code := call(t, "GET", svc.URL+"/scorecards/"+id, nil, &cur); code != 200 {
			t.Fatalf("GET /scorecards/%s = %d", id, code)
		}
		sc = cur
		return eval.ScorecardTerminal(sc.Status) && sc.FinishedAt != nil
	})
	finished := time.Now()
	logTimings(t, submitted, finished, kills, batchCases)
	starts := readStarts(t, startsFile)
	t.Logf("batch %s %s %s after the submit (%s wall for the whole test); %d harness starts for %d cases",
		id, sc.Status, finished.Sub(submitted).Round(time.Millisecond), time.Since(began).Round(time.Millisecond), len(starts), batchCases)

	if sc.Status != eval.ScorecardSucceeded || sc.Error != nil {
		t.Fatalf("batch ended %s with error %+v, want succeeded", sc.Status, sc.Error)
	}
	if p := sc.Progress; p.Total != batchCases || p.Done != batchCases || p.Passed != batchCases || p.Failed != 0 {
		t.Errorf("progress %+v, want %d total, done and passed", p, batchCases)
	}
	if len(starts) < batchCases {
		t.Errorf("%d harness starts, want at least one per case (%d)", len(starts), batchCases)
	}

	// The detail read: one passing row per case, each with its one score.
	rows := map[string]eval.CaseRow{}
	for _, r := range sc.Scorecard {
		key := fmt.Sprintf("%s#%d", r.CaseID, r.Trial)
		if _, dup := rows[key]; dup {
			t.Errorf("case row %s appears twice", key)
		}
		rows[key] = r
		if r.Status != eval.StatusSucceeded || r.Verdict != "pass" || !r.CasePass {
			t.Errorf("case row %s: status %s verdict %s (%s) casePass %v, want succeeded pass", key, r.Status, r.Verdict, r.VerdictBasis, r.CasePass)
		}
		if n := countMetric(r.Scores, "exact"); n != 1 || len(r.Scores) != 1 {
			t.Errorf("case row %s scores %+v, want exactly one exact score", key, r.Scores)
		}
	}
	for i := range batchCases {
		key := fmt.Sprintf("c%04d#0", i)
		if _, ok := rows[key]; !ok {
			t.Errorf("the detail read lacks case row %s", key)
		}
		if sc.CaseRuns[key] == "" {
			t.Errorf("caseRuns lacks %s", key)
		}
	}
	if len(sc.Scorecard) != batchCases || len(sc.CaseRuns) != batchCases {
		t.Errorf("%d case rows and %d caseRuns, want %d of each", len(sc.Scorecard), len(sc.CaseRuns), batchCases)
	}
	if m, ok := sc.Summary["exact"]; !ok || m.Count != batchCases || m.PassRate == nil || *m.PassRate != 1 {
		t.Errorf("summary of exact %+v, want %d scores all passing", m, batchCases)
	}
	// A kill is not a case failure: the timeline records none.
	for _, st := range sc.Steps {
		if st.Status == "failed" {
			t.Errorf("step %+v: a case failed across the kills", st)
		}
	}
	if len(sc.Scoring) != 1 || sc.Scoring[0].Revision != 1 || sc.Scoring[0].Kind != "initial" {
		t.Errorf("scoring revisions %+v, want exactly revision 1 (initial)", sc.Scoring)
	}

	// The children, paged: batchCases in all, every one canonical, one per case,
	// each finished with exactly one exact score.
	children := listChildren(t, svc.URL, id)
	startsOf := readCaseStarts(t, casesFile)
	canonical := map[string]string{}
	attempts := map[int]int{} // attempts -> children
	for _, c := range children {
		key := fmt.Sprintf("%s#%d", c.CaseID, c.Trial)
		if c.Canonical == nil || !*c.Canonical {
			t.Errorf("child %s (%s) is not canonical", c.ID, key)
			continue
		}
		if prev, dup := canonical[key]; dup {
			t.Errorf("two canonical children for %s: %s and %s", key, prev, c.ID)
		}
		canonical[key] = c.ID
		if c.Trial != 0 {
			t.Errorf("child %s has trial %d; a batch without trials has only trial 0", c.ID, c.Trial)
		}
		if sc.CaseRuns[key] != c.ID {
			t.Errorf("caseRuns[%s] = %q, the listing says %s", key, sc.CaseRuns[key], c.ID)
		}
		// Every start of the harness is one attempt of the child's
		// dispatch; an attempt killed before its harness wrote its line
		// has no start.
		attempts[c.Attempts]++
		if n := startsOf[c.CaseID]; n < 1 || n > c.Attempts {
			t.Errorf("child %s (%s): %d harness starts over %d attempts, want 1 to %d", c.ID, key, n, c.Attempts, c.Attempts)
		}
		if c.Status != eval.StatusSucceeded || c.Result == nil || !c.Result.Pass {
			t.Errorf("child %s (%s) ended %s with result %v, want succeeded and passing", c.ID, key, c.Status, c.Result != nil)
			continue
		}
		if n := countMetric(c.Result.Scores, "exact"); n != 1 || len(c.Result.Scores) != 1 {
			t.Errorf("child %s (%s) scores %+v, want exactly one exact score", c.ID, key, c.Result.Scores)
		}
	}
	if len(children) != batchCases || len(canonical) != batchCases {
		t.Errorf("%d children, %d canonical (case, trial)s; want %d of each", len(children), len(canonical), batchCases)
	}
	t.Logf("children by attempts: %v", attempts)

	var feed []store.Notification
	if code := call(t, "GET", svc.URL+"/notifications", nil, &feed); code != 200 {
		t.Fatalf("GET /notifications = %d", code)
	}
	completed := 0
	for _, n := range feed {
		if n.Kind == eval.NotifyScorecardCompleted {
			completed++
			if n.ID != eval.NotifyScorecardCompleted+":"+id {
				t.Errorf("scorecard_completed notification %q, want one for %s", n.ID, id)
			}
		}
	}
	if completed != 1 || len(feed) != 1 {
		t.Errorf("notifications %+v, want exactly one scorecard_completed for %s", feed, id)
	}

	// Nothing of any attempt outlives its job.
	testwait.Until(t, 30*time.Second, "every harness, child and shim of every attempt to be gone", func() bool {
		return noneAlive(readStarts(t, startsFile))
	})
}

// killMark is what one kill of svc cost.
type killMark struct {
	at        time.Time // svc was gone
	listening time.Time // its successor printed its API address
	resumed   time.Time // the successor's first newly done case was seen
	done      int       // cases done when svc was killed
	starts    int       // harness starts by then
}

// logTimings reports the wall time of the batch and what each kill cost:
// the time from the kill to the next kill (or the end) less the time the
// cases done in it would have taken at the rate before the first kill.
func logTimings(t *testing.T, submitted, finished time.Time, kills []killMark, batchCases int) {
	t.Helper()
	rate := float64(kills[0].done) / kills[0].at.Sub(submitted).Seconds()
	t.Logf("before the first kill: %d cases in %s (%.1f cases/s); undisturbed the batch would take about %s",
		kills[0].done, kills[0].at.Sub(submitted).Round(time.Millisecond), rate, time.Duration(float64(batchCases)/rate*float64(time.Second)).Round(time.Millisecond))
	var total time.Duration
	defer func() { t.Logf("about %s lost to %d kills in all", total.Round(100*time.Millisecond), len(kills)) }()
	for i, k := range kills {
		endAt, endDone := finished, batchCases
		if i+1 < len(kills) {
			endAt, endDone = kills[i+1].at, kills[i+1].done
		}
		span := endAt.Sub(k.at)
		lost := span - time.Duration(float64(endDone-k.done)/rate*float64(time.Second))
		total += lost
		t.Logf("kill %d at %d done (%d starts): listening again after %s, progress again after %s; %d cases in the next %s, so about %s lost",
			i+1, k.done, k.starts, k.listening.Sub(k.at).Round(time.Millisecond), k.resumed.Sub(k.at).Round(time.Millisecond),
			endDone-k.done, span.Round(time.Millisecond), lost.Round(100*time.Millisecond))
	}
}

// readCaseStarts counts the harness starts of each case.
func readCaseStarts(t *testing.T, path string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, id := range strings.Fields(string(b)) {
		out[id]++
	}
	return out
}

func countMetric(scores []eval.Score, metric string) int {
	n := 0
	for _, s := range scores {
		if s.Metric == metric {
			n++
		}
	}
	return n
}

// listChildren pages GET /runs?scorecardId=... through X-Svc-Next-Cursor.
func listChildren(t *testing.T, base, scorecardID string) []eval.Run {
	t.Helper()
	var all []eval.Run
	cursor := ""
	for page := 0; ; page++ {
		if page > 10000 {
			t.Fatalf("GET /runs?scorecardId=%s still pages after %d pages", scorecardID, page)
		}
		q := url.Values{"scorecardId": {scorecardID}, "limit": {"500"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var runs []eval.Run
		cursor = getPage(t, base+"/runs?"+q.Encode(), &runs)
		all = append(all, runs...)
		if cursor == "" {
			return all
		}
	}
}

// getPage GETs one list page into out and returns its next cursor.
func getPage(t *testing.T, u string, out any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading: %v", u, err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d %s", u, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("GET %s: decoding: %v", u, err)
	}
	return resp.Header.Get("X-Svc-Next-Cursor")
}
