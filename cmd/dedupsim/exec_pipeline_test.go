package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A write that fails behind the engine stops the run with exit 1 and
// names the output.
func TestExecWriteFails(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	bin := binary(t)
	ex := "../../examples/worked-example/"
	_, errOut, code := run(bin, "exec", "--query", ex+"query.yaml", "--input", ex+"steps.jsonl", "--out", "/dev/full")
	if code != 1 || !strings.Contains(errOut, "exec: write /dev/full:") || !strings.Contains(errOut, "no space left on device") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// A run over a pipe that fails mid-run stops at once, although the pipe's
// writer is still open: no goroutine waits in a read of it (exec reads
// ahead and writes behind only over a regular file). The writer stays
// open until exec has exited, so a hang shows as the test's timeout.
func TestExecPipeWriteFailsAtOnce(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	bin := binary(t)
	dir := t.TempDir()
	q := filepath.Join(dir, "q.yaml")
	if err := os.WriteFile(q, []byte("dedup: {api: dropDuplicates, keys: [id]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "steps.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no fifo: ", err)
	}
	// More output than exec's 256 KiB buffer, so a write fails mid-run.
	var buf bytes.Buffer
	for b := range 3 {
		buf.WriteString(`{"rows": [`)
		for i := range 4000 {
			if i > 0 {
				buf.WriteByte(',')
			}
			fmt.Fprintf(&buf, `{"id":"k%d_%d","p":"%s"}`, b, i, strings.Repeat("x", 100))
		}
		buf.WriteString("]}\n")
	}
	wrote := make(chan *os.File, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			wrote <- nil
			return
		}
		w.Write(buf.Bytes())
		wrote <- w // left open: the input has not ended
	}()
	_, errOut, code := run(bin, "exec", "--query", q, "--input", fifo, "--out", "/dev/full")
	if w := <-wrote; w != nil {
		w.Close()
	}
	if code != 1 || !strings.Contains(errOut, "no space left on device") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
