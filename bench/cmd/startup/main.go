// Command startup measures how long a server process takes from exec to
// its first 200 on /readyz: example-service (its embedded catalog
// upstream and policy, every tool registered and its services warmed)
// against a raw go-sdk server of as many tools (cmd/rawserve), started
// alternately on loopback, and the part of it each spends initializing
// packages (GODEBUG=inittrace=1, the median of 9 starts). Both are built
// first, with the same toolchain.
//
//	go run ./cmd/startup [-runs 30]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	runs := flag.Int("runs", 30, "starts of each server (at most 200)")
	flag.Parse()
	if *runs < 1 || *runs > 200 {
		fmt.Fprintln(os.Stderr, "startup: -runs is 1 to 200")
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "startup")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	// example-service is built in the main module (whose dependencies
	// this module does not list), found through this module's replace.
	main, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/toolroute/toolroute").Output()
	if err != nil {
		fail(fmt.Errorf("go list: %v", err))
	}
	servers := []struct{ name, dir, pkg, bin string }{
		{"raw", ".", "./cmd/rawserve", filepath.Join(dir, "rawserve")},
		{"example-service", strings.TrimSpace(string(main)), "./example-service", filepath.Join(dir, "example-service")},
	}
	for _, s := range servers {
		build := exec.Command("go", "build", "-o", s.bin, s.pkg)
		build.Dir = s.dir
		if out, err := build.CombinedOutput(); err != nil {
			fail(fmt.Errorf("go build %s: %v\n%s", s.pkg, err, out))
		}
	}
	times := make([][]time.Duration, len(servers))
	for r := range *runs {
		for k := range servers {
			i := (k + r) % len(servers) // rotate who goes first
			d, err := startOnce(servers[i].bin)
			if err != nil {
				fail(fmt.Errorf("%s: %v", servers[i].name, err))
			}
			times[i] = append(times[i], d)
		}
	}
	fmt.Printf("%-16s %10s %10s %10s %8s\n", "server", "median", "min", "init", "vs raw")
	rawMedian := median(times[0])
	for i, s := range servers {
		var inits []time.Duration
		for range 9 {
			d, err := initTime(s.bin)
			if err != nil {
				fail(fmt.Errorf("%s: %v", s.name, err))
			}
			inits = append(inits, d)
		}
		init := median(inits)
		m := median(times[i])
		fmt.Printf("%-16s %10s %10s %10s %8.2f\n", s.name, m.Round(10*time.Microsecond), slices.Min(times[i]).Round(10*time.Microsecond),
			init.Round(10*time.Microsecond), float64(m)/float64(rawMedian))
	}
}

var servingURL = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+`)

// startOnce starts bin on a free loopback port and returns the time from
// exec to the first 200 of its /readyz. The process is killed after.
func startOnce(bin string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	stderr, stop, err := launch(ctx, bin)
	if err != nil {
		return 0, err
	}
	defer stop()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u := servingURL.FindString(sc.Text()); u != "" {
				select {
				case found <- u:
				default:
				}
			}
		}
	}()
	var base string
	select {
	case base = <-found:
	case <-ctx.Done():
		return 0, fmt.Errorf("no address printed within 30 s")
	}
	client := &http.Client{Timeout: time.Second}
	for ctx.Err() == nil {
		resp, err := client.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start), nil
			}
		}
		time.Sleep(100 * time.Microsecond)
	}
	return 0, fmt.Errorf("/readyz not 200 within 30 s")
}

// launch starts bin on a free loopback port with env added to its
// environment, and returns its standard error and a function that kills
// it and waits for it.
func launch(ctx context.Context, bin string, env ...string) (io.Reader, func(), error) {
	cmd := exec.CommandContext(ctx, bin, "-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	return stderr, func() {
		cmd.Process.Kill()
		cmd.Wait()
	}, nil
}

// initTime runs bin once with GODEBUG=inittrace=1 and returns the sum of
// its packages' init times.
func initTime(bin string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	stderr, stop, err := launch(ctx, bin, "GODEBUG=inittrace=1")
	if err != nil {
		return 0, err
	}
	defer stop()
	var total time.Duration
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		// init PKG @T ms, D ms clock, B bytes, A allocs
		f := strings.Fields(sc.Text())
		if len(f) >= 7 && f[0] == "init" && f[6] == "clock," {
			ms, err := strconv.ParseFloat(f[4], 64)
			if err == nil {
				total += time.Duration(ms * float64(time.Millisecond))
			}
			continue
		}
		if servingURL.MatchString(sc.Text()) {
			break
		}
	}
	return total, nil
}

func median(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "startup:", err)
	os.Exit(1)
}
