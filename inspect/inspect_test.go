package inspect

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// sparkState is what the fixture script recorded from Spark's own readers
// (spark.read.format("statestore") and the commit log).
type sparkState struct {
	LastCommittedBatch   int64 `json:"lastCommittedBatch"`
	NextBatchWatermarkMs int64 `json:"nextBatchWatermarkMs"`
	Partitions           map[string]struct {
		Keys  int64  `json:"keys"`
		MinUs *int64 `json:"minUs"`
		MaxUs *int64 `json:"maxUs"`
	} `json:"partitions"`
	StateMetadata []struct {
		OperatorName  string `json:"operatorName"`
		NumPartitions int    `json:"numPartitions"`
	} `json:"stateMetadata"`
}

// Inspect agrees with Spark's statestore reader on every fixture, both
// state stores: keys per partition, the event-time or expiry range, the
// last committed batch and the watermark.
func TestAgreesWithSparkReaders(t *testing.T) {
	dirs, _ := filepath.Glob("../diagnose/testdata/spark/*-*")
	if len(dirs) < 10 {
		t.Fatalf("want 10 fixtures, got %v", dirs)
	}
	from := map[string]bool{}
	defer func() {
		// Every way of rebuilding a partition is covered by a real fixture.
		for _, k := range []string{"deltas", "snapshot", "changelogs", ".zip"} {
			if !from[k] {
				t.Errorf("no fixture partition was read from %s", k)
			}
		}
	}()
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			r := agreesWithSpark(t, dir)
			for _, p := range r.Operators[0].Partitions {
				for _, k := range []string{"deltas", "snapshot", "changelogs", ".zip"} {
					if strings.Contains(p.From, k) {
						from[k] = true
					}
				}
			}
		})
	}
}

// agreesWithSpark compares Inspect on dir/checkpoint with what Spark's
// readers said (dir/spark-state.json): keys per partition, the event-time
// or expiry range, the last committed batch and watermark, the operator.
func agreesWithSpark(t *testing.T, dir string) *Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "spark-state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want sparkState
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	r, err := Inspect(filepath.Join(dir, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	if r.LastCommitBatch != want.LastCommittedBatch || r.NextBatchWatermarkMs != want.NextBatchWatermarkMs {
		t.Errorf("batch %d watermark %d, Spark: %d %d", r.LastCommitBatch, r.NextBatchWatermarkMs, want.LastCommittedBatch, want.NextBatchWatermarkMs)
	}
	if len(r.Operators) != 1 {
		t.Fatalf("operators %+v", r.Operators)
	}
	op := r.Operators[0]
	if m := want.StateMetadata; len(m) != 1 || m[0].OperatorName != op.Name || m[0].NumPartitions != op.NumPartitions {
		t.Errorf("operator %s/%d, Spark's state-metadata %+v", op.Name, op.NumPartitions, m)
	}
	var total int64
	for _, p := range op.Partitions {
		w := want.Partitions[strconv.Itoa(p.ID)]
		total += w.Keys
		if p.Keys != w.Keys {
			t.Errorf("partition %d: %d keys, Spark %d", p.ID, p.Keys, w.Keys)
		}
		zipOnly := strings.Contains(p.From, ".zip")
		if zipOnly && p.HasRange {
			t.Errorf("partition %d: a range from a RocksDB zip, whose SSTs are not read", p.ID)
		}
		if w.MinUs != nil && !zipOnly && (!p.HasRange || p.MinUs != *w.MinUs || p.MaxUs != *w.MaxUs) {
			t.Errorf("partition %d: range %d..%d, Spark %d..%d", p.ID, p.MinUs, p.MaxUs, *w.MinUs, *w.MaxUs)
		}
		if w.MinUs == nil && p.HasRange && !zipOnly {
			t.Errorf("partition %d has a range but the key has no event time", p.ID)
		}
	}
	if op.Keys != total {
		t.Errorf("operator keys %d, Spark %d", op.Keys, total)
	}
	restamped := strings.HasPrefix(filepath.Base(dir), "restamped")
	if restamped != (op.KeysWithSeveralTimes > 0) {
		t.Errorf("keys held under several event times: %d (restamped case: %v)", op.KeysWithSeveralTimes, restamped)
	}
	return r
}

// tree hashes every file under dir with its mode and mtime.
func tree(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := d.Info()
		h := ""
		if !d.IsDir() {
			b, _ := os.ReadFile(p)
			h = string(sha256.New().Sum(b))
		}
		out[p] = fi.Mode().String() + fi.ModTime().String() + h
		return nil
	})
	return out
}

