package inspect

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/state"
)

const (
	idA = "427de593-b812-4091-a44f-1dccefca4d2a"
	idB = "fab142ec-e8b0-41f8-a6c2-f8324fc7a148"
	idC = "8cc36825-4283-405f-99f2-72820a539da6"
)

func TestParseCommit(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ver      int
		next     int64
		ids      stateIDs
		err      string
	}{
		{"v1", "v1\n{\"nextBatchWatermarkMs\":5}", 1, 5, nil, ""},
		{"v2 stateless", "v2\n{\"nextBatchWatermarkMs\":0}", 2, 0, nil, ""},
		{"v2", `v2
{"nextBatchWatermarkMs":7,"stateUniqueIds":{"0":[["` + idA + `"],["` + idB + `"]]}}`, 2, 7, stateIDs{0: {{idA}, {idB}}}, ""},
		{"v3", "v3\n{\"nextBatchWatermarkMs\":0}", 0, 0, nil, "line 1"},
		{"no body", "v2", 0, 0, nil, "line 1"},
		{"ids in v1", `v1
{"nextBatchWatermarkMs":7,"stateUniqueIds":{"0":[["` + idA + `"]]}}`, 0, 0, nil, "stateUniqueIds in a v1 commit"},
		{"not a uuid", `v2
{"nextBatchWatermarkMs":7,"stateUniqueIds":{"0":[["not-a-uuid"]]}}`, 0, 0, nil, `checkpoint id "not-a-uuid" is not a UUID`},
		{"upper-case uuid", `v2
{"nextBatchWatermarkMs":7,"stateUniqueIds":{"0":[["` + strings.ToUpper(idA) + `"]]}}`, 0, 0, nil, "is not a UUID"},
		{"id twice", `v2
{"nextBatchWatermarkMs":7,"stateUniqueIds":{"0":[["` + idA + `"],["` + idA + `"]]}}`, 0, 0, nil, "is named for operator 0 partition 0 too"},
		{"no partitions", `v2
{"nextBatchWatermarkMs":7,"stateUniqueIds":{"0":[]}}`, 0, 0, nil, "0 partitions"},
		{"no stores", `v2
{"nextBatchWatermarkMs":7,"stateUniqueIds":{"0":[[]]}}`, 0, 0, nil, "0 ids"},
		{"bad operator", `v2
{"nextBatchWatermarkMs":7,"stateUniqueIds":{"01":[["` + idA + `"]]}}`, 0, 0, nil, "not an operator id"},
		{"field twice", "v2\n{\"nextBatchWatermarkMs\":7,\"nextBatchWatermarkMs\":8}", 0, 0, nil, "given twice"},
		{"unknown field", "v2\n{\"nextBatchWatermarkMs\":7,\"x\":1}", 0, 0, nil, "unknown field"},
		{"trailing data", "v2\n{\"nextBatchWatermarkMs\":7} {}", 0, 0, nil, "data after"},
		{"trailing line", "v2\n{\"nextBatchWatermarkMs\":7}\nxyz", 0, 0, nil, "line 3"},
		{"past 9999", "v2\n{\"nextBatchWatermarkMs\":253402300800000}", 0, 0, nil, "outside"},
		{"fraction", "v2\n{\"nextBatchWatermarkMs\":1.5}", 0, 0, nil, "nextBatchWatermarkMs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := parseCommit([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Version != tc.ver || e.NextBatchWatermarkMs != tc.next || fmt.Sprint(e.IDs) != fmt.Sprint(tc.ids) {
				t.Fatalf("got %+v", e)
			}
		})
	}
}

// utf is Java's writeUTF of an ASCII string.
func utf(s string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(s)))
	return append(b, s...)
}

func lineageJSON(items ...lineageItem) string {
	var parts []string
	for _, it := range items {
		parts = append(parts, fmt.Sprintf(`{"version":%d,"checkpointUniqueId":"%s"}`, it.Version, it.ID))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func TestReadHead(t *testing.T) {
	two := lineageJSON(lineageItem{1, idA}, lineageItem{2, idB})
	for _, tc := range []struct {
		name    string
		in      []byte
		allowed heads
		ver     int
		lineage int
		err     string
	}{
		{"v1 changelog", records([]byte("k"), []byte("v")), headV1, 1, 0, ""},
		{"v2 changelog", append(utf("v2"), 0), headV1, 2, 0, ""},
		{"v3", append(utf("v3"), utf(two)...), headV2, 3, 2, ""},
		{"v4", append(utf("v4"), utf("[]")...), headV2, 4, 0, ""},
		{"v3 in a v1 name", append(utf("v3"), utf(two)...), headV1, 0, 0, "named <version>.changelog"},
		{"v2 in a v2 name", append(utf("v2"), 0), headV2, 0, 0, "format v2 writes v3 or v4"},
		{"no header in a v2 name", records(), headV2, 0, 0, "no changelog version"},
		{"v7", utf("v7"), headV2, 0, 0, "Spark writes v1 to v4"},
		{"lineage cut", append(utf("v3"), 0, 40, '['), headV2, 0, 0, "lineage: cut off"},
		{"lineage not JSON", append(utf("v3"), utf("{}")...), headV2, 0, 0, "want a JSON array"},
		{"lineage uuid", append(utf("v3"), utf(`[{"version":1,"checkpointUniqueId":"x"}]`)...), headV2, 0, 0, "is not a UUID"},
		{"lineage version 0", append(utf("v3"), utf(`[{"version":0,"checkpointUniqueId":"`+idA+`"}]`)...), headV2, 0, 0, "version: want a whole number >= 1"},
		{"lineage extra field", append(utf("v3"), utf(`[{"version":1,"checkpointUniqueId":"`+idA+`","x":1}]`)...), headV2, 0, 0, "exactly version and checkpointUniqueId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := readHead(bufio.NewReader(bytes.NewReader(tc.in)), tc.allowed)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil || h.Version != tc.ver || len(h.Lineage) != tc.lineage {
				t.Fatalf("got %+v, %v", h, err)
			}
		})
	}
}

