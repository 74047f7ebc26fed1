package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine/checkpoint"
	"github.com/dedupsim/dedupsim/engine/fsys"
)

// TestTwoWritersOneCheckpoint (issue 10 item 1): two exec processes on
// one checkpoint, many times. Never a silent loss: one run writes the
// whole output (the bytes of a run alone), the other exits 2 naming the
// checkpoint. Before the lock, the survivor exited 0 with batches missing.
func TestTwoWritersOneCheckpoint(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	q := write(t, dir, "q.yaml", "dedup: {api: dropDuplicates, keys: [id]}\nwatermark: {column: ts, delay: 2 seconds}\nshuffle_partitions: 2\n")
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, `{"rows": [{"id":"k%d","ts":%d},{"id":"k%d","ts":%d}]}`+"\n", i, i, i%7, i)
	}
	s := write(t, dir, "s.jsonl", b.String())
	alone, errOut, code := run(bin, "exec", "--query", q, "--input", s, "--checkpoint", filepath.Join(dir, "alone"))
	if code != 0 {
		t.Fatalf("run alone: exit %d: %s", code, errOut)
	}
	start := func(ck, out string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(bin, "exec", "--query", q, "--input", s, "--checkpoint", ck, "--out", out)
		var e bytes.Buffer
		cmd.Stderr = &e
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &e
	}
	exitOf := func(err error) int {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			return -1
		}
		return 0
	}
	const iterations = 10
	refused, sequential := 0, 0
	for i := range iterations {
		ck := filepath.Join(dir, fmt.Sprintf("ck%d", i))
		outs := [2]string{filepath.Join(dir, fmt.Sprintf("a%d.jsonl", i)), filepath.Join(dir, fmt.Sprintf("b%d.jsonl", i))}
		a, ea := start(ck, outs[0])
		if i%2 == 1 {
			// Let the first one take the lock before the second starts.
			for j := 0; j < 500; j++ {
				if _, err := os.Stat(filepath.Join(ck, checkpoint.LockFile)); err == nil {
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
		}
		bcmd, eb := start(ck, outs[1])
		codes := [2]int{exitOf(a.Wait()), exitOf(bcmd.Wait())}
		errs := [2]string{ea.String(), eb.String()}
		got := [2]string{}
		for k := range 2 {
			data, _ := os.ReadFile(outs[k])
			got[k] = string(data)
		}
		switch {
		case codes == [2]int{0, 2} || codes == [2]int{2, 0}:
			w, l := 0, 1
			if codes[0] == 2 {
				w, l = 1, 0
			}
			if got[w] != alone {
				t.Errorf("iteration %d: the run that kept the checkpoint wrote other bytes than a run alone (%d vs %d bytes)", i, len(got[w]), len(alone))
			}
			if !strings.Contains(errs[l], "checkpoint "+ck+" is in use by another process (pid ") || strings.Count(strings.TrimRight(errs[l], "\n"), "\n") != 0 {
				t.Errorf("iteration %d: the refused run's error does not name the checkpoint in one line: %q", i, errs[l])
			}
			if got[l] != "" {
				t.Errorf("iteration %d: the refused run wrote --out", i)
			}
			refused++
		case codes == [2]int{0, 0}:
			// The second started after the first had finished: it resumed
			// a complete checkpoint and had nothing left to run.
			if !(got[0] == alone && !strings.Contains(got[1], "batchId")) && !(got[1] == alone && !strings.Contains(got[0], "batchId")) {
				t.Errorf("iteration %d: both exited 0 and neither wrote the whole output alone:\n%s\n---\n%s", i, got[0], got[1])
			}
			sequential++
		default:
			t.Errorf("iteration %d: exits %v: %s | %s", i, codes, errs[0], errs[1])
		}
	}
	t.Logf("%d iterations: %d refused a second writer, %d ran one after the other", iterations, refused, sequential)
	if refused == 0 {
		t.Fatal("no iteration overlapped: the lock was never tested")
	}
}

// TestCheckpointLockRefusesBothVerbs: a checkpoint locked by a live
// process (here the test itself) is refused by exec and by engine with
// exit 2 and the holder's pid, before anything is written; the lock of a
// process that is gone is no obstacle.
func TestCheckpointLockRefusesBothVerbs(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	os.MkdirAll(ck, 0o755)
	release, err := checkpoint.Lock(fsys.NewOS(ck), ck)
	if err != nil {
		t.Fatal(err)
	}
	q := write(t, dir, "q.yaml", cq)
	s := write(t, dir, "s.jsonl", cs)
	want := fmt.Sprintf("checkpoint %s is in use by another process (pid %d)", ck, os.Getpid())
	for _, args := range [][]string{
		{"exec", "--query", q, "--input", s, "--checkpoint", ck},
		{"engine", "--query", q, "--checkpoint", ck, "--bootstrap", "127.0.0.1:1", "--input-topic", "in", "--sink", "table", "--table", filepath.Join(dir, "t")},
	} {
		_, errOut, code := run(bin, args...)
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("%s on a locked checkpoint: exit %d: %s", args[0], code, errOut)
		}
	}
	if ents, _ := os.ReadDir(ck); len(ents) != 1 {
		t.Errorf("a refused run wrote into the checkpoint: %d entries", len(ents))
	}
	release()
	if _, errOut, code := run(bin, "exec", "--query", q, "--input", s, "--checkpoint", ck); code != 0 {
		t.Fatalf("after release: exit %d: %s", code, errOut)
	}
	// A killed holder: the kernel dropped its lock.
	holder := exec.Command(bin, "exec", "--query", q, "--input", "/dev/stdin", "--checkpoint", ck)
	pr, pw, _ := os.Pipe()
	holder.Stdin = pr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Write([]byte(cs))
	for j := 0; j < 1000; j++ {
		if _, _, code := run(bin, "exec", "--query", q, "--input", s, "--checkpoint", ck); code == 2 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	holder.Process.Kill()
	holder.Wait()
	pw.Close()
	if _, errOut, code := run(bin, "exec", "--query", q, "--input", s, "--checkpoint", ck); code != 0 {
		t.Fatalf("after the holder was killed: exit %d: %s", code, errOut)
	}
}