func copyDir(t *testing.T, from, to string) {
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestNeverWrites(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ckpt")
	copyDir(t, "../diagnose/testdata/spark/healthy-hdfs/checkpoint", dir)
	before := tree(t, dir)
	if _, err := Inspect(dir); err != nil {
		t.Fatal(err)
	}
	after := tree(t, dir)
	if len(before) != len(after) {
		t.Fatalf("%d files before, %d after", len(before), len(after))
	}
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s changed", p)
		}
	}
}

func TestRefusesBrokenCheckpoints(t *testing.T) {
	src := "../diagnose/testdata/spark/unbounded-hdfs/checkpoint"
	for _, tc := range []struct {
		name, want string
		break_     func(dir string)
	}{
		{"not a checkpoint", "not a Spark streaming checkpoint", func(d string) { os.Remove(filepath.Join(d, "metadata")) }},
		{"bad metadata", "want {\"id\"", func(d string) { os.WriteFile(filepath.Join(d, "metadata"), []byte("{}"), 0o644) }},
		{"bad offsets", "line 1: want v1", func(d string) { os.WriteFile(filepath.Join(d, "offsets", "11"), []byte("v9\n{}"), 0o644) }},
		{"bad commit", "nextBatchWatermarkMs", func(d string) { os.WriteFile(filepath.Join(d, "commits", "11"), []byte("v1\n{\"x\":1}"), 0o644) }},
		{"stray log name", "not a batch id", func(d string) { os.WriteFile(filepath.Join(d, "commits", "eleven"), nil, 0o644) }},
		{"missing delta", "3.delta is missing", func(d string) { os.Remove(filepath.Join(d, "state/0/1/3.delta")) }},
		{"corrupt delta", "", func(d string) {
			p := filepath.Join(d, "state/0/1/3.delta")
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 0xff
			os.WriteFile(p, b, 0o644)
		}},
		{"cut delta", "", func(d string) {
			p := filepath.Join(d, "state/0/0/2.delta")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-30], 0o644) // into the data block
		}},
		{"bad schema", "schema", func(d string) {
			os.WriteFile(filepath.Join(d, "state/0/0/_metadata/schema"), []byte("\x00\x02v9"), 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ckpt")
			copyDir(t, src, dir)
			tc.break_(dir)
			// The 4.1 checksum sidecars would catch the corrupt files
			// first; without them the records themselves must.
			if strings.Contains(tc.name, "delta") {
				filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
					if strings.HasSuffix(p, ".delta.crc") {
						os.Remove(p)
					}
					return nil
				})
			}
			_, err := Inspect(dir)
			var ie *Error
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an inspect.Error with %q", err, tc.want)
			}
		})
	}
	// With the sidecar there, a flipped byte is a checksum mismatch.
	dir := filepath.Join(t.TempDir(), "ckpt")
	copyDir(t, src, dir)
	p := filepath.Join(dir, "state/0/1/3.delta")
	b, _ := os.ReadFile(p)
	b[len(b)/2] ^= 0xff
	os.WriteFile(p, b, 0o644)
	if _, err := Inspect(dir); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("checksum: %v", err)
	}
}

