// Package docs holds the user documentation; its test keeps the rules the
// code cites in step with the documents that state them.
package docs

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// rulePattern finds a citation such as §6.8 or §9; citations of other
// documents (RFC 3339 §5.6) name their document just before the sign.
var rulePattern = regexp.MustCompile(`(RFC ?\d+ )?§(\d+(?:\.\d+)?)`)

// TestCitedRulesExist: every §N.M the code or the READMEs cite is a rule of
// docs/spark-semantics.md, so a user who clones the repository finds it.
func TestCitedRulesExist(t *testing.T) {
	rules := definedRules(t)
	files, err := exec.Command("git", "-C", "..", "ls-files", "*.go", "*.md").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	cited := 0
	for _, f := range strings.Fields(string(files)) {
		if f == "docs/spark-semantics.md" {
			continue
		}
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range rulePattern.FindAllStringSubmatch(line, -1) {
				if m[1] != "" {
					continue
				}
				cited++
				if !rules[m[2]] {
					t.Errorf("%s:%d cites §%s, which docs/spark-semantics.md does not define", f, i+1, m[2])
				}
			}
		}
	}
	t.Logf("%d citations checked against %d rules", cited, len(rules))
	if cited < 50 {
		t.Fatalf("found only %d citations: is the pattern still right?", cited)
	}
}

// definedRules lists the section numbers (## N.) and rule numbers (a line
// starting N.M) of spark-semantics.md.
func definedRules(t *testing.T) map[string]bool {
	f, err := os.Open("spark-semantics.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	section := regexp.MustCompile(`^## (\d+)\.`)
	rule := regexp.MustCompile(`^(\d+\.\d+) `)
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := section.FindStringSubmatch(sc.Text()); m != nil {
			out[m[1]] = true
		}
		if m := rule.FindStringSubmatch(sc.Text()); m != nil {
			out[m[1]] = true
		}
	}
	if len(out) < 60 {
		t.Fatalf("spark-semantics.md defines only %d rules", len(out))
	}
	return out
}
