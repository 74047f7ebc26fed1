package driver

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/dedupsim/dedupsim/engine/crashpoint"
)

// CrashAt is a parsed --crash-at POINT[:BATCH]; Batch -1 is any batch.
type CrashAt struct {
	Point crashpoint.Point
	Batch int64
}

// ParseCrashAt parses --crash-at POINT[:BATCH] ("": none, nil).
func ParseCrashAt(s string) (*CrashAt, error) {
	if s == "" {
		return nil, nil
	}
	name, batch, hasBatch := strings.Cut(s, ":")
	pt, ok := crashpoint.Parse(name)
	if !ok {
		return nil, fmt.Errorf("crash point %q: want one of %s, optionally :BATCH", name, crashpoint.List())
	}
	c := &CrashAt{Point: pt, Batch: -1}
	if hasBatch {
		n, err := strconv.ParseInt(batch, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("crash point %q: batch %q is not a batch id", s, batch)
		}
		c.Batch = n
	}
	return c, nil
}

// die ends the process at once, with no cleanup: SIGKILL to itself (what
// a crashed driver looks like to the broker and the checkpoint), and
// os.Exit(137) should the signal somehow not land.
func die(p crashpoint.Point, id int64) {
	fmt.Fprintf(os.Stderr, "dedupsim engine: crash at %s of batch %d\n", p, id)
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	os.Exit(ExitKilled)
}