func FuzzReplay(f *testing.F) {
	for _, p := range []string{"../diagnose/testdata/spark/unbounded-hdfs/checkpoint/state/0/0/1.delta",
		"../diagnose/testdata/spark/healthy-rocksdb/checkpoint/state/0/0/2.changelog"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	// Issue 25: a key claiming 60 MiB (refused before allocating), a put
	// then a remove of the same key.
	f.Add(lz4Frame(f, []byte{0x03, 0xc0, 0, 0, 'k'}))
	f.Add(lz4Frame(f, records([]byte("k"), []byte("v"), []byte("k"), nil)))
	f.Fuzz(func(t *testing.T, b []byte) {
		state := map[string][]byte{}
		var held int64
		_, err := replayBytes(b, headV1, state, &held)
		var sum int64
		for k, v := range state {
			if len(k) > maxRecordLen || len(v) > maxRecordLen {
				t.Fatalf("a key or value over the bound: %d %d", len(k), len(v))
			}
			sum += int64(len(k) + len(v))
		}
		if err == nil && held != sum {
			t.Fatalf("held %d, the state holds %d bytes", held, sum)
		}
		if err == nil {
			l := rowLayout{key: schema{fields: make([]schemaFieldT, 2)}, timeField: 1}
			for k, v := range state {
				var p Partition
				l.summarise(&p, []byte(k), v, groupSet{})
			}
		}
	})
}

func FuzzSchema(f *testing.F) {
	if b, err := os.ReadFile("../diagnose/testdata/spark/unbounded-hdfs/checkpoint/state/0/0/_metadata/schema"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("\x00\x02v2\x00\x00\x00\x01\x00\x02{}\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, v, err := parseSchema(b)
		if err == nil && (k.text == "" && len(k.fields) > 0 || v.text == "" && len(v.fields) > 0) {
			t.Fatalf("fields without a schema text: %+v %+v", k, v)
		}
	})
}

// FuzzLogs: any metadata, offsets and commit files give a report or an
// inspect.Error, never a panic.
func FuzzLogs(f *testing.F) {
	f.Add([]byte(`{"id":"q"}`), []byte("v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1,\"conf\":{}}\n{\"logOffset\":0}"), []byte("v1\n{\"nextBatchWatermarkMs\":0}"))
	// Issue 25: a watermark past year 9999, one going down.
	f.Add([]byte(`{"id":"q"}`), []byte("v1\n{\"batchWatermarkMs\":9000000000000000000,\"batchTimestampMs\":1,\"conf\":{}}\n-"), []byte("v1\n{\"nextBatchWatermarkMs\":9000000000000000000}"))
	f.Add([]byte(`{"id":"q"}`), []byte("v1\n{\"batchWatermarkMs\":7,\"batchTimestampMs\":1,\"conf\":{\"spark.sql.shuffle.partitions\":\"0\"}}\n-"), []byte("v1\n{\"nextBatchWatermarkMs\":5}"))
	f.Fuzz(func(t *testing.T, md, off, commit []byte) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "offsets"), 0o755)
		os.MkdirAll(filepath.Join(dir, "commits"), 0o755)
		os.WriteFile(filepath.Join(dir, "metadata"), md, 0o644)
		os.WriteFile(filepath.Join(dir, "offsets", "0"), off, 0o644)
		os.WriteFile(filepath.Join(dir, "commits", "0"), commit, 0o644)
		r, err := Inspect(dir)
		var ie *Error
		if err != nil && !errors.As(err, &ie) {
			t.Fatalf("not an inspect.Error: %v", err)
		}
		if err == nil && (r.NextBatchWatermarkMs < 0 || r.BatchWatermarkMs < 0 || r.NextBatchWatermarkMs > maxWatermarkMs || r.BatchWatermarkMs > maxWatermarkMs ||
			r.BatchTimestampMs < 0 || r.BatchTimestampMs > maxTimestampMs || r.NextBatchWatermarkMs < r.BatchWatermarkMs) {
			t.Fatalf("watermark or timestamp out of Spark's range or order: %+v", r)
		}
	})
}

// TestNestedKeys: checkpoints of pyspark 4.1.1 whose state key holds a
// struct (with the event time after it) or a map (issue 27; the golden
// traces of engine/testdata/nested.txt run by conform's runner): the
// nested values sit in the UnsafeRow's variable-length part, and the keys
// and event times read as Spark's progress reported them (numRowsTotal 1
// and 5, every expiry at 15 s).
func TestNestedKeys(t *testing.T) {
	for _, c := range []struct {
		dir, eventTime string
		keys           []int64
		atUs           int64
	}{
		{"struct-key-within", "__dedupsim_event_time", []int64{1, 0}, 10_000_000},
		{"map-key-within", "expiresAtMicros", []int64{4, 1}, 15_000_000},
	} {
		r, err := Inspect(filepath.Join("testdata", "nested", c.dir))
		if err != nil {
			t.Fatalf("%s: %v", c.dir, err)
		}
		op := r.Operators[0]
		if op.EventTime != c.eventTime || len(op.Partitions) != 2 || !strings.Contains(op.KeySchema, `"type":{"type":"`) {
			t.Fatalf("%s: %+v", c.dir, op)
		}
		for i, p := range op.Partitions {
			if p.Keys != c.keys[i] {
				t.Errorf("%s partition %d: %d keys, want %d", c.dir, i, p.Keys, c.keys[i])
			}
			if p.Keys > 0 && (!p.HasRange || p.MinUs != c.atUs || p.MaxUs != c.atUs) {
				t.Errorf("%s partition %d: range %v %d..%d", c.dir, i, p.HasRange, p.MinUs, p.MaxUs)
			}
		}
	}
}
