package cli

import (
	"context"
)

const harnessSynopsis = `usage: svc harness register FILE [--id id] [--version v] [--json]
       svc harness list [--format f] [--json]

register registers the harness spec in FILE (JSON, or YAML by extension .yaml/.yml) as a
harness version (POST /harnesses; shapes in docs/registries.md). --id and --version
override the file's. Registering the same content again is harmless; other content under a
registered version is refused: register a new version.

Exit codes: 0 registered (or already registered); 2 usage or service error.`

// RunHarness is `svc harness`.
func RunHarness(ctx context.Context, x *cli, args []string) (int, error) {
	return subcommand(ctx, x, harnessSynopsis, []sub{
		{"register", runHarnessRegister},
		{"list", func(ctx context.Context, x *cli, args []string) (int, error) {
			return runRegistryList(ctx, x, "harness list", harnessSynopsis, "/harnesses", args)
		}},
	}, args)
}

// runHarnessRegister is `svc harness register`.
func runHarnessRegister(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "harness register", harnessSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	id := fs.String("id", "", "the harness's id (default: the file's)")
	version := fs.String("version", "", "the version to register (default: the file's)")
	asJSON := fs.Bool("json", false, "print the service's answer as JSON")
	arg, err := parseOne(fs, args, "harness file")
	if err != nil {
		return 0, err
	}
	doc, err := readSpecFile(arg)
	if err != nil {
		return 0, err
	}
	if err := setIDVersion(doc, *id, *version, "harness", arg); err != nil {
		return 0, err
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	if _, err := registerSpec(ctx, x, c, "/harnesses", "harness", doc, *asJSON); err != nil {
		return 0, err
	}
	return exitOK, nil
}
