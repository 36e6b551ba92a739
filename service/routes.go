package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/export"
	"github.com/toolroute/toolroute/authz/lint"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// routesUsage is the usage of the routes subcommand, in both usage texts.
const routesUsage = `  NAME routes [-format FORMAT] [-policy FILE]
                          print the tool → route table as json (the default) or openapi,
                          or the role policy over it as rego, cedar, casbin or istio
  NAME routes -matrix [-format text|json] [-policy FILE]
                          print which role sees which tool
  NAME routes -role ROLE -behaviour read-only[,additive,destructive]
                          print a role policy granting those tools' routes
`

// routes is the "routes" subcommand. It reads its flags from the command
// line only.
func (c Command) routes(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(c.Name+" routes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "", "the output `format`: "+strings.Join(export.Formats, ", ")+" (default json); with -matrix: text (default) or json")
	policyFile := fs.String("policy", "", "role policies `file` (JSON); default: the service's embedded policy")
	matrix := fs.Bool("matrix", false, "print the role × tool visibility matrix")
	claim := fs.String("claim", "", "with -format istio: the JWT `claim` holding the caller's roles (\".\" separates nested claims; default roles)")
	namespace := fs.String("namespace", "", "with -format istio: the policies' `namespace` (default: none, kubectl's current one)")
	role := fs.String("role", "", "print a role policy for the role `NAME` instead of the route table")
	behaviours := fs.String("behaviour", "", "with -role: the `behaviours` (comma-separated: read-only, additive, destructive) whose tools' routes the role gets")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage:\n"+strings.ReplaceAll(routesUsage, "NAME", c.Name)+"\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return ErrUsage
	}
	table, err := c.tables()
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	istioOnly := set["claim"] || set["namespace"]
	switch {
	case fs.NArg() > 0:
		return usageError(fs, c.Name, "unexpected argument %q", fs.Arg(0))
	case *role != "" || *behaviours != "":
		return rolePolicy(fs, c.Name, table, *role, *behaviours, stdout, set)
	case *matrix && *format != "" && *format != "text" && *format != "json":
		return usageError(fs, c.Name, "-matrix prints text or json, not %q", *format)
	case *matrix && istioOnly:
		return usageError(fs, c.Name, "-claim and -namespace apply to -format istio, not -matrix")
	case !*matrix && *format != "" && !slices.Contains(export.Formats, *format):
		return usageError(fs, c.Name, "-format %q: want one of %s", *format, strings.Join(export.Formats, ", "))
	case !*matrix && istioOnly && *format != export.FormatIstio:
		return usageError(fs, c.Name, "-claim and -namespace apply to -format istio")
	}
	var rps []authz.RolePolicy
	if *policyFile != "" || c.Policy != nil {
		if rps, _, err = loadPolicy(*policyFile, c.Policy); err != nil {
			return err
		}
	} else if *matrix || (*format != "" && *format != export.FormatJSON) {
		return usageError(fs, c.Name, "the service embeds no role policy: give -policy FILE")
	}
	e, err := export.New(table, rps)
	if err != nil {
		return err
	}
	switch {
	case *matrix && *format == "json":
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(e.Matrix())
	case *matrix:
		_, err := io.WriteString(stdout, e.Matrix().Text())
		return err
	case *format == "":
		*format = export.FormatJSON
	}
	return e.Write(stdout, *format, export.Options{RoleClaim: *claim, Namespace: *namespace, Title: c.Name + " routes", Version: c.Version})
}

// rolePolicy is "routes -role NAME -behaviour B,...": a role policy
// granting exactly the routes of the tools of those behaviours.
func rolePolicy(fs *flag.FlagSet, name string, table registry.RouteTable, role, behaviours string, stdout io.Writer, set map[string]bool) error {
	switch {
	case role == "":
		return usageError(fs, name, "-behaviour needs -role")
	case behaviours == "":
		return usageError(fs, name, "-role needs -behaviour")
	}
	for _, f := range []string{"format", "policy", "matrix", "claim", "namespace"} {
		if set[f] {
			return usageError(fs, name, "-%s does not apply to -role: it prints a role policy", f)
		}
	}
	var want []behaviour.Behaviour
	for _, name := range strings.Split(behaviours, ",") {
		b, err := behaviour.Parse(strings.TrimSpace(name))
		if err != nil {
			return usageError(fs, name, "-behaviour: %v", err)
		}
		want = append(want, b)
	}
	var rs []tool.Route
	for _, t := range table.Tools {
		if slices.Contains(want, t.Behaviour) {
			rs = append(rs, t.Routes...)
		}
	}
	// An array of role policies: the shape -policy and the proxy read.
	return writeJSON(stdout, []authz.RolePolicy{authz.RolePolicyFor(role, rs)})
}

// loadPolicy reads the role policies of -policy file ("" = embedded),
// checked and compiled by authz.ParsePolicy (unknown fields, trailing
// data, bad regexps are errors), and returns them both as data and
// compiled.
func loadPolicy(file string, embedded []byte) ([]authz.RolePolicy, *authz.Policy, error) {
	data, err := policyData(file, embedded)
	if err != nil {
		return nil, nil, err
	}
	return parsePolicy(file, data)
}

// policyData is the content of -policy file, else the embedded policy.
func policyData(file string, embedded []byte) ([]byte, error) {
	if file != "" {
		return readFile("policy", file)
	}
	if embedded == nil {
		return nil, errors.New("no role policy: give -policy FILE (a JSON array of role policies [{\"role\", \"accessPolicies\"}]) or -proxy-auth URL")
	}
	return embedded, nil
}

// parsePolicy parses the role policies data of -policy file ("" =
// embedded), as loadPolicy.
func parsePolicy(file string, data []byte) ([]authz.RolePolicy, *authz.Policy, error) {
	name := policyName(file)
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil, fmt.Errorf("-policy %s: the file is empty: want a JSON array of role policies [{\"role\", \"accessPolicies\"}]", name)
	}
	p, err := authz.ParsePolicy(data)
	var rps []authz.RolePolicy
	if jerr := json.Unmarshal(data, &rps); err == nil && jerr != nil {
		err = jerr
	} else if err != nil && jerr == nil {
		// The lint names every rule authz refuses, with the fix; authz
		// stops at the first.
		var errs []error
		for _, f := range lint.Policy(registry.RouteTable{}, rps) {
			if f.Kind == lint.Invalid || f.Kind == lint.UnknownMethod {
				errs = append(errs, errors.New(f.Message))
			}
		}
		if len(errs) > 0 {
			err = errors.Join(errs...)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("-policy %s: %w", name, err)
	}
	return rps, p, nil
}

// policyName names the policy of -policy file in messages.
func policyName(file string) string {
	if file == "" {
		return "(the embedded policy)"
	}
	return file
}

func writeJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// readFile reads a configuration file named by a flag.
func readFile(flagName, path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-%s: %w", flagName, err)
	}
	return data, nil
}
