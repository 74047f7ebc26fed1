package inspect

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/dedupsim/dedupsim/internal/codec/codectest"
)

// lz4Frame frames data as Spark's lz4 codec with the largest block
// (32 MiB), so a test's one file is a few blocks.
func lz4Frame(_ testing.TB, data []byte) []byte { return codectest.LZ4Block(data, 32<<20) }

var regexpWatermark = regexp.MustCompile(`"batchWatermarkMs":[0-9]+`)

// records is a state file's decoded body: key, value pairs, the end mark.
func records(kv ...[]byte) []byte { return codectest.StateRecords(kv...) }

// brokenCheckpoint copies a real fixture and applies break_; the 4.1
// checksum sidecars of .delta files are removed when noCRC.
func brokenCheckpoint(t *testing.T, src string, noCRC bool, break_ func(t *testing.T, dir string)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ckpt")
	copyDir(t, src, dir)
	if noCRC {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if strings.HasSuffix(p, ".crc") && strings.Contains(p, "/state/") {
				os.Remove(p)
			}
			return nil
		})
	}
	break_(t, dir)
	return dir
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	os.RemoveAll(p)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// TestRedteamInspect: every way of hiding state or hanging inspect found
// by the red-team pass (issue 25) is an inspect.Error naming the file,
// never a report with fewer keys, a hang or an allocation beyond the
// stated bounds.
func TestRedteamInspect(t *testing.T) {
	hdfs := "../diagnose/testdata/spark/unbounded-hdfs/checkpoint"
	rocks := "../diagnose/testdata/spark/healthy-rocksdb/checkpoint"
	big := bytes.Repeat([]byte{'k'}, maxRecordLen+1)
	for _, tc := range []struct {
		name, src string
		noCRC     bool
		want      string
		break_    func(t *testing.T, dir string)
	}{
		{"partition gone", hdfs, false, "state/0/1: missing", func(t *testing.T, d string) {
			os.RemoveAll(filepath.Join(d, "state/0/1"))
		}},
		{"partition 0 gone", hdfs, false, "state/0/0", func(t *testing.T, d string) {
			os.RemoveAll(filepath.Join(d, "state/0/0/1.delta"))
			os.RemoveAll(filepath.Join(d, "state/0/0"))
		}},
		{"partition symlink out", hdfs, false, "state/0/1", func(t *testing.T, d string) {
			out := filepath.Join(t.TempDir(), "elsewhere")
			copyDir(t, filepath.Join(d, "state/0/1"), out)
			symlink(t, out, filepath.Join(d, "state/0/1"))
		}},
		{"partition is a file", hdfs, false, "state/0/1: not a folder", func(t *testing.T, d string) {
			os.RemoveAll(filepath.Join(d, "state/0/1"))
			os.WriteFile(filepath.Join(d, "state/0/1"), nil, 0o644)
		}},
		{"partition beyond metadata", hdfs, false, "state/0/2", func(t *testing.T, d string) {
			copyDir(t, filepath.Join(d, "state/0/1"), filepath.Join(d, "state/0/2"))
		}},
		{"rocksdb partition gone", rocks, false, "state/0/1: missing", func(t *testing.T, d string) {
			os.RemoveAll(filepath.Join(d, "state/0/1"))
		}},
		{"delta symlink out", hdfs, true, "3.delta", func(t *testing.T, d string) {
			out := filepath.Join(t.TempDir(), "3.delta")
			b, _ := os.ReadFile(filepath.Join(d, "state/0/1/3.delta"))
			os.WriteFile(out, b, 0o644)
			symlink(t, out, filepath.Join(d, "state/0/1/3.delta"))
		}},
		{"commit fifo", hdfs, false, "commits/11: not a regular file", func(t *testing.T, d string) {
			mkfifo(t, filepath.Join(d, "commits/11"))
		}},
		{"offsets fifo", hdfs, false, "offsets/11: not a regular file", func(t *testing.T, d string) {
			mkfifo(t, filepath.Join(d, "offsets/11"))
		}},
		{"metadata fifo", hdfs, false, "metadata: not a regular file", func(t *testing.T, d string) {
			mkfifo(t, filepath.Join(d, "metadata"))
		}},
		{"delta fifo", hdfs, true, "3.delta: not a regular file", func(t *testing.T, d string) {
			mkfifo(t, filepath.Join(d, "state/0/1/3.delta"))
		}},
		{"delta crc fifo", hdfs, false, "3.delta.crc: not a regular file", func(t *testing.T, d string) {
			mkfifo(t, filepath.Join(d, "state/0/1/3.delta.crc"))
		}},
		{"schema fifo", hdfs, false, "schema: not a regular file", func(t *testing.T, d string) {
			mkfifo(t, filepath.Join(d, "state/0/0/_metadata/schema"))
		}},
		{"operator metadata fifo", rocks, false, "_metadata/metadata: not a regular file", func(t *testing.T, d string) {
			if _, err := os.Stat(filepath.Join(d, "state/0/_metadata/metadata")); err != nil {
				t.Skip("fixture has no operator metadata")
			}
			mkfifo(t, filepath.Join(d, "state/0/_metadata/metadata"))
		}},
		{"changelog fifo", rocks, true, "changelog: not a regular file", func(t *testing.T, d string) {
			mkfifo(t, filepath.Join(d, "state/0/0/1.changelog"))
		}},
		{"key over the bound", hdfs, true, "key length 1048577 out of range [0, 1 MiB]", func(t *testing.T, d string) {
			os.WriteFile(filepath.Join(d, "state/0/1/3.delta"), lz4Frame(t, records(big, nil)), 0o644)
		}},
		{"value over the bound", hdfs, true, "value length 1048577 out of range [0, 1 MiB]", func(t *testing.T, d string) {
			os.WriteFile(filepath.Join(d, "state/0/1/3.delta"), lz4Frame(t, records([]byte("k"), big)), 0o644)
		}},
		{"60 MiB key", hdfs, true, "key length 62914560 out of range", func(t *testing.T, d string) {
			// The red-team file: 10 keys of 60 MiB (2.4 MB of lz4) took 870 MB.
			k := make([]byte, 60<<20)
			os.WriteFile(filepath.Join(d, "state/0/1/3.delta"), lz4Frame(t, records(k, nil)), 0o644)
		}},
		{"held state over the bound", hdfs, true, "holds more than 4 MiB of keys and values", func(t *testing.T, d string) {
			var kv [][]byte
			for i := range 8 {
				k := bytes.Repeat([]byte{byte(i)}, 1<<20)
				kv = append(kv, k, nil)
			}
			os.WriteFile(filepath.Join(d, "state/0/1/3.delta"), lz4Frame(t, records(kv...)), 0o644)
		}},
		{"decoded file over the bound", hdfs, true, "decodes to more than 8 MiB", func(t *testing.T, d string) {
			// Removals hold nothing, but decoding still costs time.
			var b bytes.Buffer
			k := bytes.Repeat([]byte{'r'}, 1<<20)
			for range 10 {
				binary.Write(&b, binary.BigEndian, int32(len(k)))
				b.Write(k)
				binary.Write(&b, binary.BigEndian, int32(-1))
			}
			binary.Write(&b, binary.BigEndian, int32(-1))
			os.WriteFile(filepath.Join(d, "state/0/1/3.delta"), lz4Frame(t, b.Bytes()), 0o644)
		}},
		{"watermark past 9999", hdfs, false, "batchWatermarkMs 9000000000000000000 is outside [0, 253402300799999]", func(t *testing.T, d string) {
			rewrite(t, filepath.Join(d, "offsets/11"), `"batchWatermarkMs":0`, `"batchWatermarkMs":9000000000000000000`)
		}},
		{"timestamp past 9999", hdfs, false, "batchTimestampMs 253402300800000 is outside", func(t *testing.T, d string) {
			rewrite(t, filepath.Join(d, "offsets/11"), `"batchTimestampMs":1796133571118`, `"batchTimestampMs":253402300800000`)
		}},
		{"next watermark past 9999", hdfs, false, "nextBatchWatermarkMs 9000000000000000000 is outside", func(t *testing.T, d string) {
			os.WriteFile(filepath.Join(d, "commits/11"), []byte("v1\n{\"nextBatchWatermarkMs\":9000000000000000000}"), 0o644)
		}},
		{"next watermark below the batch's", hdfs, false, "nextBatchWatermarkMs 5 is below the batchWatermarkMs 7 of offsets/11", func(t *testing.T, d string) {
			rewrite(t, filepath.Join(d, "offsets/11"), `"batchWatermarkMs":0`, `"batchWatermarkMs":7`)
			os.WriteFile(filepath.Join(d, "commits/11"), []byte("v1\n{\"nextBatchWatermarkMs\":5}"), 0o644)
		}},
		{"pending batch watermark below the commit's", hdfs, false, "batchWatermarkMs 3 is below the nextBatchWatermarkMs 9 of commits/11", func(t *testing.T, d string) {
			b, _ := os.ReadFile(filepath.Join(d, "offsets/11"))
			os.WriteFile(filepath.Join(d, "offsets/12"), bytes.Replace(b, []byte(`"batchWatermarkMs":0`), []byte(`"batchWatermarkMs":3`), 1), 0o644)
			os.WriteFile(filepath.Join(d, "commits/11"), []byte("v1\n{\"nextBatchWatermarkMs\":9}"), 0o644)
		}},
		{"key below the evicting watermark", "../diagnose/testdata/spark/healthy-hdfs/checkpoint", false, "is at or below the watermark 9999999999999 ms that batch 23 evicted with", func(t *testing.T, d string) {
			// Batch 23 evicted every expiry up to its watermark: state
			// holding one contradicts the logs.
			b, _ := os.ReadFile(filepath.Join(d, "offsets/23"))
			w := regexpWatermark.ReplaceAll(b, []byte(`"batchWatermarkMs":9999999999999`))
			os.WriteFile(filepath.Join(d, "offsets/23"), w, 0o644)
			os.WriteFile(filepath.Join(d, "commits/23"), []byte("v1\n{\"nextBatchWatermarkMs\":9999999999999}"), 0o644)
		}},
		{"commit without offsets", hdfs, false, "commits/12: batch 12 has a commit but no offsets/12", func(t *testing.T, d string) {
			b, _ := os.ReadFile(filepath.Join(d, "commits/11"))
			os.WriteFile(filepath.Join(d, "commits/12"), b, 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := brokenCheckpoint(t, tc.src, tc.noCRC, tc.break_)
			held := maxHeld
			if strings.Contains(tc.name, "held") {
				maxHeld = 4 << 20
			}
			decoded := maxDecoded
			if strings.Contains(tc.name, "decoded") {
				maxDecoded = 8 << 20
			}
			defer func() { maxHeld, maxDecoded = held, decoded }()
			r, err := Inspect(dir)
			var ie *Error
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v (report %+v), want an inspect.Error with %q", err, r, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error on several lines: %q", err)
			}
		})
	}
}

