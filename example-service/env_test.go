package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/ratelimit"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/service"
)

func TestEnvServes(t *testing.T) {
	t.Setenv("TOOLROUTE_ANONYMOUS", "editor")
	t.Setenv("TOOLROUTE_RATE_LIMIT", "2")
	t.Setenv("TOOLROUTE_CONFIRM_DESTRUCTIVE", "true")
	_, stderr := start(t, "-anonymous", "viewer")
	log := stderr.String()
	for _, want := range []string{
		`-anonymous is ON: every HTTP request WITHOUT a token acts as role "viewer"`,
		"at most 2 tool calls per second per caller (per process)",
		"delete_item asks for confirmation",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the announcement lacks %q:\n%s", want, log)
		}
	}
}

// TestRateLimit: -rate-limit N lets a caller make N calls at once, then
// answers with the rate-limit JSON-RPC error; another caller is apart.
func TestRateLimit(t *testing.T) {
	url, _ := start(t, "-rate-limit", "3")
	viewer := servertest.ConnectHTTP(t, url, "demo-viewer", servertest.Options{})
	var limited []error
	for range 6 {
		if _, _, err := call(t, viewer, "whoami", map[string]any{}); err != nil {
			limited = append(limited, err)
		}
	}
	if len(limited) < 2 || len(limited) > 3 {
		t.Errorf("%d of 6 immediate calls refused with -rate-limit 3, want about 3", len(limited))
	}
	for _, err := range limited {
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != ratelimit.CodeRateLimited {
			t.Errorf("refused call: %v, want a JSON-RPC error %d", err, ratelimit.CodeRateLimited)
		}
	}
	if _, _, err := call(t, servertest.ConnectHTTP(t, url, "demo-admin", servertest.Options{}), "whoami", map[string]any{}); err != nil {
		t.Errorf("another caller: %v", err)
	}
}

