package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/service"
)

// catalogCommand serves the demo catalog API alone, in memory, until its
// context is done: the upstream that replicas of the service share in
// the deployment kit (deploy/). Its -addr is also TOOLROUTE_ADDR.
var catalogCommand = service.Subcommand{
	Usage: "catalog [-addr ADDR]\tserve the demo catalog API alone (the upstream that replicas share)",
	Run: func(ctx context.Context, args []string, _, stderr io.Writer) error {
		fs := flag.NewFlagSet("example-service catalog", flag.ContinueOnError)
		fs.SetOutput(stderr)
		addr := fs.String("addr", "127.0.0.1:8081", "HTTP listen `address`")
		if err := service.ParseFlags(fs, args, os.Environ()); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			fmt.Fprintf(stderr, "example-service catalog: %v\n", err)
			return service.ErrUsage
		}
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
		logger := slog.New(slog.NewTextHandler(stderr, nil))
		srv := &http.Server{
			Handler:           catalog.NewHandler(catalog.NewStore(catalog.DemoItems()...)),
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		}
		fmt.Fprintf(stderr, "example-service: demo catalog API (in memory) at http://%s\n", ln.Addr())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ln) }()
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
		}
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return srv.Shutdown(stopCtx)
	},
}
