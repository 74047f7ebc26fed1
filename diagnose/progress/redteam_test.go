package progress

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// The red-team cases of issue 25 on the reader (make redteam runs every
// TestRedteam*): each input is read as what it is or refused, never read
// as "0 records" and taken for a healthy log.

// bzip2Of is good + "\n" compressed by bzip2 (the standard library reads
// bzip2 but does not write it, so the bytes are stored below; plain is
// only there to say what they hold).
func bzip2Of(t *testing.T, plain []byte) []byte {
	t.Helper()
	_ = plain
	b, err := hex.DecodeString(bzip2GoodHex)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gzipOf(plain []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(plain)
	w.Close()
	return b.Bytes()
}

func lz4FrameOf(plain []byte) []byte {
	var b bytes.Buffer
	w := lz4.NewWriter(&b)
	w.Write(plain)
	w.Close()
	return b.Bytes()
}

func snappyFramedOf(plain []byte) []byte {
	var b bytes.Buffer
	w := snappy.NewBufferedWriter(&b)
	w.Write(plain)
	w.Close()
	return b.Bytes()
}

func zstdOf(plain []byte) []byte {
	e, _ := zstd.NewWriter(nil)
	defer e.Close()
	return e.EncodeAll(plain, nil)
}

// TestRedteamCompressedInputs: every compressed form of one good record
// reads as that record (with its codec named), and formats that are not
// read are refused by name, never taken for a driver log of 0 records.
func TestRedteamCompressedInputs(t *testing.T) {
	plain := []byte(good + "\n")
	for _, tc := range []struct {
		name, codec string
		data        []byte
	}{
		{"gzip", "gzip", gzipOf(plain)},
		{"bzip2", "bzip2", bzip2Of(t, plain)},
		{"lz4 frame", "lz4-frame", lz4FrameOf(plain)},
		{"snappy framing", "snappy-framed", snappyFramedOf(plain)},
		{"zstd", "zstd", zstdOf(plain)},
		{"gzip of gzip", "gzip", gzipOf(gzipOf(plain))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ReadFrom("p.jsonl.x", bytes.NewReader(tc.data))
			if err != nil {
				t.Fatalf("%v", err)
			}
			if l.Files[0].Records != 1 || !strings.HasPrefix(l.Files[0].Codec, tc.codec) || len(l.Queries) != 1 {
				t.Errorf("file %+v", l.Files[0])
			}
		})
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"xz", []byte("\xfd7zXZ\x00\x00\x04rest"), "xz"},
		{"zip", []byte("PK\x03\x04\x14\x00rest"), "zip"},
		{"truncated gzip", gzipOf(plain)[:20], "gzip"},
		{"binary", []byte("\x00\x01\x02\x03garbage\x00"), "binary"},
		{"gzip of binary", gzipOf([]byte("\x00\x00\x00\x00")), "binary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadFrom("p.jsonl", bytes.NewReader(tc.data))
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want an InputError naming %q, got %v", tc.want, err)
			}
		})
	}
}

// TestRedteamEveryInputYieldsRecords: an input with no progress record is
// refused by name even when another input has records (the verdict would
// be over the other input only).
func TestRedteamEveryInputYieldsRecords(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.jsonl")
	os.WriteFile(ok, []byte(good+"\n"), 0o644)
	for name, content := range map[string]string{
		"empty.log":  "",
		"other.log":  "INFO nothing to see\nINFO still nothing\n",
		"bad.jsonl":  "{\"batchId\": oops}\n",
		"events.log": `{"event":"started","id":"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0","runId":"11111111-2222-3333-4444-555555555555","timestamp":"2026-12-01T08:00:00.000Z"}` + "\n",
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		for _, order := range [][]string{{ok, p}, {p, ok}} {
			_, err := Read(order)
			var ie *InputError
			if !errors.As(err, &ie) || ie.Path != p || !strings.Contains(err.Error(), "no StreamingQueryProgress record") {
				t.Errorf("%s in %v: want it refused by name, got %v", name, order, err)
			}
		}
	}
}

