// Package proc runs the programs of end-to-end tests: a service module
// built outside this one (Build), started as a process whose output the
// test reads (Start, Proc.Wait).
package proc

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolroute/toolroute/internal/testing/await"
)

// Build builds the main package of the module in dir as the binary out
// and returns out. The module may require this one through a replace
// directive: the build resolves the module graph from go.mod
// (GOFLAGS=-mod=mod), outside any workspace.
func Build(tb testing.TB, dir, out string) string {
	tb.Helper()
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if data, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build in %s: %v\n%s", dir, err, data)
	}
	return out
}

// Options are Start's.
type Options struct {
	// Dir is the process's working directory ("" = the test's).
	Dir string
	// Env is added to the test's environment, from which every
	// TOOLROUTE_ variable is left out.
	Env []string
}

// Proc is a running program and what it wrote on its standard output
// and error.
type Proc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	log    strings.Builder
	exited chan struct{}
	err    error
}

// Start runs bin with args; it is stopped with SIGINT, and waited for,
// when tb ends, and its last output lines are logged if tb failed.
func Start(tb testing.TB, bin string, opts Options, args ...string) *Proc {
	tb.Helper()
	p := &Proc{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	p.cmd.Dir = opts.Dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TOOLROUTE_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, opts.Env...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(func() {
		p.Interrupt()
		await.Recv(tb, p.exited, "the exit of %s", filepath.Base(bin))
		if tb.Failed() {
			tb.Logf("the output of %s:\n%s", filepath.Base(bin), lastLines(p.String(), 40))
		}
	})
	return p
}

// Write records the program's output.
func (p *Proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.Write(b)
}

// String is what the program wrote so far.
func (p *Proc) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// Interrupt sends the program SIGINT.
func (p *Proc) Interrupt() { p.cmd.Process.Signal(os.Interrupt) }

// Signal sends the program sig (SIGHUP: reload).
func (p *Proc) Signal(sig os.Signal) { p.cmd.Process.Signal(sig) }

// Exited is closed once the program has exited; Err then says how.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Err is the program's exit error, once Exited is closed.
func (p *Proc) Err() error { return p.err }

// Wait returns the last submatch of re (the whole match if it has no
// group) in the program's output, once it is there. The bound only
// guards against a hang; it is no performance assertion.
func (p *Proc) Wait(tb testing.TB, re string) string {
	tb.Helper()
	rx := regexp.MustCompile(re)
	for range 3000 {
		if m := rx.FindStringSubmatch(p.String()); m != nil {
			return m[len(m)-1]
		}
		select {
		case <-p.exited:
			if m := rx.FindStringSubmatch(p.String()); m != nil {
				return m[len(m)-1]
			}
			tb.Fatalf("exited (%v) before printing %q:\n%s", p.err, re, lastLines(p.String(), 40))
		case <-time.After(10 * time.Millisecond):
		}
	}
	tb.Fatalf("no line %q within 30s:\n%s", re, lastLines(p.String(), 40))
	return ""
}

func lastLines(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
