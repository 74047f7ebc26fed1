package driver

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
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

// TestFlagsEnvironment: the crash environment variables stand in for
// flags left out; a flag given wins; a bad value is bad input naming it.
func TestFlagsEnvironment(t *testing.T) {
	parse := func(env map[string]string, args ...string) (Options, error) {
		fs := pflag.NewFlagSet("engine", pflag.ContinueOnError)
		var f Flags
		f.Register(fs)
		base := []string{"--query", "q.yaml", "--checkpoint", "c", "--bootstrap", "h:1", "--input-topic", "in", "--output-topic", "out"}
		if err := fs.Parse(append(base, args...)); err != nil {
			t.Fatal(err)
		}
		return f.Options(fs.Changed, func(k string) string { return env[k] })
	}
	o, err := parse(map[string]string{CrashEnv: "after-commit:3", CrashFromEnv: "5", CrashUntilEnv: "9"})
	if err != nil || o.Crash == nil || o.Crash.Point != "after-commit" || o.Crash.Batch != 3 || o.CrashFrom != 5 || o.CrashUntil != 9 {
		t.Fatalf("from the environment: %+v, %v", o, err)
	}
	o, err = parse(map[string]string{CrashEnv: "after-commit", CrashFromEnv: "5"}, "--crash-at", "after-sink-write", "--crash-from", "7")
	if err != nil || o.Crash.Point != "after-sink-write" || o.Crash.Batch != -1 || o.CrashFrom != 7 {
		t.Fatalf("flags over the environment: %+v, %v", o, err)
	}
	o, err = parse(nil, "--crash-at", "")
	if err != nil || o.Crash != nil || o.Sink != "transactional" || o.KafkaTimeout != 30*time.Second || o.StartingOffsets != "earliest" {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	_, err = parse(map[string]string{CrashUntilEnv: "soon"})
	var de *Error
	if !errors.As(err, &de) || de.Code != ExitBadInput || !strings.Contains(err.Error(), CrashUntilEnv) {
		t.Fatalf("bad environment value: %v", err)
	}
}

// TestFlagsFetchOffset: Spark's fetchOffset.numRetries and
// fetchOffset.retryIntervalMs reach the Kafka source as given, default to
// Spark's 3 and 1000, and a value out of range is bad input naming the
// flag, the Spark option and the range.
func TestFlagsFetchOffset(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		n          int
		ms         int64
		wantErrors []string // nil: accepted
	}{
		{nil, 3, 1000, nil},
		{[]string{"--fetch-offset-num-retries", "5", "--fetch-offset-retry-interval-ms", "10"}, 5, 10, nil},
		{[]string{"--fetch-offset-num-retries", "1", "--fetch-offset-retry-interval-ms", "0"}, 1, 0, nil},
		{[]string{"--fetch-offset-num-retries", "1000", "--fetch-offset-retry-interval-ms", "3600000"}, 1000, 3600000, nil},
		{[]string{"--fetch-offset-num-retries", "0"}, 0, 0, []string{"--fetch-offset-num-retries 0", "fetchOffset.numRetries 0: want an attempt count in [1, 1000]"}},
		{[]string{"--fetch-offset-num-retries", "-1"}, 0, 0, []string{"--fetch-offset-num-retries -1", "[1, 1000]"}},
		{[]string{"--fetch-offset-num-retries", "1001"}, 0, 0, []string{"--fetch-offset-num-retries 1001"}},
		{[]string{"--fetch-offset-retry-interval-ms", "-1"}, 0, 0, []string{"--fetch-offset-retry-interval-ms -1", "fetchOffset.retryIntervalMs -1: want milliseconds in [0, 3600000]"}},
		{[]string{"--fetch-offset-retry-interval-ms", "3600001"}, 0, 0, []string{"--fetch-offset-retry-interval-ms 3600001"}},
	} {
		fs := pflag.NewFlagSet("engine", pflag.ContinueOnError)
		var f Flags
		f.Register(fs)
		base := []string{"--query", "q.yaml", "--checkpoint", "c", "--bootstrap", "h:1", "--input-topic", "in", "--output-topic", "out"}
		if err := fs.Parse(append(base, tc.args...)); err != nil {
			t.Fatal(err)
		}
		o, err := f.Options(fs.Changed, func(string) string { return "" })
		if tc.wantErrors == nil {
			if err != nil || o.FetchOffset == nil || o.FetchOffset.NumRetries != tc.n || o.FetchOffset.RetryIntervalMs != tc.ms {
				t.Errorf("%v: %+v, %v; want %d attempts %d ms apart", tc.args, o.FetchOffset, err, tc.n, tc.ms)
			}
			continue
		}
		var de *Error
		if !errors.As(err, &de) || de.Code != ExitBadInput {
			t.Errorf("%v: %v, want bad input", tc.args, err)
			continue
		}
		for _, w := range tc.wantErrors {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q does not say %q", tc.args, err, w)
			}
		}
	}
	// pflag refuses what is not a whole number.
	for _, bad := range [][]string{{"--fetch-offset-num-retries", "three"}, {"--fetch-offset-num-retries", "1.5"}, {"--fetch-offset-retry-interval-ms", "1s"}} {
		fs := pflag.NewFlagSet("engine", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var f Flags
		f.Register(fs)
		if err := fs.Parse(bad); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%v: %v, want a parse error naming the flag", bad, err)
		}
	}
}
