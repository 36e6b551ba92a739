package service

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"go.uber.org/fx"

	"github.com/toolroute/toolroute/registry"
)

// check is the check subcommand: it builds what serve would (the
// configuration, the policy and its lint, the tokens, the secrets, the
// upstreams, the fx graph with the tools' containers) without serving,
// contacting nothing, and reports every problem. A lint finding, a
// warning at serve's start, is an error here.
func (c Command) check(cfg Config, stdout, stderr io.Writer) error {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	k, err := c.prepareCheck(cfg, logger)
	if err != nil {
		return err
	}
	var problems []string
	for _, f := range k.acc.files.lint {
		problems = append(problems, "policy lint: "+f)
	}
	// The graph, built and not started: the containers' constructors,
	// the tools' registration, the services, as serve builds them.
	k.dry = true
	app := fx.New(append(k.options(), fx.Invoke(func(Upstreams) {}))...)
	if err := app.Err(); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(stderr, "%s check: %s\n", c.Name, p)
		}
		return fmt.Errorf("check: %d problem(s)", len(problems))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s check: ok: %d tools", c.Name, len(k.table.Tools))
	if k.acc.files.roles != nil {
		fmt.Fprintf(&b, ", roles %s", strings.Join(k.acc.files.roles, ", "))
	}
	if len(k.upstreams) > 0 {
		var ups []string
		for _, key := range slices.Sorted(maps.Keys(k.upstreams)) {
			u := k.upstreams[key]
			if u == "" {
				u = "embedded"
			}
			ups = append(ups, key+"="+u)
		}
		fmt.Fprintf(&b, ", upstreams %s", strings.Join(ups, ", "))
	}
	b.WriteString("\n")
	_, err = io.WriteString(stdout, b.String())
	return err
}

// prepareCheck is prepare without telemetry, Redis or anything that
// contacts a server.
func (c Command) prepareCheck(cfg Config, logger *slog.Logger) (*kit, error) {
	k := &kit{cmd: c, cfg: cfg, logger: logger, dry: true}
	var err error
	if k.table, err = c.tables(); err != nil {
		return nil, err
	}
	if k.acc, err = loadAccess(c, cfg, k.table, nil, true); err != nil {
		return nil, err
	}
	// Redis was checked by Config.check, and is never dialled here.
	if k.upstreams, err = resolveUpstreams(cfg.Upstreams, serviceKeys([]registry.RouteTable{k.table}), c.Embedded); err != nil {
		return nil, err
	}
	return k, nil
}