func TestCheckLineage(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    int64
		l    []lineageItem
		err  string
	}{
		{"version 1", 1, nil, ""},
		{"back to 1", 3, []lineageItem{{1, idA}, {2, idB}}, ""},
		{"from a snapshot", 5, []lineageItem{{3, idA}, {4, idB}}, ""},
		{"empty above 1", 2, nil, "only version 1 has none"},
		{"loop: itself", 3, []lineageItem{{2, idA}, {3, idB}}, "a loop"},
		{"loop: later", 3, []lineageItem{{4, idA}}, "a loop"},
		{"gap", 5, []lineageItem{{2, idA}, {4, idB}}, "want consecutive"},
		{"repeat", 4, []lineageItem{{3, idA}, {3, idB}}, "want consecutive"},
		{"short", 5, []lineageItem{{2, idA}, {3, idB}}, "ends at version 3, not at 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkLineage(tc.v, tc.l)
			if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want %q", err, tc.err)
			}
		})
	}
}

// typed is a v2/v4 record stream: puts (value non-nil) and deletes.
func typed(kv ...[]byte) []byte {
	var b []byte
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			b = append(b, 0x10)
			b = binary.BigEndian.AppendUint32(b, uint32(len(kv[i])))
			b = append(b, kv[i]...)
			b = binary.BigEndian.AppendUint32(b, 0xffffffff)
			continue
		}
		b = append(b, 0x01)
		b = binary.BigEndian.AppendUint32(b, uint32(len(kv[i])))
		b = append(b, kv[i]...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(kv[i+1])))
		b = append(b, kv[i+1]...)
	}
	return append(b, 0x00)
}

func TestReplayTyped(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		keys int
		err  string
	}{
		{"puts and a delete", typed([]byte("a"), []byte("1"), []byte("b"), []byte("2"), []byte("a"), nil), 1, ""},
		{"delete of an absent key", typed([]byte("z"), nil), 0, ""},
		{"trailing data", append(typed([]byte("a"), []byte("1")), 7), 0, "data after the end record"},
		{"no end", typed([]byte("a"), []byte("1"))[:11], 0, "cut off"},
		{"merge", []byte{0x11, 0, 0, 0, 1, 'k', 0, 0, 0, 1, 'v', 0}, 0, "a merge record"},
		{"bad type", []byte{0x02}, 0, "record type 0x02"},
		{"delete with a value", []byte{0x10, 0, 0, 0, 1, 'k', 0, 0, 0, 1, 'v', 0}, 0, "want -1"},
		{"huge key", []byte{0x01, 0x03, 0xc0, 0, 0, 'k'}, 0, "out of range"},
		{"negative value", []byte{0x01, 0, 0, 0, 1, 'k', 0xff, 0xff, 0xff, 0xfe}, 0, "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := map[string][]byte{}
			var held int64
			err := replayTyped(bufio.NewReader(bytes.NewReader(tc.in)), state, &held)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil || len(state) != tc.keys {
				t.Fatalf("got %d keys, %v", len(state), err)
			}
		})
	}
}

func TestParseStateName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		want stateFile
		err  string
	}{
		{"3.delta", true, stateFile{3, "", "delta"}, ""},
		{"4_" + idA + ".changelog", true, stateFile{4, idA, "changelog"}, ""},
		{"4_" + idA + ".changelog.crc", true, stateFile{4, idA, "changelog.crc"}, ""},
		{"4_nope.zip", false, stateFile{}, "is not a UUID"},
		{"04.delta", false, stateFile{}, ""},
		{"SSTs", false, stateFile{}, ""},
		{"x.changelog", false, stateFile{}, ""},
	} {
		f, ok, err := parseStateName(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: got %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || ok != tc.ok || f != tc.want {
			t.Errorf("%s: got %+v %v %v", tc.in, f, ok, err)
		}
	}
}

