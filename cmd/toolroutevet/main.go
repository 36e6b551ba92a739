// Command toolroutevet checks toolroute tool declarations at compile
// time: see [github.com/toolroute/toolroute/registry/vet].
//
//	go run github.com/toolroute/toolroute/cmd/toolroutevet ./...
//	go vet -vettool=$(go env GOPATH)/bin/toolroutevet ./...
package main

import (
	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/toolroute/toolroute/registry/vet"
)

func main() { singlechecker.Main(vet.Analyzer) }
