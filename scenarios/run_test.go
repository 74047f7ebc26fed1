package scenarios

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/dedupsim/dedupsim/internal/yamlstrict"
	"github.com/dedupsim/dedupsim/reports"
)

// TestReplayCommandIsShellQuoted: pasting the printed replay command into
// a shell runs dedupsim with exactly the scenario's file name as its
// argument, whatever characters the name holds, and nothing else
// (issue 10.13: `$(touch PWNED)` in a file name used to run).
func TestReplayCommandIsShellQuoted(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	for _, file := range []string{
		"plain/scenario.yaml",
		"with space.yaml",
		"$(touch PWNED).yaml",
		"`touch PWNED`.yaml",
		"it's.yaml",
		`"quoted" \back\slash.yaml`,
		"semi;touch PWNED.yaml",
		"new\nline.yaml",
		"-starts-with-dash.yaml",
		"=zsh-equals.yaml",
		"~tilde.yaml",
		"*.yaml",
		"ünïcödé.yaml",
		"a|b&c>d<e.yaml",
	} {
		s := &Scenario{Name: "x", File: file}
		for _, swarm := range []bool{false, true} {
			cmd := ReplayCommand(s, 42, Options{Swarm: swarm})
			if !strings.HasPrefix(cmd, "dedupsim replay --seed 42 ") {
				t.Fatalf("%q: command %q", file, cmd)
			}
			// A shell function stands in for dedupsim and prints its arguments.
			script := `dedupsim() { for a in "$@"; do printf '[%s]' "$a"; done; }; ` + cmd
			c := exec.Command("sh", "-c", script)
			c.Dir = dir
			out, err := c.CombinedOutput()
			if err != nil {
				t.Fatalf("%q: %v: %s", cmd, err, out)
			}
			want := "[replay][--seed][42]"
			if swarm {
				want += "[--swarm]"
			}
			if strings.HasPrefix(file, "-") {
				want += "[--]"
			}
			want += "[" + file + "]"
			if string(out) != want {
				t.Errorf("%q gave the arguments %s, want %s", cmd, out, want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
		t.Fatal("pasting a replay command ran a command from the file name")
	}
	// A catalogue scenario is named by its name, a plain word.
	if got := ReplayCommand(&Scenario{Name: "replay-append-sink", File: "catalogue:replay-append-sink.yaml"}, 3, Options{}); got != "dedupsim replay --seed 3 replay-append-sink" {
		t.Fatalf("catalogue replay %q", got)
	}
}

// TestRunIsSafeConcurrently: Run called from several goroutines at once
// gives the same histories and reports, byte for byte, as one call after
// another: the simulator and the checker share no mutable state between
// runs (sweep -j relies on it). Run under -race to see a data race.
func TestRunIsSafeConcurrently(t *testing.T) {
	type job struct {
		s   *Scenario
		opt Options
	}
	var list []job
	for _, name := range []string{"replay-append-sink", "restamped-retries-within-watermark", "bounded-keys-no-watermark"} {
		s, err := Find(name)
		if err != nil {
			t.Fatal(err)
		}
		// The same scenario twice (shared Config slices and maps); the last
		// in swarm mode over the whole fault catalogue (disk faults too).
		opt := Options{Swarm: name == "bounded-keys-no-watermark"}
		list = append(list, job{s, opt}, job{s, opt})
	}
	// Swarm over the whole fault catalogue (crashes, torn and lost disk
	// writes, clock faults...): a scenario that names no fault.
	raw, err := os.ReadFile("catalogue/replay-append-sink.yaml")
	if err != nil {
		t.Fatal(err)
	}
	all, err := Parse("all-faults.yaml", bytes.Replace(raw, []byte("faults:\n  crash-after-sink-write: {rate: 0.1}\n"), nil, 1))
	if err != nil || len(all.Config.Plan.Faults) != 0 {
		t.Fatalf("%v %v", err, all.Config.Plan.Faults)
	}
	list = append(list, job{all, Options{Swarm: true}}, job{all, Options{Swarm: true}})
	render := func(j job, seed uint64) []byte {
		r, err := Run(j.s, seed, j.opt)
		if err != nil {
			t.Error(err)
			return nil
		}
		var b bytes.Buffer
		if err := r.History.Write(&b); err != nil {
			t.Error(err)
		}
		rep, err := reports.JSON(r)
		if err != nil {
			t.Error(err)
		}
		return append(b.Bytes(), rep...)
	}
	want := make([][]byte, len(list))
	for i, j := range list {
		want[i] = render(j, uint64(i%2+1))
	}
	got := make([][]byte, len(list))
	var wg sync.WaitGroup
	for i, j := range list {
		wg.Go(func() { got[i] = render(j, uint64(i%2+1)) })
	}
	wg.Wait()
	for i := range list {
		if len(want[i]) == 0 || !bytes.Equal(want[i], got[i]) {
			t.Errorf("%s seed %d: concurrent run differs from a sequential one", list[i].s.Name, i%2+1)
		}
	}
}

// TestDiscover: files, folders (recursive, sorted, .yaml and .yml, dot
// folders skipped) and catalogue names; a folder without a scenario, a
// misspelt name and two scenarios of one name are refused.
func TestDiscover(t *testing.T) {
	raw, err := os.ReadFile("catalogue/replay-append-sink.yaml")
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(string(raw), "name: replay-append-sink\n", "", 1)
	dir := t.TempDir()
	put := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("suite/b.yaml", body)
	put("suite/a.yml", body)
	put("suite/deeper/c.yaml", body)
	put("suite/README.md", "not a scenario")
	put("suite/.github/workflows/ci.yml", "on: push\n")
	put("empty/README.md", "no scenario here")
	put("dup/x.yaml", body)
	put("dup/sub/x.yaml", body)

	names := func(list []*Scenario) string {
		var out []string
		for _, s := range list {
			out = append(out, s.Name)
		}
		return strings.Join(out, " ")
	}
	list, err := Discover([]string{filepath.Join(dir, "suite"), "replay-append-sink"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(list); got != "a b c replay-append-sink" {
		t.Fatalf("discovered %q", got)
	}
	if !strings.HasSuffix(list[2].File, filepath.Join("suite", "deeper", "c.yaml")) {
		t.Fatalf("file %q", list[2].File)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{filepath.Join(dir, "empty")}, "no scenario files (*.yaml, *.yml) in this folder or below it"},
		{[]string{filepath.Join(dir, "dup")}, `scenario name "x" is also the name of`},
		{[]string{"replay-append-sink", "replay-append-sink"}, "replay-append-sink: given twice"},
		{[]string{"replay-apend-sink"}, `did you mean "replay-append-sink"?`},
		{[]string{filepath.Join(dir, "suit")}, `did you mean "` + filepath.Join(dir, "suite") + `"?`},
		{[]string{"no-such-scenario"}, "no such file or folder, and no catalogue scenario of that name; `dedupsim list`"},
		{[]string{""}, "an empty scenario argument"},
	} {
		_, err := Discover(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Discover(%q): %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestRedteamDiscover: a named pipe named *.yaml in a folder is refused
// with the file named, never opened (it would block the run for ever); a
// link that leads nowhere is refused, not skipped.
func TestRedteamDiscover(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		plant      func(t *testing.T, p string)
	}{
		{"fifo", "not a regular file (a named pipe)", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}},
		{"link to a fifo", "not a regular file (a named pipe)", func(t *testing.T, p string) {
			f := filepath.Join(t.TempDir(), "pipe")
			if err := syscall.Mkfifo(f, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			os.Symlink(f, p)
		}},
		{"dangling link", "a symbolic link that cannot be followed", func(t *testing.T, p string) {
			os.Symlink(filepath.Join(t.TempDir(), "gone.yaml"), p)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "planted.yaml")
			tc.plant(t, p)
			_, err := Discover([]string{dir})
			var se *yamlstrict.Error
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("got %v, want a *yamlstrict.Error naming %s with %q", err, p, tc.want)
			}
		})
	}
}