// TestRedteamMissingAddBatch: a record with rows in and no
// durationMs.addBatch is not an idle trigger (Spark's idle progress has
// numInputRows 0 and only latestOffset and triggerExecution): it is a bad
// line naming the field, never taken as idle.
func TestRedteamMissingAddBatch(t *testing.T) {
	noAdd := strings.Replace(good, `"addBatch":10,`, "", 1)
	var in strings.Builder
	for i := range 4 {
		fmt.Fprintln(&in, strings.Replace(noAdd, `"batchId":3`, fmt.Sprintf(`"batchId":%d`, i), 1))
	}
	_, err := ReadFrom("p.jsonl", strings.NewReader(in.String()))
	if err == nil || !strings.Contains(err.Error(), "durationMs.addBatch") {
		t.Errorf("records with rows and no addBatch: want them refused naming durationMs.addBatch, got %v", err)
	}
	// No durationMs at all: not an idle trigger either (Spark's has triggerExecution).
	noDur := strings.Replace(strings.Replace(good, `"durationMs":{"addBatch":10,"triggerExecution":12},`, "", 1), `"numInputRows":5`, `"numInputRows":0`, -1)
	l, err := ReadFrom("p.jsonl", strings.NewReader(good+"\n"+strings.Replace(noDur, `"batchId":3`, `"batchId":4`, 1)+"\n"))
	if err != nil || l.BadTotal != 1 || !strings.Contains(l.Bad[0].Reason, "durationMs") {
		t.Errorf("no durationMs: want one bad line naming durationMs, got %v %+v", err, l)
	}
	// A real idle trigger (no rows, latestOffset and triggerExecution) stays idle.
	idle := strings.Replace(strings.Replace(good, `"addBatch":10,`, `"latestOffset":1,`, 1), `"numInputRows":5`, `"numInputRows":0`, -1)
	idle = strings.Replace(idle, `"numRowsUpdated":5`, `"numRowsUpdated":0`, 1)
	l, err = ReadFrom("p.jsonl", strings.NewReader(good+"\n"+strings.Replace(idle, `"batchId":3`, `"batchId":4`, 1)+"\n"))
	if err != nil || l.BadTotal != 0 || !l.Queries[0].Runs[0].Records[1].Idle {
		t.Errorf("idle trigger: %v %+v", err, l)
	}
}

// bzip2GoodHex is good + "\n" through bzip2 -9 (1.0.8).
const bzip2GoodHex = "425a68393141592653593462ac3d0001085f80445010077ff01223de1a3fefdfca30014cd6d686a64994f49e989340d0000680d341b506a3537a9278901a3d4000d00000f504a6a688d35349ea610f210da8006868322eb6699d1d425b7df3a158c2398ef5b2c6244abf093482acc289871a5a60c1124cc9410cadbf3665034a6d8bd4965d11e80e90c9ab51eeb76daac69ecf84ed46c5a0d88541ec18c5ae9cc442b079a905984a93626101dda01c9345cb0d9cdba1ab051489db058281841b84380a9b32538596804d39c62db64e3a2b043177e6dc7ec83f3bf67e8408de0f12fcada0ea217e0cecf3755913446f216dc2d9cd4c17e805f7bc092cccfab4390b24c10ba5d67547cbefa7835344288667533837b6bdd13300551bbc2414c6b040222494572127202a76a9012040e6107fe089ed73ad6896843d44b2052384f229e35a1f3f176722256052be52c6258153b27a86a604eb0b6ec9390ca9c7984626756db9c06afe2ee48a70a12068c5587a"

// TestRedteamConflictingCopies: the same executed batch with different
// figures in two inputs is a Conflict naming both copies, and what is kept
// is the same in either order; identical copies count once.
func TestRedteamConflictingCopies(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	b := filepath.Join(dir, "b.jsonl")
	os.WriteFile(a, []byte(good+"\n"), 0o644)
	// Same batch, another timestamp and more state: still the same batch.
	other := strings.Replace(strings.Replace(good, `"numRowsTotal":7`, `"numRowsTotal":9`, 1), "08:45:12.123Z", "08:45:13.000Z", 1)
	os.WriteFile(b, []byte(other+"\n"), 0o644)
	var sigs []string
	for _, order := range [][]string{{a, b}, {b, a}} {
		l, err := Read(order)
		if err != nil {
			t.Fatal(err)
		}
		if l.ConflictTotal != 1 || len(l.Conflicts) != 1 || len(l.Queries[0].Records()) != 1 {
			t.Fatalf("%v: %+v", order, l)
		}
		c := l.Conflicts[0]
		if c.WhereA != a+":1" || c.WhereB != b+":1" || c.Field != "timestamp" {
			t.Errorf("%v: conflict %+v", order, c)
		}
		sigs = append(sigs, signature(l))
	}
	if sigs[0] != sigs[1] {
		t.Errorf("the order decided what is kept:\n%s\n%s", sigs[0], sigs[1])
	}
	l, err := Read([]string{a, a})
	if err != nil || l.Duplicates != 1 || l.ConflictTotal != 0 {
		t.Errorf("identical copies: %v %+v", err, l)
	}
}

// TestRedteamNoHangOnPipesOrDevices: a named pipe (no writer: reading
// would block forever) or a device given as an input, or as a part of a
// rolling event log, is refused at once. The guard below is a liveness
// check (a hang would otherwise last until go test's -timeout), not a
// speed assertion: the refusal takes microseconds.
func TestRedteamNoHangOnPipesOrDevices(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "p.jsonl")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	roll := filepath.Join(dir, "eventlog_v2_local-1")
	os.Mkdir(roll, 0o755)
	mkfifo(filepath.Join(roll, "events_1_local-1"))
	for _, tc := range []struct{ path, want string }{
		{fifo, "named pipe"},
		{roll, "named pipe"},
		{"/dev/zero", "device"},
	} {
		done := make(chan error, 1)
		go func() { _, err := Read([]string{tc.path}); done <- err }()
		select {
		case err := <-done:
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: want it refused as a %s, got %v", tc.path, tc.want, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s: Read blocked", tc.path)
		}
	}
}

