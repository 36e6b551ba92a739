package bad

import (
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/tool"
)

func init() {
	Registry.Register(tool.Tool[*Deps]{
		Name:        "twice", // want `duplicate tool name, first registered at dup.go:9`
		Description: "d",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler:     tool.Handle(get),
	})
}