func rewrite(t *testing.T, p, old, new string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil || !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s lacks %q (%v)", p, old, err)
	}
	os.WriteFile(p, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644)
}

// TestRedteamInspectStateTimes: an event time or expiry stored in the
// state outside years 0000-9999 is corrupt, not a range printed in the
// year 285 million.
func TestRedteamInspectStateTimes(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    rowLayout
		k, v []byte
	}{
		{"event time", rowLayout{key: schema{fields: make([]schemaFieldT, 2)}, timeField: 1}, unsafeRow(0, 9e18), nil},
		{"event time below year 0", rowLayout{key: schema{fields: make([]schemaFieldT, 2)}, timeField: 1}, unsafeRow(0, -9e18), nil},
		{"expiry", rowLayout{expiry: true, timeField: -1}, []byte("k"), unsafeRow(9e18)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p Partition
			err := tc.l.summarise(&p, tc.k, tc.v, groupSet{})
			if err == nil || !strings.Contains(err.Error(), "outside years 0000-9999") {
				t.Fatalf("got %v, want an error on the range", err)
			}
		})
	}
}

// unsafeRow is an UnsafeRow of fixed int64 fields, none null.
func unsafeRow(fields ...int64) []byte {
	bits := ((len(fields) + 63) / 64) * 8
	b := make([]byte, bits+8*len(fields))
	for i, f := range fields {
		binary.LittleEndian.PutUint64(b[bits+8*i:], uint64(f))
	}
	return b
}
