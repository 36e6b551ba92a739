package main

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// envPrefix starts the environment variable of every serving flag:
// -proxy-auth is TOOLROUTE_PROXY_AUTH.
const envPrefix = "TOOLROUTE_"

// envName is the environment variable of the flag named name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// applyEnv sets every flag of fs that the command line left unset from
// its environment variable (see envName) in environ ("KEY=value" pairs,
// as os.Environ gives them): a flag on the command line wins, and an
// empty variable counts as unset. It works over whatever flags fs
// defines, so every new flag gets its variable. A TOOLROUTE_ variable
// that names no flag is an error (a misspelt setting must not be ignored
// silently), and so is a value the flag refuses (naming the variable).
// It returns the names of the flags it set.
func applyEnv(fs *flag.FlagSet, environ []string) ([]string, error) {
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	byVar := map[string]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) { byVar[envName(f.Name)] = f })
	var (
		errs []error
		set  []string
	)
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, envPrefix) {
			continue
		}
		f := byVar[k]
		switch {
		case f == nil:
			errs = append(errs, fmt.Errorf("environment variable %s names no flag (the variables are %s + a flag's name in upper snake case: %s)", k, envPrefix, strings.Join(slices.Sorted(maps.Keys(byVar)), ", ")))
		case v == "" || onCommandLine[f.Name]:
		default:
			// Never quote the value: it may be a credential.
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("environment variable %s (-%s): %v", k, f.Name, err))
				continue
			}
			set = append(set, f.Name)
		}
	}
	return set, errors.Join(errs...)
}
