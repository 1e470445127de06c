// Package evidence binds a judge's custom evidence slots (spec §2.5,
// §2.7): a custom placeholder {name} of a model or harness judge's prompt
// template is filled with the text of the case's artifact of that role or
// name, fetched through the outbound address guard and cut at 1 MB. The
// grader and POST /judges/preview bind through the same function, so the
// preview still shows the prompt the model is sent.
package evidence

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/judge"
	"svc/internal/domain/registry"
	"svc/internal/platform/netguard"
)

// MaxArtifact is how much of one text artifact a slot holds, in bytes.
const MaxArtifact = 1 << 20

// FetchTimeout bounds the fetch of one artifact.
const FetchTimeout = 30 * time.Second

// Fetcher fetches text artifacts for evidence slots.
type Fetcher struct {
	// Guard checks each artifact's address and dials through its client;
	// nil fetches nothing (every slot an artifact would fill stays unbound,
	// with a warning).
	Guard *netguard.Guard
}

// nonIdent matches what a slot name cannot hold.
var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]`)

// SlotName is the slot an artifact's name binds: the name with every
// character a placeholder cannot hold replaced by "_" (report.md binds
// {report_md}).
func SlotName(artifactName string) string { return nonIdent.ReplaceAllString(artifactName, "_") }

// Match returns the artifact that binds slot: the first whose role is the
// slot's name, else the first whose SlotName is.
func Match(slot string, arts []eval.Artifact) (eval.Artifact, bool) {
	for _, a := range arts {
		if a.Role != "" && a.Role == slot {
			return a, true
		}
	}
	for _, a := range arts {
		if a.Name != "" && SlotName(a.Name) == slot {
			return a, true
		}
	}
	return eval.Artifact{}, false
}

// IsText reports whether an artifact's media type is text a prompt can
// hold: text/*, JSON, XML, YAML, NDJSON, or none declared.
func IsText(mediaType string) bool {
	if mediaType == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return false
	}
	switch {
	case strings.HasPrefix(mt, "text/"),
		strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"),
		mt == "application/json", mt == "application/xml", mt == "application/yaml",
		mt == "application/x-yaml", mt == "application/x-ndjson", mt == "application/javascript":
		return true
	}
	return false
}

// Bind fills slots (custom placeholder names) from the case's artifacts.
// given are slots already bound (a preview's evidence.slots); they win and
// are kept. A slot no artifact matches is left out (the prompt keeps it
// verbatim and the preview warns). Warnings say what could not be bound
// and why (not text, not fetchable, refused by the guard, cut at 1 MB).
func (f Fetcher) Bind(ctx context.Context, slots []string, given map[string]string, ev *eval.Evidence) (map[string]string, []string) {
	out := make(map[string]string, len(given))
	for k, v := range given {
		out[k] = v
	}
	var warnings []string
	var arts []eval.Artifact
	if ev != nil {
		arts = ev.Artifacts
	}
	for _, name := range slots {
		if _, ok := out[name]; ok {
			continue
		}
		a, ok := Match(name, arts)
		if !ok {
			continue
		}
		text, warn, err := f.fetch(ctx, a)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("custom evidence slot {%s}: artifact %q %v", name, a.Name, err))
			continue
		}
		if warn != "" {
			warnings = append(warnings, fmt.Sprintf("custom evidence slot {%s}: artifact %q %s", name, a.Name, warn))
		}
		out[name] = text
	}
	return out, warnings
}

// errNotFetched is why an artifact is not read.
type errNotFetched string

func (e errNotFetched) Error() string { return string(e) }

// fetch reads one text artifact, at most MaxArtifact bytes of it.
func (f Fetcher) fetch(ctx context.Context, a eval.Artifact) (text, warn string, err error) {
	if !IsText(a.MediaType) {
		return "", "", errNotFetched(fmt.Sprintf("is %s, not text: only text artifacts fill slots", a.MediaType))
	}
	if a.Ref == "" {
		return "", "", errNotFetched("has no http(s) ref to fetch it from")
	}
	b, err := f.get(ctx, a.Ref, MaxArtifact)
	switch {
	case errors.Is(err, errTooLarge):
		// A rune cut in two at the end becomes U+FFFD below.
		warn = "was cut to 1 MB"
	case err != nil:
		return "", "", err
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.ReplaceAll(s, "\x00", ""), warn, nil
}

// MaxScreenshot is how much of a screenshot fetched from its ref is sent,
// in bytes; a larger one is not sent.
const MaxScreenshot = 5 << 20

// Resolve completes a judge's prompt evidence from the case's evidence:
// the custom slots of its template bound from text artifacts (Bind; slots
// already in ev.Slots win), and the browser snapshot's screenshot fetched
// from its screenshotRef when the judge's inputs name the screenshot and
// the snapshot holds none inline. ev is not modified. Warnings say what
// could not be bound.
func (f Fetcher) Resolve(ctx context.Context, eff judge.Effective, ev judge.Evidence) (judge.Evidence, []string) {
	var warnings []string
	if custom := judge.CustomSlots(eff); len(custom) > 0 {
		ev.Slots, warnings = f.Bind(ctx, custom, ev.Slots, ev.Evidence)
	}
	if slices.Contains(eff.Inputs, registry.InputScreenshot) && ev.Snapshot != nil && ev.Snapshot.Screenshot == "" && ev.Snapshot.ScreenshotRef != "" {
		b, err := f.get(ctx, ev.Snapshot.ScreenshotRef, MaxScreenshot)
		switch {
		case errors.Is(err, errTooLarge):
			warnings = append(warnings, "the snapshot's screenshotRef is over 5 MB: the screenshot is not sent")
		case err != nil:
			warnings = append(warnings, fmt.Sprintf("the snapshot's screenshotRef %v", err))
		default:
			snap := *ev.Snapshot
			snap.Screenshot = base64.StdEncoding.EncodeToString(b)
			ev.Snapshot = &snap
		}
	}
	return ev, warnings
}

// get fetches an http(s) ref through the guard, refusing a body over max.
func (f Fetcher) get(ctx context.Context, ref string, max int64) ([]byte, error) {
	u, perr := url.Parse(ref)
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, errNotFetched("is not an http(s) URL")
	}
	if f.Guard == nil {
		return nil, errNotFetched("is not fetched: this deployment has no outbound address guard configured for artifacts")
	}
	if err := f.Guard.CheckURL(ctx, ref); err != nil {
		return nil, errNotFetched("is refused by the outbound address guard: " + netguard.UnwrapURLError(err).Error())
	}
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref, nil)
	if err != nil {
		return nil, errNotFetched("is not a request: " + err.Error())
	}
	resp, err := f.Guard.Client(FetchTimeout).Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, errNotFetched(fmt.Sprintf("did not arrive within %s", FetchTimeout))
		}
		return nil, errNotFetched("could not be fetched: " + netguard.UnwrapURLError(err).Error())
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errNotFetched(fmt.Sprintf("answered HTTP %d", resp.StatusCode))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, errNotFetched("could not be read: " + err.Error())
	}
	if int64(len(b)) > max {
		return b[:max], errTooLarge
	}
	return b, nil
}

// errTooLarge marks a body cut at its limit.
var errTooLarge = errors.New("cut at its limit")
