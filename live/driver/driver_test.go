package driver

import (
	"testing"
	"time"
)

func TestParseCrashAt(t *testing.T) {
	for _, tc := range []struct {
		in    string
		point string
		batch int64
		bad   bool
	}{
		{in: "after-sink-write", point: "after-sink-write", batch: -1},
		{in: "after-commit:3", point: "after-commit", batch: 3},
		{in: "after-sink", bad: true},
		{in: "after-commit:x", bad: true},
		{in: "after-commit:-1", bad: true},
	} {
		c, err := ParseCrashAt(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: no error", tc.in)
			}
			continue
		}
		if err != nil || string(c.Point) != tc.point || c.Batch != tc.batch {
			t.Errorf("%q: %+v, %v", tc.in, c, err)
		}
	}
}

func TestParseClock(t *testing.T) {
	c, err := ParseClock("1000:2000:10")
	if err != nil {
		t.Fatal(err)
	}
	sc := c.(ScaledClock)
	if sc.Virt0 != 1000 || sc.Wall0 != 2000 || sc.Scale != 10 {
		t.Fatalf("%+v", sc)
	}
	if now := (ScaledClock{Virt0: 5, Wall0: time.Now().UnixMilli() + 3_600_000, Scale: 2}).NowMs(); now > 5-7_000_000 || now < 5-7_300_000 {
		t.Fatalf("an hour before wall0 at scale 2: %d, want about 5-7.2e6", now)
	}
	if _, ok := mustClock(t, "").(WallClock); !ok {
		t.Fatal("empty --clock is not the wall clock")
	}
}

func mustClock(t *testing.T, s string) any {
	t.Helper()
	c, err := ParseClock(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
