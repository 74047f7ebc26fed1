package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/capture/capturetest"
	"github.com/dedupsim/dedupsim/live"
)

// TestDeprecatedSpellings (issue 31, item 8): each old spelling of a flag
// renamed so that one name means one thing across verbs still works like
// the new one, with the same exit status and output, and prints one notice
// on standard error naming the new spelling; the new spelling prints none.
func TestDeprecatedSpellings(t *testing.T) {
	bin := binary(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	k, err := live.StartKfake(ctx, map[string]int32{capturetest.Topic: capturetest.Partitions})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if _, err := capturetest.Produce(ctx, k.Addrs()); err != nil {
		t.Fatal(err)
	}
	topic := []string{"--bootstrap", strings.Join(k.Addrs(), ","), "--topic", capturetest.Topic, "--key", "id", "--time", "ts", "--json", "--quiet"}
	dir := t.TempDir()
	liveRun := func(flag, out string) []string {
		return []string{"run", "--kafka", "kfake", flag, "inproc", "--live-trigger", "100ms", "-q", "--out", dir + "/" + out, "replay-append-sink"}
	}
	for _, tc := range []struct {
		name     string
		old, new []string
		code     int
		notice   string
		stdout   string // a fragment both print ("": the same stdout)
	}{
		{name: "root -v is --version", old: []string{"-v"}, new: []string{"--version"},
			notice: "Flag shorthand -v has been deprecated, use --version instead; from the next release -v means --verbose only (run -v)\n"},
		{name: "run --engine is --engine-mode", old: liveRun("--engine", "old"), new: liveRun("--engine-mode", "new"),
			notice: "Flag --engine has been deprecated, use --engine-mode instead; the old spelling goes in the next release\n",
			stdout: "Against Kafka (kfake), the engine in process"},
		{name: "analyze --kafka is --from-kafka", old: append([]string{"analyze", "--kafka"}, topic...), new: append([]string{"analyze", "--from-kafka"}, topic...),
			notice: "Flag --kafka has been deprecated, use --from-kafka instead; the old spelling goes in the next release\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oldOut, oldErr, oldCode := run(bin, tc.old...)
			newOut, newErr, newCode := run(bin, tc.new...)
			if oldCode != tc.code || newCode != tc.code {
				t.Fatalf("exit %d (old), %d (new), want %d\nold: %s%s\nnew: %s%s", oldCode, newCode, tc.code, oldOut, oldErr, newOut, newErr)
			}
			if tc.stdout == "" && oldOut != newOut {
				t.Errorf("stdout differs:\nold: %s\nnew: %s", oldOut, newOut)
			}
			if !strings.Contains(oldOut, tc.stdout) || !strings.Contains(newOut, tc.stdout) {
				t.Errorf("stdout lacks %q:\nold: %s\nnew: %s", tc.stdout, oldOut, newOut)
			}
			if oldErr != tc.notice+newErr {
				t.Errorf("old spelling's stderr %q, want the notice %q then the new spelling's %q", oldErr, tc.notice, newErr)
			}
			if strings.Contains(newErr, "deprecated") {
				t.Errorf("new spelling prints a notice: %q", newErr)
			}
		})
	}
}

// TestDeprecatedSpellingMessages: an error quotes the spelling the user
// typed, and both spellings at once are refused (the later would win).
func TestDeprecatedSpellingMessages(t *testing.T) {
	bin := binary(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--kafka", "kfake", "--engine", "thread", "replay-append-sink"}, `dedupsim: run: --engine "thread": want process or inproc`},
		{[]string{"run", "--kafka", "kfake", "--engine-mode", "thread", "replay-append-sink"}, `dedupsim: run: --engine-mode "thread": want process or inproc`},
		{[]string{"run", "--engine", "inproc", "replay-append-sink"}, "dedupsim: run: --engine is a setting of runs against Kafka: it needs --kafka"},
		{[]string{"run", "--kafka", "kfake", "--engine", "inproc", "--engine-mode", "inproc", "replay-append-sink"}, "dedupsim: run: --engine is the old spelling of --engine-mode: give --engine-mode only"},
		{[]string{"analyze", "--kafka", "e.jsonl"}, `dedupsim: analyze: --kafka reads a topic: give no EVENTS file (got "e.jsonl")`},
		{[]string{"analyze", "--kafka", "--from-kafka", "--bootstrap", "h:1", "--topic", "t"}, "dedupsim: analyze: --kafka is the old spelling of --from-kafka: give --from-kafka only"},
	} {
		_, errOut, code := run(bin, tc.args...)
		if code != 2 || !strings.HasSuffix(errOut, tc.want+"\n") {
			t.Errorf("%v: exit %d, want 2 ending in %q:\n%s", tc.args, code, tc.want, errOut)
		}
	}
}

// TestCLIHelpOneLanguage: the engine verb, the live harness's child
// process, is not among dedupsim --help's verbs but still runs and has its
// help; --version has no short form; run's -v is --verbose.
func TestCLIHelpOneLanguage(t *testing.T) {
	bin := binary(t)
	out, _, code := run(bin, "--help")
	if code != 0 || strings.Contains(out, "\n  engine ") || !strings.Contains(out, "\n  exec ") {
		t.Errorf("dedupsim --help (exit %d) lists engine, or lacks exec:\n%s", code, out)
	}
	if !strings.Contains(out, "\n      --version   version for dedupsim\n") || strings.Contains(out, "-v,") {
		t.Errorf("dedupsim --help: want --version without -v:\n%s", out)
	}
	if out, _, code := run(bin, "engine", "--help"); code != 0 || !strings.Contains(out, "--input-topic") {
		t.Errorf("engine --help: exit %d:\n%s", code, out)
	}
	if _, errOut, code := run(bin, "engine", "--query", "none.yaml"); code != 2 || strings.Contains(errOut, "unknown command") {
		t.Errorf("engine with bad flags: exit %d, want 2 from the engine itself:\n%s", code, errOut)
	}
	if out, _, _ := run(bin, "run", "--help"); !strings.Contains(out, "-v, --verbose") || !strings.Contains(out, "--engine-mode string") ||
		strings.Contains(out, "--engine string") {
		t.Errorf("run --help: want -v, --verbose and --engine-mode only:\n%s", out)
	}
	if out, _, _ := run(bin, "analyze", "--help"); !strings.Contains(out, "--from-kafka ") || strings.Contains(out, "  --kafka ") {
		t.Errorf("analyze --help: want --from-kafka only:\n%s", out)
	}
}
