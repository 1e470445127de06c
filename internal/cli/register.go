package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"svc/internal/client"
	"svc/internal/domain/registry"
)

// registerSpec registers doc in collection ("/datasets", "/harnesses",
// "/judges") and prints the answer: a line saying whether the version is
// new or was already registered with this content (registration is
// idempotent), or with asJSON the service's JSON. An invalid spec prints
// each problem on stderr; a conflict says to register a new version.
func registerSpec(ctx context.Context, x *cli, c *client.Client, collection, noun string, doc any, asJSON bool) (registry.VersionInfo, error) {
	v, raw, err := c.Register(ctx, collection, doc)
	if err != nil {
		return v, refusal(x, noun, err)
	}
	if asJSON {
		writeJSON(x.stdout, raw)
		return v, nil
	}
	fmt.Fprintln(x.stdout, registeredLine(v))
	return v, nil
}

// registeredLine is one registration's answer for people.
func registeredLine(v registry.VersionInfo) string {
	what := "registered"
	if !v.Created {
		what = "already registered with this content"
	}
	facts := []string{}
	if v.CaseCount > 0 {
		facts = append(facts, fmt.Sprintf("%d %s", v.CaseCount, plural(v.CaseCount, "case")))
	}
	if v.Digest != "" {
		facts = append(facts, shortDigest(v.Digest))
	}
	line := fmt.Sprintf("%s %s@%s %s", v.Kind, v.ID, v.Version, what)
	if len(facts) > 0 {
		line += " (" + strings.Join(facts, ", ") + ")"
	}
	return line
}

// refusal explains a refused registration: the problems of an invalid
// spec, one a line on stderr. (A conflict's message already names both
// digests and the way out: a new version.)
func refusal(x *cli, noun string, err error) error {
	var ae *client.Error
	if !errors.As(err, &ae) {
		return err
	}
	ps := client.Problems(err)
	if ae.Status != http.StatusBadRequest || len(ps) == 0 {
		return err
	}
	fmt.Fprintf(x.stderr, "svc: the %s is not valid:\n", noun)
	for _, p := range ps {
		fmt.Fprintln(x.stderr, "  "+p)
	}
	return fmt.Errorf("the %s was refused (request %s)", noun, ae.RequestID)
}

// readSpecFile reads a JSON or YAML spec file (by extension: .yaml and
// .yml are YAML, anything else JSON) as JSON, keeping numbers as written.
func readSpecFile(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
		if b, err = yaml.YAMLToJSON(b); err != nil {
			return nil, fmt.Errorf("%w: %s: not YAML: %v", errUsage, path, err)
		}
	}
	var doc map[string]any
	if err := decodeJSON(b, &doc); err != nil {
		return nil, fmt.Errorf("%w: %s: not a JSON object: %v", errUsage, path, err)
	}
	return doc, nil
}

// decodeJSON decodes one JSON value, numbers as json.Number so that they
// go back to the service as written.
func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

// setIDVersion writes --id and --version over a spec's own, and requires
// both in the end.
func setIDVersion(doc map[string]any, id, version, noun, path string) error {
	if id != "" {
		doc["id"] = id
	}
	if version != "" {
		doc["version"] = version
	}
	for _, k := range []string{"id", "version"} {
		if n, ok := doc[k].(json.Number); ok {
			doc[k] = n.String() // version: 2 in YAML
		}
		if s, _ := doc[k].(string); s == "" {
			return fmt.Errorf("%w: %s has no %s: give --%s", errUsage, path, k, k)
		}
	}
	return nil
}

// baseName is a file's name without directory and extension: the default
// id of what it holds.
func baseName(path string) string {
	b := filepath.Base(path)
	return strings.TrimSuffix(b, filepath.Ext(b))
}
