package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// outputsCorpus: every output flag of every verb naming a file the same
// run reads, or another of its outputs, is refused (exit 2, one line)
// before anything is read or written (issue 25 item 4).
func outputsCorpus(t *testing.T) []badCase {
	pair := map[string]string{"q.yaml": cq, "s.jsonl": cs, "e.json": "{}\n"}
	x := func(name string, args ...string) badCase {
		return badCase{name: "exec/" + name, files: pair, code: 2,
			args: append([]string{"exec", "--query", "$DIR/q.yaml", "--input", "$DIR/s.jsonl"}, args...)}
	}
	withWant := func(c badCase, want ...string) badCase { c.want = want; return c }
	logs := map[string]string{"p.jsonl": goodProgress + "\n", "q.yaml": cq, "ev/events_1_x": goodProgress + "\n"}
	d := func(name string, want string, args ...string) badCase {
		return badCase{name: "diagnose/" + name, files: logs, code: 2, args: append([]string{"diagnose"}, args...), want: []string{want}}
	}
	return []badCase{
		withWant(x("out is input", "--out", "$DIR/s.jsonl"), "exec: --out $DIR/s.jsonl is the same file as --input $DIR/s.jsonl, which this run reads"),
		withWant(x("out is query", "--out", "$DIR/q.yaml"), "--out $DIR/q.yaml is the same file as --query $DIR/q.yaml"),
		withWant(x("out is query by another path", "--out", "$DIR/./sub/../q.yaml"), "is the same file as --query"),
		withWant(x("record is input", "--record", "$DIR/s.jsonl"), "--record $DIR/s.jsonl is the same file as --input"),
		withWant(x("record is query", "--record", "$DIR/q.yaml"), "--record $DIR/q.yaml is the same file as --query"),
		withWant(x("record is check", "--check", "$DIR/e.json", "--record", "$DIR/e.json"), "--record $DIR/e.json is the same file as --check"),
		withWant(x("out is check", "--check", "$DIR/e.json", "--out", "$DIR/e.json"), "--out $DIR/e.json is the same file as --check"),
		withWant(x("out is record", "--out", "$DIR/new.json", "--record", "$DIR/new.json"), "--record $DIR/new.json is the same file as --out $DIR/new.json: one run cannot write both"),
		withWant(x("out inside checkpoint", "--checkpoint", "$DIR/ck", "--out", "$DIR/ck/offsets-0"), "--out $DIR/ck/offsets-0 is inside --checkpoint $DIR/ck"),
		withWant(x("spark out is input", "--engine", "spark", "--out", "$DIR/s.jsonl"), "--out $DIR/s.jsonl is the same file as --input"),
		{name: "capture/out is tls ca", files: map[string]string{"ca.pem": "x"}, code: 2,
			args: []string{"capture", "--bootstrap", "127.0.0.1:1", "--topic", "t", "--out", "$DIR/ca.pem", "--tls-ca", "$DIR/ca.pem"},
			want: []string{"capture: --out $DIR/ca.pem is the same file as --tls-ca $DIR/ca.pem"}},
		{name: "capture/out is tls key", files: map[string]string{"k.pem": "x", "c.pem": "x"}, code: 2,
			args: []string{"capture", "--bootstrap", "127.0.0.1:1", "--topic", "t", "--out", "$DIR/k.pem", "--tls-cert", "$DIR/c.pem", "--tls-key", "$DIR/k.pem"},
			want: []string{"--out $DIR/k.pem is the same file as --tls-key"}},
		d("emit is the log", "diagnose: --emit-scenario $DIR/p.jsonl is the same file as the log $DIR/p.jsonl", "--emit-scenario", "$DIR/p.jsonl", "$DIR/p.jsonl"),
		d("emit is the query", "--emit-scenario $DIR/q.yaml is the same file as --query $DIR/q.yaml", "--query", "$DIR/q.yaml", "--emit-scenario", "$DIR/q.yaml", "$DIR/p.jsonl"),
		d("emit is the report", "--out (report.json) $DIR/o/report.json is the same file as --emit-scenario $DIR/o/report.json", "--out", "$DIR/o", "--emit-scenario", "$DIR/o/report.json", "$DIR/p.jsonl"),
		d("emit inside a rolling log", "--emit-scenario $DIR/ev/s.yaml is inside the log $DIR/ev", "--emit-scenario", "$DIR/ev/s.yaml", "$DIR/ev"),
		d("out report is the log", "--out (report.json) $DIR/report.json is the same file as the log $DIR/report.json", "--out", "$DIR", "$DIR/report.json"),
		{name: "merge/out inside a shard", files: map[string]string{"s0/shard.json": manifestText(t, nil), "s0/x-1/report.json": "{}", "s0/x-2/report.json": "{}"}, code: 2,
			args: []string{"merge", "--out", "$DIR/s0/merged", "$DIR/s0"},
			want: []string{"merge: --out (index.html) $DIR/s0/merged/index.html is inside the shard folder $DIR/s0"}},
		{name: "replay/export over the scenario", files: map[string]string{"x/query.yaml": "name: x\n"}, code: 2,
			args: []string{"replay", "--seed", "1", "--export", "$DIR/x", "$DIR/x/query.yaml"},
			want: []string{"replay: --export (query.yaml) $DIR/x/query.yaml is the same file as the scenario $DIR/x/query.yaml"}},
		{name: "run/out over the scenario", files: map[string]string{"o/summary.md": "name: x\n"}, code: 2,
			args: []string{"run", "--out", "$DIR/o", "$DIR/o/summary.md"},
			want: []string{"run: --out (summary.md) $DIR/o/summary.md is the same file as the scenario"}},
		{name: "sweep/out over the scenario", files: map[string]string{"o/junit.xml": "name: x\n"}, code: 2,
			args: []string{"sweep", "--seeds", "2", "--out", "$DIR/o", "$DIR/o/junit.xml"},
			want: []string{"sweep: --out (junit.xml) $DIR/o/junit.xml is the same file as the scenario"}},
		{name: "run/scenario inside its own report folder", files: map[string]string{"o/x-1/x.yaml": "name: x\n"}, code: 2,
			args: []string{"run", "--seed", "1", "--out", "$DIR/o", "$DIR/o/x-1/x.yaml"},
			want: []string{"run: the scenario $DIR/o/x-1/x.yaml lies inside $DIR/o/x-1, the report folder of x seed 1 that this run writes"}},
		{name: "run/folder of scenarios inside a report folder", files: map[string]string{"o/x-7/x.yaml": "name: x\n"}, code: 2,
			args: []string{"run", "--seed", "7", "--out", "$DIR/o", "$DIR/o/x-7"},
			want: []string{"the report folder of x seed 7"}},
		{name: "sweep/scenario inside a later seed's report folder", files: map[string]string{"o/x-3/x.yaml": "name: x\n"}, code: 2,
			args: []string{"sweep", "--seeds", "4", "--shard", "0/2", "--out", "$DIR/o", "$DIR/o/x-3/x.yaml"},
			want: []string{"sweep: the scenario $DIR/o/x-3/x.yaml lies inside $DIR/o/x-3, the report folder of x seed 3"}},
		{name: "replay/scenario inside its report folder", files: map[string]string{"o/x-2/x.yaml": "name: x\n"}, code: 2,
			args: []string{"replay", "--seed", "2", "--out", "$DIR/o", "$DIR/o/x-2/x.yaml"},
			want: []string{"replay: the scenario $DIR/o/x-2/x.yaml lies inside $DIR/o/x-2"}},
		{name: "replay/out over the scenario", files: map[string]string{"o/index.html": "name: x\n"}, code: 2,
			args: []string{"replay", "--seed", "1", "--out", "$DIR/o", "$DIR/o/index.html"},
			want: []string{"replay: --out (index.html) $DIR/o/index.html is the same file as the scenario"}},
		{name: "replay/scenario inside an export checkpoint folder", files: map[string]string{"e/checkpoint-2/x.yaml": "name: x\n"}, code: 2,
			args: []string{"replay", "--seed", "1", "--export", "$DIR/e", "$DIR/e/checkpoint-2/x.yaml"},
			want: []string{"replay: the scenario $DIR/e/checkpoint-2/x.yaml lies inside $DIR/e/checkpoint-2, which --export writes or removes"}},
		{name: "replay/report folder inside an export checkpoint folder", files: map[string]string{"x.yaml": "name: x\n"}, code: 2,
			args: []string{"replay", "--seed", "1", "--out", "$DIR/e/checkpoint-1", "--export", "$DIR/e", "$DIR/x.yaml"},
			want: []string{"replay: the report folder $DIR/e/checkpoint-1/x-1 lies inside $DIR/e/checkpoint-1"}},
		{name: "conform/out inside golden", files: map[string]string{"g/a.txt": goldenCase}, code: 2,
			args: []string{"conform", "--golden", "$DIR/g", "--out", "$DIR/g/out"},
			want: []string{"conform: --out $DIR/g/out is inside --golden $DIR/g"}},
		{name: "conform/golden inside out", files: map[string]string{"o/g/a.txt": goldenCase}, code: 2,
			args: []string{"conform", "--golden", "$DIR/o/g", "--out", "$DIR/o"},
			want: []string{"--golden $DIR/o/g is inside --out $DIR/o"}},
	}
}