func FuzzCommit(f *testing.F) {
	f.Add([]byte("v1\n{\"nextBatchWatermarkMs\":5}"))
	f.Add([]byte(`v2
{"nextBatchWatermarkMs":7,"stateUniqueIds":{"0":[["` + idA + `"],["` + idB + `"]]}}`))
	f.Add([]byte(`v2
{"nextBatchWatermarkMs":7,"stateUniqueIds":{"0":[["` + idA + `"]],"1":[["` + idA + `"]]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := parseCommit(b)
		if err != nil {
			return
		}
		if e.Version != 1 && e.Version != 2 || e.NextBatchWatermarkMs < 0 || e.NextBatchWatermarkMs > maxWatermarkMs {
			t.Fatalf("out of domain: %+v", e)
		}
		if e.Version == 1 && e.IDs != nil {
			t.Fatalf("ids in a v1 commit: %+v", e)
		}
		seen := map[string]bool{}
		for op, parts := range e.IDs {
			if op < 0 || len(parts) == 0 || len(parts) > maxPartitions {
				t.Fatalf("operator %d: %d partitions", op, len(parts))
			}
			for _, s := range parts {
				if len(s) == 0 || len(s) > maxStores {
					t.Fatalf("%d stores", len(s))
				}
				for _, id := range s {
					if !uuidRe.MatchString(id) || seen[id] {
						t.Fatalf("id %q not a uuid or repeated", id)
					}
					seen[id] = true
				}
			}
		}
	})
}

// FuzzChangelogV2: any bytes as a format-v2 changelog (LZ4Block-framed
// or not) give a head and records within the bounds, or an error.
func FuzzChangelogV2(f *testing.F) {
	two := lineageJSON(lineageItem{1, idA}, lineageItem{2, idB})
	f.Add(lz4Frame(f, append(append(utf("v3"), utf(two)...), records([]byte("k"), []byte("v"))...)))
	f.Add(lz4Frame(f, append(append(utf("v4"), utf("[]")...), typed([]byte("k"), []byte("v"), []byte("k"), nil)...)))
	f.Add(lz4Frame(f, append(utf("v4"), utf(lineageJSON(lineageItem{1, idC}))...)))
	// dedupsim's own: uncompressed, its trailer after the end marker.
	f.Add(state.AppendTrailer(append(append(utf("v3"), utf("[]")...), records([]byte("k"), []byte("v"))...), state.KindChangelog, state.ID{}, 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		state := map[string][]byte{}
		var held int64
		h, err := replayBytes(b, headV2, state, &held)
		if err != nil {
			return
		}
		if h.Version != 3 && h.Version != 4 || len(h.Lineage) > maxLineage {
			t.Fatalf("head %+v", h)
		}
		var sum int64
		for k, v := range state {
			if len(k) > maxRecordLen || len(v) > maxRecordLen {
				t.Fatalf("a key or value over the bound")
			}
			sum += int64(len(k) + len(v))
		}
		if held != sum {
			t.Fatalf("held %d, the state holds %d bytes", held, sum)
		}
		for _, it := range h.Lineage {
			if it.Version < 1 || !uuidRe.MatchString(it.ID) {
				t.Fatalf("lineage item %+v", it)
			}
		}
	})
}

// v2Fixtures are the real Spark checkpoints in format v2
// (scripts/inspect/fixtures.sh).
const v2Fixtures = "testdata/spark-v2"

// Inspect agrees with Spark 4.3's statestore reader on every format-v2
// fixture (a restart, a batch run again after a crash, real-time mode),
// reading each partition from the changelogs the commit log's ids and the
// lineages chain, and ignoring the files of the crashed attempt.
func TestAgreesWithSparkV2(t *testing.T) {
	dirs, _ := filepath.Glob(v2Fixtures + "/*")
	want := map[string]bool{"v2-dedup": false, "v2-within": false, "realtime": false}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected fixture %s", dir)
			continue
		}
		want[name] = true
		t.Run(name, func(t *testing.T) {
			r := agreesWithSpark(t, dir)
			if r.CheckpointFormat != 2 {
				t.Fatalf("checkpoint format %d, want 2", r.CheckpointFormat)
			}
			b, err := os.ReadFile(filepath.Join(dir, "checkpoint", "commits", strconv.FormatInt(r.LastCommitBatch, 10)))
			if err != nil {
				t.Fatal(err)
			}
			e, err := parseCommit(b)
			if err != nil {
				t.Fatal(err)
			}
			ignored := 0
			for _, p := range r.Operators[0].Partitions {
				if p.CheckpointID != e.IDs[0][p.ID][0] {
					t.Errorf("partition %d read at id %s, the commit names %s", p.ID, p.CheckpointID, e.IDs[0][p.ID][0])
				}
				if !strings.HasPrefix(p.From, "changelogs 1..") {
					t.Errorf("partition %d from %s: want every changelog back to version 1", p.ID, p.From)
				}
				ignored += p.Ignored
			}
			// The crash case leaves a second file of one version per
			// partition: it is not the state.
			if (name == "v2-dedup") != (ignored > 0) {
				t.Errorf("%d ignored files", ignored)
			}
		})
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("no fixture %s under %s", name, v2Fixtures)
		}
	}
}
