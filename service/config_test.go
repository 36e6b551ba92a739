package service

import (
	"flag"
	"os"
	"reflect"
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

// TestParseErrorForms: a value a bool, int or duration flag cannot parse
// is quoted, with the accepted forms, from the command line and from
// the environment alike.
func TestParseErrorForms(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"-rate-limit", "many"}, "", `invalid value "many" for flag -rate-limit: want a whole number`},
		{nil, "TOOLROUTE_RATE_LIMIT=many", `TOOLROUTE_RATE_LIMIT (-rate-limit): "many": want a whole number`},
		{nil, "TOOLROUTE_DRAIN_DELAY=3", `TOOLROUTE_DRAIN_DELAY (-drain-delay): "3": want a duration, such as 500ms`},
		{nil, "TOOLROUTE_STDIO=yes", `TOOLROUTE_STDIO (-stdio): "yes": want true or false`},
		{[]string{"-stdio=yes"}, "", `invalid boolean value "yes" for -stdio: want true or false`},
		{nil, "TOOLROUTE_UPSTREAM_THINGS=http://u:s3cret@things", `TOOLROUTE_UPSTREAM_THINGS (-upstream things=URL): "http://u:xxxxx@things": must not carry credentials`},
	} {
		if tt.env != "" {
			k, v, _ := strings.Cut(tt.env, "=")
			t.Setenv(k, v)
		}
		var out strings.Builder
		_, err := Command{Name: "t"}.parse("serve", tt.args, &out)
		if err == nil || !strings.Contains(out.String(), tt.want) {
			t.Errorf("parse %q with %s = %v, output lacks %q:\n%s", tt.args, tt.env, err, tt.want, &out)
		}
		if strings.Contains(out.String(), "s3cret") {
			t.Errorf("a credential reached the output:\n%s", &out)
		}
		if tt.env != "" {
			os.Unsetenv(strings.SplitN(tt.env, "=", 2)[0])
		}
	}
}

// TestOAuthFlagsTable: every OAuth field but Issuer is in oauthFlags,
// under a flag the kit defines, so that a Config built in Go is refused
// as the command line is (-audience needs -oidc-issuer).
func TestOAuthFlagsTable(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var cfg Config
	cfg.register(fs)
	inTable := map[string]bool{}
	for _, f := range oauthFlags {
		if fs.Lookup(f.name) == nil {
			t.Errorf("oauthFlags names -%s, which the kit does not define", f.name)
		}
		if _, ok := reflect.TypeFor[OAuth]().FieldByName(f.field); !ok {
			t.Errorf("oauthFlags names the field %s, which OAuth lacks", f.field)
		}
		inTable[f.field] = true
	}
	for f := range reflect.TypeFor[OAuth]().Fields() {
		if f.Name != "Issuer" && !inTable[f.Name] {
			t.Errorf("OAuth.%s is in no row of oauthFlags", f.Name)
		}
	}
	for _, f := range oauthFlags {
		var c Config
		if v := reflect.ValueOf(&c.OAuth).Elem().FieldByName(f.field); v.Kind() == reflect.Bool {
			v.SetBool(true)
		} else {
			v.SetString("x")
		}
		if err := c.check(); err == nil || !strings.Contains(err.Error(), "-"+f.name+" needs -oidc-issuer") {
			t.Errorf("a Config with only OAuth.%s set: %v, want -%s needs -oidc-issuer", f.field, err, f.name)
		}
	}
}