func TestSharedFlagErrors(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.key")
	os.WriteFile(short, []byte(strings.Repeat("k", 31)+"\n"), 0o600)
	good := filepath.Join(dir, "good.key")
	os.WriteFile(good, []byte(strings.Repeat("k", 32)), 0o600)
	tests := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-redis", "redis://127.0.0.1:1/0"}, nil, "-redis needs -state-key-file"},
		{[]string{"-state-key-file", good}, nil, "-state-key-file needs -redis"},
		{[]string{"-redis", "redis://127.0.0.1:1/0", "-state-key-file", short}, nil, "31 bytes long, at least 32 are needed"},
		{[]string{"-redis", "redis://127.0.0.1:1/0", "-state-key-file", filepath.Join(dir, "missing")}, nil, "no such file"},
		{[]string{"-redis", "http://:hunter2@127.0.0.1:1/0", "-state-key-file", good}, nil, "-redis: want redis://"},
		{[]string{"-rate-limit", "-1"}, nil, "-rate-limit must be 0 (off) or a positive number"},
		{nil, map[string]string{"TOOLROUTE_RATE_LIMIT": "many"}, "environment variable TOOLROUTE_RATE_LIMIT (-rate-limit)"},
		{nil, map[string]string{"TOOLROUTE_REDIS_URL": "redis://x"}, "environment variable TOOLROUTE_REDIS_URL names no flag"},
		{nil, map[string]string{"TOOLROUTE_REDIS": "redis://127.0.0.1:1/0", "TOOLROUTE_STATE_KEY_FILE": good}, `warming service "redis"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var stderr bytes.Buffer
			err := run(context.Background(), append([]string{"-addr", "127.0.0.1:0"}, tt.args...), strings.NewReader(""), io.Discard, &stderr)
			got := ""
			if err != nil {
				got = err.Error() + "\n" + stderr.String()
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("run %q (env %v): %q does not contain %q", tt.args, tt.env, got, tt.want)
			}
			if strings.Contains(got, "hunter2") {
				t.Errorf("a password reached the output: %s", got)
			}
		})
	}
}

// TestREADMEFlagTable: the README's flag table names every flag of the
// serving command and its environment variable.
func TestREADMEFlagTable(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The flags the service defines: ask it for its usage text.
	var usage bytes.Buffer
	run(context.Background(), []string{"-h"}, strings.NewReader(""), io.Discard, &usage)
	names := regexp.MustCompile(`(?m)^  -([a-z][a-z-]*)`).FindAllStringSubmatch(usage.String(), -1)
	if len(names) < 10 {
		t.Fatalf("found %d flags in the usage text:\n%s", len(names), &usage)
	}
	for _, m := range names {
		row := regexp.MustCompile("(?m)^\\| `-" + regexp.QuoteMeta(m[1]) + "[ `].*$").Find(readme)
		if row == nil {
			t.Errorf("README flag table: no row for -%s", m[1])
			continue
		}
		if !bytes.Contains(row, []byte("`"+service.EnvName(m[1])+"`")) {
			t.Errorf("README flag table: the row of -%s does not name %s:\n%s", m[1], service.EnvName(m[1]), row)
		}
	}
}

// TestCatalogCommand: "example-service catalog" serves the demo catalog
// API alone until its context ends, at the address TOOLROUTE_ADDR gives
// (the kit's environment rules: a misspelt variable stops it).
func TestCatalogCommand(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("TOOLROUTE_ADDR", addr)
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"catalog"}, strings.NewReader(""), io.Discard, &stderr)
	}()
	var resp *http.Response
	for range 200 { // bounded wait for the listener
		if resp, err = http.Get("http://" + addr + "/api/v1/items"); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("GET /api/v1/items: %v\n%s", err, &stderr)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "itm-1") {
		t.Errorf("GET /api/v1/items = %d %s", resp.StatusCode, body)
	}
	cancel()
	if err := await.Recv(t, done, "run's return"); err != nil {
		t.Errorf("catalog stopped with %v", err)
	}
	if err := run(context.Background(), []string{"catalog", "extra"}, strings.NewReader(""), io.Discard, io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("catalog extra = %v, want a usage error", err)
	}
	t.Setenv("TOOLROUTE_ADRR", addr)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"catalog"}, strings.NewReader(""), io.Discard, &out); !errors.Is(err, errUsage) || !strings.Contains(out.String(), "TOOLROUTE_ADRR names no flag") {
		t.Errorf("catalog with TOOLROUTE_ADRR = %v, %s; want a usage error naming it", err, &out)
	}
}

func TestDrainFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-drain-delay", "-1s"}, "-drain-delay must not be negative"},
		{[]string{"-shutdown-timeout", "0s"}, "-shutdown-timeout must be positive"},
		{[]string{"-stdio", "-drain-delay", "1s"}, "-drain-delay applies to HTTP only"},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), tt.args, strings.NewReader(""), io.Discard, &stderr)
		if err == nil || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("run %q = %v, stderr lacks %q:\n%s", tt.args, err, tt.want, &stderr)
		}
	}
}

// TestDrainDelay: with -drain-delay, a stopping service keeps serving
// for that long with /readyz answering 503.
func TestDrainDelay(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &logBuffer{url: make(chan string, 1)}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-drain-delay", "500ms"}, strings.NewReader(""), io.Discard, stderr)
	}()
	mcpURL := await.Recv(t, stderr.url, "the server's URL")
	base := strings.TrimSuffix(mcpURL, "/mcp")
	status := func() int {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status(); got != http.StatusOK {
		t.Fatalf("/readyz before stop = %d", got)
	}
	stopped := time.Now()
	cancel()
	got := 0
	for range 100 { // bounded: until the drain shows
		if got = status(); got == http.StatusServiceUnavailable {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got != http.StatusServiceUnavailable {
		t.Errorf("/readyz while draining = %d, want 503", got)
	}
	if err := await.Recv(t, done, "run's return"); err != nil {
		t.Errorf("run stopped with %v", err)
	}
	if d := time.Since(stopped); d < 500*time.Millisecond {
		t.Errorf("stopped after %v, want at least the drain delay", d)
	}
}