// hugeArray streams [good, {one element of size bytes}, good] without
// holding it.
func hugeArray(size int) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		io.WriteString(pw, "[\n"+good+",\n{\"id\": \"")
		chunk := []byte(strings.Repeat("x", 1<<16))
		for n := 0; n < size; n += len(chunk) {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		io.WriteString(pw, "\", \"batchId\": 1, \"s\": \"a]}\\\"[{\"},\n"+strings.Replace(good, `"batchId":3`, `"batchId":4`, 1)+"\n]\n")
		pw.Close()
	}()
	return pr
}

// TestRedteamHugeArrayElement: one element of a JSON array far above the
// 4 MiB record limit is refused as it streams in, without being held or
// decoded (it was decoded whole: 1.48 GB for 300 MB), and the elements
// after it are still read.
func TestRedteamHugeArrayElement(t *testing.T) {
	read := func(size int) uint64 {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		l, err := ReadFrom("a.json", hugeArray(size))
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if l.Files[0].Records != 2 || l.BadTotal != 1 || !strings.Contains(l.Bad[0].Reason, "larger than 4 MiB") || l.Bad[0].Where != "a.json: element 1" {
			t.Errorf("file %+v, bad %+v", l.Files[0], l.Bad)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	// What is allocated is the record limit's buffer (grown to 4 MiB),
	// not the element: it does not grow with the element's size.
	small, big := read(32<<20), read(128<<20)
	t.Logf("allocated: %d MiB for a 32 MiB element, %d MiB for a 128 MiB one", small>>20, big>>20)
	if big > 64<<20 || big > small+8<<20 {
		t.Errorf("%d MiB allocated for a 32 MiB element, %d MiB for a 128 MiB one: the element was held", small>>20, big>>20)
	}
}

// FuzzArrayElements: on any valid JSON array, the streaming element
// scanner finds exactly the elements encoding/json finds, each with the
// same bytes (so no element is merged, split or lost).
func FuzzArrayElements(f *testing.F) {
	f.Add([]byte(`[` + good + `, 5, "a]", {"b": "}\"{"}, [1, [2]], null]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(` [ {"a" : "\\"} ] `))
	f.Fuzz(func(t *testing.T, data []byte) {
		var want []json.RawMessage
		if json.Unmarshal(data, &want) != nil {
			return
		}
		in := bufio.NewReader(bytes.NewReader(bytes.TrimLeft(data, " \t\r\n")))
		in.ReadByte() // '['
		var got [][]byte
		for {
			b, err := skipSpace(in)
			if err != nil || b == ']' {
				break
			}
			if b == ',' {
				continue
			}
			in.UnreadByte()
			v, long, err := scanValue(in, nil, maxRecord)
			if err != nil || long {
				t.Fatalf("element %d: %v long=%v", len(got), err, long)
			}
			got = append(got, v)
		}
		if len(got) != len(want) {
			t.Fatalf("%d elements, encoding/json finds %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(bytes.TrimSpace(got[i]), bytes.TrimSpace(want[i])) {
				t.Fatalf("element %d: %q, encoding/json: %q", i, got[i], want[i])
			}
		}
	})
}

// TestRedteamTimesInSparkRange: Spark's timestamps span years 1 to 9999
// (exit-codes.md: a watermark past 9999 is corrupt); a time outside, in any
// field and any accepted layout, is a bad line naming the field.
func TestRedteamTimesInSparkRange(t *testing.T) {
	for _, tc := range []struct{ from, to, field string }{
		{`"watermark":"2026-12-01T08:40:00.000Z"`, `"watermark":"0000-12-01T08:40:00.000Z"`, "eventTime.watermark"},
		{`"watermark":"2026-12-01T08:40:00.000Z"`, `"watermark":"9999-12-31T23:00:00-05:00"`, "eventTime.watermark"},
		{`"max":"2026-12-01T08:45:00.000Z"`, `"max":"0000-01-01T00:00:00Z"`, "eventTime.max"},
		{`"timestamp":"2026-12-01T08:45:12.123Z"`, `"timestamp":"0000-01-01T00:00:00.000Z"`, "timestamp"},
	} {
		rec := strings.Replace(good, tc.from, tc.to, 1)
		l, err := ReadFrom("p.jsonl", strings.NewReader(good+"\n"+strings.Replace(rec, `"batchId":3`, `"batchId":4`, 1)+"\n"))
		if err != nil || l.BadTotal != 1 || !strings.Contains(l.Bad[0].Reason, tc.field+": ") || !strings.Contains(l.Bad[0].Reason, "years 1 to 9999") {
			t.Errorf("%s: want one bad line naming %s and Spark's range, got %v %+v", tc.to, tc.field, err, l)
		}
	}
}
