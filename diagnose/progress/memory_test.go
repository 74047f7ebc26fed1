package progress

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// The reader streams: memory grows with the records kept (a few hundred
// bytes each: only what the findings read), not with the input's size.
func TestMemoryPerRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 100 MB")
	}
	const n = 50_000
	pr, pw := io.Pipe()
	go func() {
		pad := strings.Repeat("x", 1500) // a big description, as Kafka's are
		for i := range n {
			fmt.Fprintln(pw, strings.Replace(strings.Replace(good, `"batchId":3`, fmt.Sprintf(`"batchId":%d`, i), 1), `"description":"x"`, `"description":"`+pad+`"`, 1))
		}
		pw.Close()
	}()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	l, err := ReadFrom("big.jsonl", pr)
	if err != nil || len(l.Queries[0].Records()) != n {
		t.Fatalf("%v", err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%d records of %d bytes: %.0f bytes of heap per record", n, len(good)+1500, per)
	if per > 1000 {
		t.Errorf("%.0f bytes per record kept", per)
	}
	runtime.KeepAlive(l)
}
