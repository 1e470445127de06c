package cli

import (
	"context"
	"fmt"
	"strings"
)

const worldSynopsis = `usage: svc world ls [ID] [--format table|csv|jsonl|md] [--json]

A world is a saved sandbox state: a repository of the workspace's image store whose versions
v1, v2, ... are published by svc sandbox snapshot (and by a world session's hibernation), each
pinned by digest (docs/sandboxes.md, "Worlds"). ls lists the workspace's worlds with their
latest version (GET /worlds); ls ID lists that world's versions, oldest first (GET
/worlds/:id). A session starts from one with svc sandbox create --world ID [--world-version vN].

Exit codes: 0 listed; 2 usage or service error (a world with no version is not found).`

// RunWorld is `svc world`.
func RunWorld(ctx context.Context, x *cli, args []string) (int, error) {
	return subcommand(ctx, x, worldSynopsis, []sub{
		{"ls", runWorldList},
		{"list", runWorldList},
	}, args)
}

// runWorldList is `svc world ls [ID]`.
func runWorldList(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "world ls", worldSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	format := fs.String("format", formatTable, "output `format`: "+strings.Join(formats, ", "))
	asJSON := fs.Bool("json", false, "print the service's JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) > 1 {
		return 0, fmt.Errorf("%w: want at most one world id, got %d arguments", errUsage, len(pos))
	}
	c, err := cf.tableClient(x.getenv, *format)
	if err != nil {
		return 0, err
	}
	if len(pos) == 0 {
		list, raw, err := c.ListWorlds(ctx)
		if err != nil {
			return 0, err
		}
		sh := &sheet{cols: []column{
			{head: "WORLD", key: "id"},
			{head: "LATEST", key: "latest"},
			{head: "REF", key: "ref"},
			{head: "PUBLISHED BY", key: "publishedBy"},
			{head: "CREATED", key: "created"},
		}}
		for _, w := range list {
			if w.Latest == nil {
				sh.add(w.ID, nil, nil, nil, nil)
				continue
			}
			sh.add(w.ID, w.Latest.Tag, w.Latest.Ref, w.Latest.PublishedBy, w.Latest.Created)
		}
		return writeList(x, sh, *format, *asJSON, raw, func() {
			fmt.Fprintln(x.stderr, "no worlds in this workspace (svc sandbox create --world ID starts one; svc sandbox snapshot publishes its first version)")
		})
	}
	w, raw, err := c.World(ctx, pos[0])
	if err != nil {
		return 0, err
	}
	sh := &sheet{cols: []column{
		{head: "VERSION", key: "version"},
		{head: "TAG", key: "tag"},
		{head: "REF", key: "ref"},
		{head: "PUBLISHED BY", key: "publishedBy"},
		{head: "CREATED", key: "created"},
	}}
	for _, v := range w.Versions {
		sh.add(v.Version, v.Tag, v.Ref, v.PublishedBy, v.Created)
	}
	return writeList(x, sh, *format, *asJSON, raw, nil)
}
