package progress

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sparkFixtures = "../testdata/spark"

// copyFile copies src to dst, cut to n bytes when n > 0.
func copyFile(t *testing.T, src, dst string, n int) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		b = b[:n]
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func one(t *testing.T, glob string) string {
	t.Helper()
	m, _ := filepath.Glob(glob)
	if len(m) != 1 {
		t.Fatalf("%s: %v", glob, m)
	}
	return m[0]
}

// eventLogDirFixture builds a spark.eventLog.dir from Spark 4.1.1's own event logs
// (every name as Spark wrote it) and returns it.
func eventLogDirFixture(t *testing.T) string {
	dir := t.TempDir()
	// A finished rolling log, and a running one (appstatus .inprogress,
	// its last part cut mid-block).
	roll := one(t, sparkFixtures+"/restamped-hdfs/eventlog/eventlog_v2_*")
	for _, f := range []string{"appstatus_local-1796135050640", "events_1_local-1796135050640.zstd"} {
		copyFile(t, filepath.Join(roll, f), filepath.Join(dir, filepath.Base(roll), f), 0)
	}
	run := one(t, sparkFixtures+"/unbounded-hdfs/eventlog/eventlog_v2_*")
	part := one(t, run+"/events_1_*")
	st, _ := os.Stat(part)
	copyFile(t, part, filepath.Join(dir, filepath.Base(run), filepath.Base(part)), int(st.Size()*2/3))
	copyFile(t, one(t, run+"/appstatus_*"), filepath.Join(dir, filepath.Base(run), "appstatus_local-1796133516260.inprogress"), 0)
	// Single files: plain, snappy, lz4, and a zstd one still being written.
	for _, g := range []string{"/future-jump-hdfs/eventlog/local-*", "/healthy-hdfs/eventlog/local-*", "/stalled-min-hdfs/eventlog/local-*"} {
		f := one(t, sparkFixtures+g)
		copyFile(t, f, filepath.Join(dir, filepath.Base(f)), 0)
	}
	z := one(t, sparkFixtures+"/unbounded-rocksdb/eventlog/local-*.zstd")
	st, _ = os.Stat(z)
	copyFile(t, z, filepath.Join(dir, filepath.Base(z)+".inprogress"), int(st.Size()/2))
	// A batch application, Hadoop's checksum file, a folder of something else.
	os.WriteFile(filepath.Join(dir, "local-1000"), []byte(`{"Event":"SparkListenerLogStart","Spark Version":"4.1.1"}`+"\n"+`{"Event":"SparkListenerApplicationStart","App Name":"nightly","App ID":"local-1000","Timestamp":1}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".local-1000.crc"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, "tmp"), 0o755)
	return dir
}

// TestEventLogDir: a spark.eventLog.dir lists its applications as the
// history server does (rolling folders, single files, codecs from the
// name, in-progress ones), skips hidden files, and every application with
// a streaming query reads, an in-progress compressed one up to where its
// file ends.
func TestEventLogDir(t *testing.T) {
	dir := eventLogDirFixture(t)
	if !IsEventLogDir(dir) {
		t.Fatal("not an event-log folder")
	}
	if IsEventLogDir(one(t, sparkFixtures+"/restamped-hdfs/eventlog/eventlog_v2_*")) {
		t.Error("a rolling event log taken for an event-log folder")
	}
	apps, skipped, err := EventLogDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range apps {
		got = append(got, strings.Join([]string{a.ID, map[bool]string{true: "rolling", false: "file"}[a.Rolling], a.Codec, map[bool]string{true: "inprogress"}[a.InProgress]}, ","))
	}
	want := []string{"local-1000,file,,", "local-1796133516260,rolling,,inprogress", "local-1796133597263,file,zstd,inprogress",
		"local-1796133665287,file,lz4,", "local-1796133978346,file,snappy,", "local-1796134423752,file,,", "local-1796135050640,rolling,,"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("apps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(skipped) != 1 || skipped[0].Name != "tmp" {
		t.Errorf("skipped %+v", skipped)
	}
	for _, a := range apps {
		l, err := Read([]string{a.Path})
		if a.ID == "local-1000" {
			if err == nil || !strings.Contains(err.Error(), "no StreamingQueryProgress record") {
				t.Errorf("the batch application: %v", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", a.ID, err)
			continue
		}
		f := l.Files[0]
		if f.Records == 0 || f.InProgress != a.InProgress || f.CutShort != a.InProgress {
			t.Errorf("%s: %+v", a.ID, f)
		}
	}
	// A compressed log cut short that is not in progress is damage.
	z := filepath.Join(dir, "local-1796133597263.zstd.inprogress")
	cut := filepath.Join(t.TempDir(), "local-1796133597263.zstd")
	copyFile(t, z, cut, 0)
	if _, err := Read([]string{cut}); err == nil || !strings.Contains(err.Error(), "corrupt stream") {
		t.Errorf("a finished log cut short: %v", err)
	}
	if _, _, err := EventLogDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no event log in it") {
		t.Errorf("an empty folder: %v", err)
	}
}

// TestPlan: the dedup's keys, watermark column and delay come from the
// event log's SQL plans of real Spark 4.1.1 runs, for dropDuplicates with
// and without the event time in the key and without a watermark.
func TestPlan(t *testing.T) {
	for _, tc := range []struct{ glob, want string }{
		{"/restamped-hdfs/eventlog/eventlog_v2_*", "dropDuplicates [id ts] ts 30000"},
		{"/unbounded-hdfs/eventlog/eventlog_v2_*", "dropDuplicates [id]  0"},
		{"/healthy-hdfs/eventlog/local-*", "dropDuplicatesWithinWatermark [id] ts 10000"},
		{"/future-jump-hdfs/eventlog/local-*", "dropDuplicates [id ts] ts 10000"},
		{"/stalled-min-hdfs/eventlog/local-*", "dropDuplicates [id ts] ts 10000"},
		{"/unbounded-rocksdb/eventlog/local-*", "dropDuplicates [id]  0"},
	} {
		l, err := Read([]string{one(t, sparkFixtures+tc.glob)})
		if err != nil {
			t.Fatal(err)
		}
		p := l.Queries[0].Plan
		if p == nil {
			t.Errorf("%s: no plan", tc.glob)
			continue
		}
		got := fmt.Sprintf("%s %v %s %d", p.API, p.Keys, p.EventTime, p.DelayMs)
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.glob, got, tc.want)
		}
	}
	// Other names, as Spark 4.1.1 prints them in the same nodes.
	run := "561ee604-6261-4d47-be56-000000000001"
	for _, tc := range []struct{ line, want string }{
		{`{"Event":"org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart","sparkPlanInfo":{"nodeName":"StreamingDeduplicate","simpleString":"StreamingDeduplicate [event_id#12, event_ts#13-T120000ms], state info [ checkpoint = file:/c/state, runId = ` + run + `, opId = 0, ver = 3, numPartitions = 8], 1700000000000, 1700000000000, 0"}}`,
			"dropDuplicates [event_id event_ts] event_ts 120000"},
		{`{"Event":"org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart","physicalPlanDescription":"StreamingDeduplicateWithinWatermark [payment_id#7], state info [ checkpoint = file:/c/state, runId = ` + run + `, opId = 0, ver = 1, numPartitions = 4]\n+- EventTimeWatermark 0f0e0d0c-0b0a-0908-0706-050403020100, event_ts#9: timestamp, 2 minutes\n"}`,
			"dropDuplicatesWithinWatermark [payment_id] event_ts 120000"},
	} {
		c := newCollector()
		c.planLine([]byte(tc.line))
		p, ok := c.plans[run]
		if got := fmt.Sprintf("%s %v %s %d", p.API, p.Keys, p.EventTime, p.DelayMs); !ok || got != tc.want {
			t.Errorf("%s, want %s", got, tc.want)
		}
	}
}

// FuzzPlanLine: a plan line never panics the reader, and what it keeps is
// names (no '#', no empty key) and a delay >= 0.
func FuzzPlanLine(f *testing.F) {
	f.Add(`"simpleString":"StreamingDeduplicate [id#0, ts#3-T30000ms], state info [ checkpoint = file:/c/state, runId = 561ee604-6261-4d47-be56-000000000001, opId = 0]"`)
	f.Add(`StreamingDeduplicateWithinWatermark [a#1], state info [ checkpoint = x, runId = 561ee604-6261-4d47-be56-000000000001, opId = 0]\n+- EventTimeWatermark 0f0e0d0c-0b0a-0908-0706-050403020100, t#9: timestamp, 2 minutes\n`)
	f.Fuzz(func(t *testing.T, line string) {
		c := newCollector()
		c.planLine([]byte(line))
		for _, p := range c.plans {
			for _, k := range p.Keys {
				if k == "" || strings.Contains(k, "#") {
					t.Fatalf("key %q from %q", k, line)
				}
			}
			if p.DelayMs < 0 {
				t.Fatalf("delay %d", p.DelayMs)
			}
		}
	})
}
