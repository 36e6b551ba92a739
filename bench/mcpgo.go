package bench

import (
	"context"
	"encoding/json"
	"net/http"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"

	"github.com/toolroute/toolroute/internal/testing/benchtools"
)

// MCPGo returns a mark3labs/mcp-go server of the same n tools as
// benchtools' (the same names, descriptions, annotations and schemas, as
// raw JSON), served statelessly at /mcp, without authorization.
func MCPGo(n int) http.Handler {
	s := mcpgoserver.NewMCPServer("mcp-go", "1", mcpgoserver.WithToolCapabilities(false))
	in, out := benchtools.Schemas()
	inJSON, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	outJSON, err := json.Marshal(out)
	if err != nil {
		panic(err)
	}
	tools := make([]mcpgoserver.ServerTool, n)
	for i := range n {
		t := mcpgo.NewToolWithRawSchema(benchtools.Name(i), benchtools.Description(i), inJSON)
		mcpgo.WithRawOutputSchema(outJSON)(&t)
		mcpgo.WithTitleAnnotation("Item")(&t)
		mcpgo.WithReadOnlyHintAnnotation(true)(&t)
		mcpgo.WithDestructiveHintAnnotation(false)(&t)
		mcpgo.WithIdempotentHintAnnotation(true)(&t)
		mcpgo.WithOpenWorldHintAnnotation(false)(&t)
		t.Title = "Item"
		tools[i] = mcpgoserver.ServerTool{Tool: t, Handler: mcpgoHandler}
	}
	s.AddTools(tools...)
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpgoserver.NewStreamableHTTPServer(s, mcpgoserver.WithStateLess(true)))
	return mux
}

func mcpgoHandler(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	var in benchtools.Args
	if err := req.BindArguments(&in); err != nil {
		return mcpgo.NewToolResultError(err.Error()), nil
	}
	out := benchtools.Body(in)
	text, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return mcpgo.NewToolResultStructured(out, string(text)), nil
}
