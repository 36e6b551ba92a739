package readme

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// citedPath is a relative path with a folder and a file extension
	// ("example-service/tools/get_item.go", "./haproxy.cfg"), not part
	// of a URL or of an absolute path.
	citedPath = regexp.MustCompile(`(?:^|[^\w./-])((?:\.\.?/)?[\w.-]+(?:/[\w.-]+)+\.(?:go|ya?ml|json|txt|mjs|cfg|md|sh|txtar))\b`)
	// citedTest is the name of a test, benchmark, fuzz test or example.
	citedTest = regexp.MustCompile(`\b((?:Test|Benchmark|Fuzz|Example)[A-Z]\w*)`)
	// testFunc is its declaration in a _test.go file.
	testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`)
)

// TestCitationsExist: every repository file and every test function that
// README.md or a file of the deployment kit (deploy/, whose comments
// point readers at the tests that check them) cites exists. A path
// resolves from the repository's root, or from the citing file's folder
// ("./haproxy.cfg" in deploy/compose.yaml); a test function may be in any
// _test.go file of the repository, nested modules included.
func TestCitationsExist(t *testing.T) {
	root := repoRoot(t)
	tests := map[string]bool{}
	citing := []string{"README.md"}
	walk(t, root, func(rel string, e fs.DirEntry) {
		if e.IsDir() {
			return
		}
		if strings.HasSuffix(rel, "_test.go") {
			data, err := os.ReadFile(filepath.Join(root, rel))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range testFunc.FindAllStringSubmatch(string(data), -1) {
				tests[m[1]] = true
			}
		}
		if strings.HasPrefix(rel, "deploy/") && e.Name() != "go.sum" {
			citing = append(citing, rel)
		}
	})
	if len(citing) < 5 || len(tests) < 50 {
		t.Fatalf("found %d files citing and %d test functions: is the walk broken?", len(citing), len(tests))
	}
	for _, rel := range citing {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range citedPath.FindAllStringSubmatch(line, -1) {
				p := m[1]
				_, errRoot := os.Stat(filepath.Join(root, filepath.FromSlash(p)))
				_, errHere := os.Stat(filepath.Join(root, filepath.Dir(rel), filepath.FromSlash(p)))
				if errRoot != nil && errHere != nil {
					t.Errorf("%s:%d: cites %s, which does not exist (from the repository's root or from %s)", rel, i+1, p, filepath.Dir(rel))
				}
			}
			for _, m := range citedTest.FindAllStringSubmatch(line, -1) {
				if !tests[m[1]] {
					t.Errorf("%s:%d: cites %s, which no _test.go file of the repository declares", rel, i+1, m[1])
				}
			}
		}
	}
}
