package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"svc/internal/domain/registry"
)

const judgeSynopsis = `usage: svc judge register --file judge.py [--language python|node] --id id --version v [flags] [--json]
       svc judge register SPEC.json|SPEC.yaml [--id id] [--version v] [--json]
       svc judge list [--format f] [--json]

register registers a code judge (POST /judges; the contract is in docs/judges.md). With
--file the source is read from the file as it is (no escaping by hand) and sent as the
spec's code; the language follows the extension (.py python, .js/.mjs/.cjs node) unless
--language says otherwise, and the id defaults to the file's name. A positional SPEC file
is a whole judge spec instead. Registering the same content again is harmless; other
content under a registered version is refused: register a new version. --dry-run validates
without registering (POST /judges/validate).

Exit codes: 0 registered (or already registered); 1 --dry-run found the spec invalid or in
conflict; 2 usage or service error.`

// RunJudge is `svc judge`.
func RunJudge(ctx context.Context, x *cli, args []string) (int, error) {
	return subcommand(ctx, x, judgeSynopsis, []sub{
		{"register", runJudgeRegister},
		{"list", func(ctx context.Context, x *cli, args []string) (int, error) {
			return runRegistryList(ctx, x, "judge list", judgeSynopsis, "/judges", args)
		}},
	}, args)
}

// codeJudgeOptions are what a code judge file leaves to flags.
type codeJudgeOptions struct {
	id, version, language, description, runtime string
	timeoutSec                                  int
}

// runJudgeRegister is `svc judge register`.
func runJudgeRegister(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "judge register", judgeSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	var o codeJudgeOptions
	file := fs.String("file", "", "the judge's source `file`, sent as its code")
	fs.StringVar(&o.language, "language", "", "python or node (default: by the file's extension)")
	fs.StringVar(&o.id, "id", "", "the judge's id (default: the file's name without extension)")
	fs.StringVar(&o.version, "version", "", "the version to register (required with --file)")
	fs.StringVar(&o.description, "description", "", "the judge's description")
	fs.StringVar(&o.runtime, "runtime", "", "the registered runtime the judge runs on")
	fs.IntVar(&o.timeoutSec, "timeout-sec", 0, "bound on one execution, in seconds (default: the service's)")
	dryRun := fs.Bool("dry-run", false, "validate only: say whether registering would succeed, register nothing")
	asJSON := fs.Bool("json", false, "print the service's answer as JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	var doc map[string]any
	switch {
	case *file != "" && len(pos) == 0:
		if doc, err = codeJudgeSpec(*file, o); err != nil {
			return 0, err
		}
	case *file == "" && len(pos) == 1:
		if doc, err = readSpecFile(pos[0]); err != nil {
			return 0, err
		}
		if err := setIDVersion(doc, o.id, o.version, "judge", pos[0]); err != nil {
			return 0, err
		}
	default:
		return 0, fmt.Errorf("%w: give the judge's source with --file, or one spec file", errUsage)
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	if *dryRun {
		return validateSpec(ctx, x, c, "/judges", doc, *asJSON)
	}
	if _, err := registerSpec(ctx, x, c, "/judges", "judge", doc, *asJSON); err != nil {
		return 0, err
	}
	return exitOK, nil
}

// judgeLanguages maps a source file's extension to a code judge's language.
var judgeLanguages = map[string]string{".py": "python", ".js": "node", ".mjs": "node", ".cjs": "node"}

// codeJudgeSpec builds a code judge spec from its source file.
func codeJudgeSpec(path string, o codeJudgeOptions) (map[string]any, error) {
	code, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if strings.TrimSpace(string(code)) == "" {
		return nil, fmt.Errorf("%w: %s is empty", errUsage, path)
	}
	lang := o.language
	if lang == "" {
		if lang = judgeLanguages[strings.ToLower(filepath.Ext(path))]; lang == "" {
			return nil, fmt.Errorf("%w: cannot tell the language of %s from its extension: give --language python or node", errUsage, path)
		}
	}
	id := o.id
	if id == "" {
		id = baseName(path)
	}
	doc := map[string]any{"kind": string(registry.JudgeCode), "id": id, "language": lang, "code": string(code)}
	if o.description != "" {
		doc["description"] = o.description
	}
	if o.runtime != "" {
		doc["runtime"] = o.runtime
	}
	if o.timeoutSec != 0 {
		doc["timeoutSec"] = o.timeoutSec
	}
	if err := setIDVersion(doc, "", o.version, "judge", path); err != nil {
		return nil, err
	}
	return doc, nil
}
