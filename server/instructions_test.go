package server_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
)

func TestInstructions(t *testing.T) {
	const (
		full   = "Use `whoami` to learn who you are, then `echo` to repeat yourself."
		short  = "A test server; start with `whoami`."
		custom = "This instance serves the staging catalog."
	)
	tests := []struct {
		name       string
		opts       server.Options
		advertised string
		tools      []string
		toolText   string // the instructions tool's result
	}{
		{
			name:       "none",
			advertised: "",
			tools:      []string{"boom", "echo", "fail", "get_thing", "wait", "whoami"},
		},
		{
			name:       "full",
			opts:       server.Options{Instructions: "  " + full + "\n"},
			advertised: full,
			tools:      []string{"boom", "echo", "fail", "get_thing", "wait", "whoami"},
		},
		{
			name:       "custom first",
			opts:       server.Options{Instructions: full, CustomInstructions: custom},
			advertised: custom + "\n\n" + full,
			tools:      []string{"boom", "echo", "fail", "get_thing", "wait", "whoami"},
		},
		{
			name:       "auto",
			opts:       server.Options{Instructions: full, ShortInstructions: short, CustomInstructions: custom, AutoInstructions: true},
			advertised: custom + "\n\n" + short + "\n\nCall the `instructions` tool for this server's full instructions before using its other tools.",
			tools:      []string{"boom", "echo", "fail", "get_thing", "instructions", "wait", "whoami"},
			toolText:   custom + "\n\n" + full,
		},
		{
			name:       "auto, named tool",
			opts:       server.Options{Instructions: full, AutoInstructions: true, InstructionsTool: "read_me_first"},
			advertised: "Call the `read_me_first` tool for this server's full instructions before using its other tools.",
			tools:      []string{"boom", "echo", "fail", "get_thing", "read_me_first", "wait", "whoami"},
			toolText:   full,
		},
		{
			name:       "auto without instructions",
			opts:       server.Options{AutoInstructions: true, CustomInstructions: custom},
			advertised: custom,
			tools:      []string{"boom", "echo", "fail", "get_thing", "wait", "whoami"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Authorizer = adminOnly{}
			s := newTestServer(t, opts, newDeps("a"))
			for _, version := range []string{"", "2025-11-25"} {
				cs := servertest.Connect(t, s, &authz.Caller{Subject: "v"}, servertest.Options{ProtocolVersion: version})
				if got := cs.InitializeResult().Instructions; got != tt.advertised {
					t.Errorf("version %q: advertised instructions:\n%q\nwant\n%q", version, got, tt.advertised)
				}
				// Visible to a caller who sees only local tools.
				want := slicesWithout(tt.tools, "get_thing")
				if diff := cmp.Diff(want, servertest.ToolNames(t, cs)); diff != "" {
					t.Errorf("version %q: tools (-want +got):\n%s", version, diff)
				}
				if tt.toolText != "" {
					name := opts.InstructionsTool
					if name == "" {
						name = "instructions"
					}
					if got := text(call(t, cs, name, nil)); got != tt.toolText {
						t.Errorf("instructions tool result:\n%q\nwant\n%q", got, tt.toolText)
					}
				}
			}
		})
	}
}

func slicesWithout(s []string, drop string) []string {
	var out []string
	for _, v := range s {
		if v != drop {
			out = append(out, v)
		}
	}
	return out
}

func TestInstructionsErrors(t *testing.T) {
	tests := []struct {
		name string
		opts server.Options
		want string
	}{
		{"unknown tool in instructions", server.Options{Instructions: "Use `whoami` and `list_items`."}, "Options.Instructions names the tool `list_items`"},
		{"unknown tool in short", server.Options{Instructions: "x", ShortInstructions: "`nope`", AutoInstructions: true}, "Options.ShortInstructions names the tool `nope`"},
		{"unknown tool in custom", server.Options{CustomInstructions: "`nope`"}, "Options.CustomInstructions names the tool `nope`"},
		{"instructions tool is not there without auto", server.Options{Instructions: "Call `instructions`."}, "names the tool `instructions`"},
		{"conflicting tool name", server.Options{Instructions: "x", AutoInstructions: true, InstructionsTool: "echo"}, `instructions tool "echo"`},
		{"invalid tool name", server.Options{Instructions: "x", AutoInstructions: true, InstructionsTool: "read me"}, "InstructionsTool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Authorizer = authz.AllowAll()
			_, err := server.New(opts, server.Install(testRegistry(), newDeps("a")))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
