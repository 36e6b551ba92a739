package main

import (
	"context"
	"io"

	"github.com/toolroute/toolroute/service"
)

// run runs example-service as main does, with these arguments and
// streams.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return command().Run(ctx, args, stdin, stdout, stderr)
}

// errUsage is the error of a command-line mistake.
var errUsage = service.ErrUsage
