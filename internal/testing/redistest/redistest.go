// Package redistest runs a real redis-server for tests: on a free
// 127.0.0.1 port, in a temporary directory, without persistence, stopped
// when the test ends.
//
// Without redis-server on the PATH a test calling [Start] is skipped
// with a loud message — unless the environment variable CI is "true",
// where it fails: CI installs redis-server (.ci/run), and a missing one
// must not pass silently.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a running redis-server. Its methods are safe for concurrent
// use.
type Server struct {
	// Addr is host:port, on 127.0.0.1.
	Addr string

	tb   testing.TB
	path string
	dir  string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// URL returns the server's redis:// URL, database 0.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Start starts a redis-server for tb and stops it when tb ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("redistest: redis-server is not installed, and CI=true: install it (apt-get install -y redis-server; .ci/run does)")
		}
		tb.Skipf("redistest: SKIPPING %s: redis-server is not installed (apt-get install -y redis-server); under CI=true this fails", tb.Name())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &Server{Addr: addr, tb: tb, path: path, dir: tb.TempDir()}
	s.Restart()
	tb.Cleanup(s.Stop)
	return s
}

// Stop kills the server (nothing is saved) and waits for it to exit. A
// stopped server can be started again with Restart.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the server again on the same address, empty, and waits
// until it answers PING. It does nothing while the server runs.
func (s *Server) Restart() {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	_, port, _ := net.SplitHostPort(s.Addr)
	cmd := exec.Command(s.path,
		"--bind", "127.0.0.1", "--port", port, "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "yes",
		"--loglevel", "warning")
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		s.tb.Fatalf("redistest: starting redis-server: %v", err)
	}
	// Bounded: a server that does not answer in 10 s fails the test.
	for range 1000 {
		if ping(s.Addr) == nil {
			s.cmd = cmd
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	s.tb.Fatalf("redistest: redis-server on %s did not answer PING: %s", s.Addr, out)
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %s", strconv.Quote(line))
	}
	return nil
}
