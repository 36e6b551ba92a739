// Package tsclient finds the official TypeScript MCP SDK client that the
// Go tests run: the scripts of test/tsclient, with the SDK pinned by its
// package.json and lock file (`npm ci` there; .ci/run does). Nothing here
// is API.
package tsclient

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Script returns the node binary and the path of test/tsclient/name. A
// test that needs them skips when node or the npm modules are absent,
// with a message naming what is missing and the commands that install it
// (go test -v shows it); under CI=true it fails instead, so that CI
// never passes without running the real client.
func Script(t testing.TB, name string) (node, script string) {
	t.Helper()
	dir, err := dir()
	if err != nil {
		t.Fatal(err)
	}
	missing := func(what, fix string) {
		msg := t.Name() + " runs the official TypeScript SDK client and needs " + what + ": " + fix
		if os.Getenv("CI") == "true" {
			t.Fatal("tsclient: " + msg + "; CI=true, so this fails instead of skipping (.ci/run runs npm ci)")
		}
		t.Skip("tsclient: SKIPPING: " + msg + "; under CI=true this fails")
	}
	node, err = exec.LookPath("node")
	if err != nil {
		missing("node on PATH", "install Node.js, then (cd test/tsclient && npm ci)")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		missing("its npm modules", "(cd test/tsclient && npm ci)")
	}
	return node, filepath.Join(dir, name)
}

// dir returns test/tsclient of the module the test runs in: the folder
// of the first go.mod above the working directory (a package's own).
func dir() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "test", "tsclient"), nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", os.ErrNotExist
		}
		d = parent
	}
}
