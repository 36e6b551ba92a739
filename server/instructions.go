package server

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// defaultInstructionsTool is the name of the tool that carries the full
// instructions under [Options.AutoInstructions].
const defaultInstructionsTool = "instructions"

// instructions works out what a server advertises as its instructions
// and, under AutoInstructions, the installer of the tool that carries the
// full text.
func instructions(o *Options) (advertised string, meta Installer, err error) {
	custom := strings.TrimSpace(o.CustomInstructions)
	full := strings.TrimSpace(o.Instructions)
	short := strings.TrimSpace(o.ShortInstructions)
	if !o.AutoInstructions || full == "" {
		return join(custom, full), nil, nil
	}
	name := o.InstructionsTool
	if name == "" {
		name = defaultInstructionsTool
	}
	text := join(custom, full)
	r := registry.New[string]()
	t := tool.Tool[string]{
		Name:        name,
		Title:       "Instructions",
		Description: "Read this server's full instructions before using its other tools:\n\n" + text,
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler: tool.HandleResult(func(_ context.Context, text string, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		}),
	}
	if err := r.Check(t); err != nil {
		return "", nil, fmt.Errorf("server: Options.InstructionsTool: %w", err)
	}
	r.Register(t)
	pointer := fmt.Sprintf("Call the `%s` tool for this server's full instructions before using its other tools.", name)
	return join(custom, short, pointer), Install(r, text), nil
}

func join(parts ...string) string {
	var nonEmpty []string
	for _, p := range parts {
		if p != "" {
			nonEmpty = append(nonEmpty, p)
		}
	}
	return strings.Join(nonEmpty, "\n\n")
}

// backticked finds `name` spans that look like tool names.
var backticked = regexp.MustCompile("`([A-Za-z0-9_.-]+)`")

// checkInstructions refuses instructions that name, in backticks, a tool
// the server does not have.
func checkInstructions(o *Options, tools []*tool.Call) error {
	known := make(map[string]bool, len(tools))
	for _, t := range tools {
		known[t.Tool] = true
	}
	for _, f := range []struct{ field, text string }{
		{"CustomInstructions", o.CustomInstructions},
		{"Instructions", o.Instructions},
		{"ShortInstructions", o.ShortInstructions},
	} {
		for _, m := range backticked.FindAllStringSubmatch(f.text, -1) {
			if !known[m[1]] {
				return fmt.Errorf("server: Options.%s names the tool `%s`, which the server does not have (tool names in backticks must be registered tools)", f.field, m[1])
			}
		}
	}
	return nil
}
