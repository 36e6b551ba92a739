package service

import (
	"flag"
	"strings"
	"testing"
)

func TestEnvName(t *testing.T) {
	for flagName, want := range map[string]string{
		"proxy-auth":          "TOOLROUTE_PROXY_AUTH",
		"addr":                "TOOLROUTE_ADDR",
		"confirm-destructive": "TOOLROUTE_CONFIRM_DESTRUCTIVE",
		"state-key-file":      "TOOLROUTE_STATE_KEY_FILE",
	} {
		if got := EnvName(flagName); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", flagName, got, want)
		}
	}
}

// TestApplyEnv: variables set what the command line leaves unset, over
// any FlagSet; the command line wins; empty counts as unset; unknown
// TOOLROUTE_ variables and refused values are errors naming the
// variable, never quoting the value.
func TestApplyEnv(t *testing.T) {
	newFS := func() (*flag.FlagSet, *string, *int, *bool) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		return fs, fs.String("proxy-auth", "", ""), fs.Int("rate-limit", 0, ""), fs.Bool("stdio", false, "")
	}
	fs, proxy, rate, stdio := newFS()
	fs.Parse([]string{"-rate-limit", "7"})
	set, err := applyEnv(fs, []string{
		"TOOLROUTE_PROXY_AUTH=http://rbac:8080", "TOOLROUTE_RATE_LIMIT=99", "TOOLROUTE_STDIO=",
		"PATH=/bin", "OTHER_RATE_LIMIT=5",
	})
	if err != nil || *proxy != "http://rbac:8080" || *rate != 7 || *stdio {
		t.Errorf("applyEnv = %v: proxy-auth %q, rate-limit %d, stdio %v; want http://rbac:8080, 7 (command line wins), false (empty is unset)", err, *proxy, *rate, *stdio)
	}
	if len(set) != 1 || set[0] != "proxy-auth" {
		t.Errorf("set = %q, want [proxy-auth]", set)
	}

	fs, _, _, _ = newFS()
	_, err = applyEnv(fs, []string{"TOOLROUTE_RATE_LIMT=5", "TOOLROUTE_RATE_LIMIT=s3cret-value", "TOOLROUTE_STDIO=yes-please"})
	for _, want := range []string{
		"environment variable TOOLROUTE_RATE_LIMT names no flag",
		"TOOLROUTE_PROXY_AUTH, TOOLROUTE_RATE_LIMIT, TOOLROUTE_STDIO",
		"environment variable TOOLROUTE_RATE_LIMIT (-rate-limit): ",
		"environment variable TOOLROUTE_STDIO (-stdio): ",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("applyEnv error %v does not contain %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "s3cret-value") {
		t.Errorf("the error quotes a value: %v", err)
	}
}

// TestEnvServes: the whole service configured from the environment
// only, and a flag on the command line winning over its variable.
