package capture

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A record stamped earlier than one before it in its partition arrived no
// sooner: it joins the window of its partition's running maximum, so that
// every batch stays an offset range per partition. A window is cut only
// once every partition still open has a record past it.
func TestWindowsRunningMaximum(t *testing.T) {
	ws := newWindows(10*time.Second, nil)
	add := func(p int32, off, sec int64) {
		ws.add(p, off, sec*1000, []byte(fmt.Sprintf("p%d@%d", p, off)))
	}
	add(0, 0, 1)
	add(0, 1, 12) // window [10, 20)
	add(0, 2, 5)  // stamped earlier: still [10, 20), after offset 1
	add(0, 3, 31) // [30, 40): the window [20, 30) is empty
	add(1, 0, 3)
	add(1, 1, 9)
	e, ok := ws.end()
	if !ok || e != 10_000 {
		t.Fatalf("first window ends at %d, want 10000", e)
	}
	if ws.ahead(1, e) {
		t.Fatal("partition 1 has nothing past 10 s yet: the window is not complete")
	}
	add(1, 2, 25)
	cut := func() string {
		e, _ := ws.end()
		b, tick := ws.cut(e)
		var rows []string
		for _, r := range b.rows {
			rows = append(rows, string(r))
		}
		return fmt.Sprintf("%d tick=%v %s", e/1000, tick, strings.Join(rows, ","))
	}
	for _, want := range []string{"10 tick=false p0@0,p1@0,p1@1", "20 tick=false p0@1,p0@2", "30 tick=false p1@2", "40 tick=false p0@3"} {
		if got := cut(); got != want {
			t.Fatalf("cut %q, want %q", got, want)
		}
	}
	add(0, 4, 75) // [70, 80): two empty windows after 40 s give one tick
	if got := cut(); got != "80 tick=true p0@4" {
		t.Fatalf("cut %q", got)
	}
	m := ws.mark(map[int32]int64{0: 5, 1: 3})
	if m.Next[0] != 5 || m.Next[1] != 3 || m.MaxTs[0] != 75_000 || m.MaxTs[1] != 25_000 || m.WindowEnd != 80_000 {
		t.Fatalf("mark %+v", m)
	}
}

func TestParseBound(t *testing.T) {
	for _, tc := range []struct {
		in    string
		start bool
		want  string
	}{
		{"earliest", true, "{Kind:1 Offset:0 PerPartition:map[] TimeMs:0}"},
		{"latest", false, "{Kind:2 Offset:0 PerPartition:map[] TimeMs:0}"},
		{"17", true, "{Kind:3 Offset:17 PerPartition:map[] TimeMs:0}"},
		{"0:5, 2:9", false, "{Kind:3 Offset:0 PerPartition:map[0:5 2:9] TimeMs:0}"},
		{"2026-11-30T09:00:00.5Z", true, "{Kind:4 Offset:0 PerPartition:map[] TimeMs:1796029200500}"},
		{"latest", true, "error: --x latest: only the end may be latest"},
		{"-1", true, "error: --x -1: an offset is >= 0"},
		{"0:1,0:2", true, "partition 0 given twice"},
		{"1:x", true, `"1:x" is not P:N`},
		{"10000-01-01T00:00:00Z", true, "error: --x \"10000-01-01T00:00:00Z\""},
		{"0000-01-01T00:00:00Z", false, "out of range, want a time in years [0001, 9999]"},
		{"", true, "error: --x is empty"},
	} {
		b, err := ParseBound("x", tc.in, tc.start)
		got := fmt.Sprintf("%+v", b)
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%q: %s, want %s", tc.in, got, tc.want)
		}
	}
}