// goldenCase is one engine golden file with one exec (engine/testdata
// format).
const goldenCase = "exec\n" + cq + "===\n" + cs + "----\n"

// TestRedteamOutputs runs the outputs corpus, then the overlaps a corpus
// file cannot plant: a hard link (the same inode under another name) and
// a folder reached through a symbolic link.
func TestRedteamOutputs(t *testing.T) {
	n := badInputCorpus(t, outputsCorpus(t))
	t.Logf("%d output-overlap cases", n)
	bin := binary(t)
	for _, tc := range []struct {
		name, want string
		args       func(dir string) []string
	}{
		{"out is a hard link of input", "--out", func(dir string) []string {
			os.Link(filepath.Join(dir, "s.jsonl"), filepath.Join(dir, "hard.jsonl"))
			return []string{"exec", "--query", dir + "/q.yaml", "--input", dir + "/s.jsonl", "--out", dir + "/hard.jsonl"}
		}},
		{"record through a linked folder", "--record", func(dir string) []string {
			os.Symlink(dir, filepath.Join(dir, "via"))
			return []string{"exec", "--query", dir + "/q.yaml", "--input", dir + "/s.jsonl", "--record", dir + "/via/q.yaml"}
		}},
		{"emit is a hard link of the log", "--emit-scenario", func(dir string) []string {
			os.WriteFile(filepath.Join(dir, "p.jsonl"), []byte(goodProgress+"\n"), 0o644)
			os.Link(filepath.Join(dir, "p.jsonl"), filepath.Join(dir, "p2.jsonl"))
			return []string{"diagnose", "--emit-scenario", dir + "/p2.jsonl", dir + "/p.jsonl"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "q.yaml"), []byte(cq), 0o644)
			os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(cs), 0o644)
			before := map[string]string{}
			for _, f := range []string{"q.yaml", "s.jsonl"} {
				b, _ := os.ReadFile(filepath.Join(dir, f))
				before[f] = string(b)
			}
			_, errOut, code := run(bin, tc.args(dir)...)
			if code != 2 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "which this run reads") {
				t.Fatalf("exit %d, stderr %q: want 2 and %q refused", code, errOut, tc.want)
			}
			for f, b := range before {
				if got, _ := os.ReadFile(filepath.Join(dir, f)); string(got) != b {
					t.Errorf("%s changed", f)
				}
			}
		})
	}
}
