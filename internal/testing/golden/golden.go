// Package golden compares what a test produced with a file under its
// package's testdata, and rewrites the file instead when the test runs
// with -update (go test ./pkg -update).
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Updating reports whether the test runs with -update.
func Updating() bool { return *update }

// Check compares got with the file at path, or, with -update, writes got
// there (creating its directory).
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got; go test -update rewrites it if the change is intended):\n%s", path, diff)
	}
}
