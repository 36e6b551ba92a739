package tsclient

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestScriptWithoutNode runs TestScriptChild, which asks for a script, in
// a process of its own whose PATH holds no node: without CI it skips and
// says how to enable the test; under CI=true it fails, with the same
// instructions.
func TestScriptWithoutNode(t *testing.T) {
	for _, tc := range []struct {
		ci       string
		wantFail bool
		want     string
	}{
		{"", false, "--- SKIP: TestScriptChild"},
		{"true", true, "--- FAIL: TestScriptChild"},
	} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestScriptChild$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), "TSCLIENT_CHILD=1", "PATH="+t.TempDir(), "CI="+tc.ci)
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tc.wantFail {
				t.Errorf("the child failed: %v, want failed = %v\n%s", err, tc.wantFail, out)
			}
			for _, w := range []string{tc.want, "needs node on PATH", "(cd test/tsclient && npm ci)", "CI=true"} {
				if !strings.Contains(string(out), w) {
					t.Errorf("the child's output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestScriptChild is TestScriptWithoutNode's child; it does nothing
// unless run by it.
func TestScriptChild(t *testing.T) {
	if os.Getenv("TSCLIENT_CHILD") != "1" {
		t.Skip("run by TestScriptWithoutNode")
	}
	Script(t, "cancel.mjs")
	t.Fatal("Script returned without node on PATH")
}
