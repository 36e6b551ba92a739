package tool_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

type importArgs struct {
	Files []string `json:"files"`
}

type importResult struct {
	Imported int `json:"imported"`
}

// A handler reports its progress with Progress; a client that gave a
// progress token receives the reports, in order. The registry (or the
// server) begins every call, with the state Progress needs.
func ExampleProgress() {
	reg := registry.New[struct{}]()
	reg.Register(tool.Tool[struct{}]{
		Name:        "import",
		Description: "Import files.",
		Local:       true,
		Behaviour:   behaviour.Additive,
		Handler: tool.Handle(func(ctx context.Context, _ struct{}, req *mcp.CallToolRequest, in importArgs) (importResult, error) {
			for i, f := range in.Files {
				// ... import f ...
				_ = tool.Progress(ctx, req, float64(i+1), float64(len(in.Files)), "imported "+f)
			}
			return importResult{Imported: len(in.Files)}, nil
		}),
	})
	s := mcp.NewServer(&mcp.Implementation{Name: "example", Version: "v1"}, nil)
	reg.Install(s, struct{}{})

	reports := make(chan string, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			p := req.Params
			reports <- fmt.Sprintf("%v/%v %s", p.Progress, p.Total, p.Message)
		},
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, _ := s.Connect(context.Background(), st, nil)
	defer ss.Close()
	cs, _ := client.Connect(context.Background(), ct, nil)
	defer cs.Close()

	params := &mcp.CallToolParams{Name: "import", Arguments: importArgs{Files: []string{"a.csv", "b.csv"}}}
	params.SetProgressToken("import-1")
	if _, err := cs.CallTool(context.Background(), params); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(<-reports)
	fmt.Println(<-reports)
	// Output:
	// 1/2 imported a.csv
	// 2/2 imported b.csv
}
