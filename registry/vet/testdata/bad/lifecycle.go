package bad

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/tool"
)

const twoLines = "superseded\nby v2"

func init() {
	Registry.Register(tool.Tool[*Deps]{
		Name:        "tasks",
		Description: "d",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler:     tool.Handle(get),
		Task:        7,               // want `unknown Task TaskMode\(7\) \(want tool.TaskNever, tool.TaskAllowed or tool.TaskAlways\)`
		TaskAfter:   2 * time.Second, // want `TaskAfter 2s with Task TaskMode\(7\): only a TaskAllowed tool becomes a task after a while`
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:        "negative_after",
		Description: "d",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler:     tool.Handle(get),
		Task:        tool.TaskAllowed,
		TaskAfter:   -time.Millisecond, // want `negative TaskAfter -1ms`
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:        "old",
		Description: "d",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler:     tool.Handle(get),
		Deprecated: &tool.Deprecation{
			Reason:    twoLines, // want `Deprecated.Reason holds a line break or control character \(write one line\)`
			Successor: "old",    // want `Deprecated.Successor names the tool itself`
			Sunset:    time.Now(),
		},
		Version: "1 0", // want `Version "1 0": at most 64 characters, no space or control character`
		Tags: []string{
			"reads",
			"Reads", // want `tag "Reads": 1 to 64 of a-z 0-9 _ \. -, starting with a letter or digit`
			"reads", // want `duplicate tag "reads"`
		},
		Icons: []mcp.Icon{
			{Source: "https://example.com/i.svg"},
			{MIMEType: "image/png"}, // want `Icons\[1\] has no Source`
		},
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:        "older",
		Description: "d",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler:     tool.Handle(get),
		Deprecated:  &tool.Deprecation{}, // want `Deprecated without a Reason \(say why, and what to use instead\)`
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:        "cached",
		Description: "d",
		Local:       true,
		Behaviour:   behaviour.Additive,
		Handler:     tool.Handle(get),
		Cache: &tool.ResultCache{ // want `Cache on a tool of behaviour additive: only ReadOnly tools' results may be cached` `Cache.TTL is 0s: give a positive duration`
			StaleOnError: -time.Second, // want `Cache.StaleOnError is -1s: give 0 \(never\) or a positive duration`
		},
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:        "cached_forever",
		Description: "d",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler:     tool.Handle(get),
		Cache:       &tool.ResultCache{TTL: -time.Minute}, // want `Cache.TTL is -1m0s: give a positive duration`
	})
}
