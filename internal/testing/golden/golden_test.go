package golden_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolroute/toolroute/internal/testing/golden"
)

// TestCheck: an equal file passes; a different or missing one fails the
// test (seen through a recorder standing in for it).
func TestCheck(t *testing.T) {
	if golden.Updating() {
		t.Skip("-update rewrites instead of comparing")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.golden")
	if err := os.WriteFile(path, []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, path, []byte("same\n"))
	for name, p := range map[string]string{"different": path, "missing": filepath.Join(dir, "none.golden")} {
		r := &recorder{TB: t}
		golden.Check(r, p, []byte("other\n"))
		if !r.failed {
			t.Errorf("Check of a %s file passed", name)
		}
	}
}

// recorder notes a failure instead of failing the test.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Helper()               {}
