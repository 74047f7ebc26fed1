package sparkver

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct{ in, line, err string }{
		{"4.3", "4.3", ""},
		{"4.3.0", "4.3", ""},
		{"4.1.1", "4.1", ""},
		{"3.5.9", "3.5", ""},
		{"4.0", "4.0", ""},
		{"4.2.1", "4.2", ""},
		{"3.4.1", "", "line 3.4 is not supported"},
		{"5.0", "", "line 5.0 is not supported"},
		{"4", "", "not MAJOR.MINOR"},
		{"v4.3", "", "not MAJOR.MINOR"},
		{"4.3.0-preview", "", "not MAJOR.MINOR"},
		{"", "", "not MAJOR.MINOR"},
	} {
		v, err := Parse(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Parse(%q) = %v, %v; want error %q", c.in, v, err, c.err)
			}
			continue
		}
		if err != nil || v.Line != c.line || v.Full != c.in {
			t.Errorf("Parse(%q) = %+v, %v; want line %s", c.in, v, err, c.line)
		}
	}
}

// TestPinnedCounts: the number of confs each line pins, as measured on
// real pyspark (offsets/0 of a new query): 4.1.1 11, 4.2.1 15, 4.3.0 17.
func TestPinnedCounts(t *testing.T) {
	want := map[string]int{"3.5": 10, "4.0": 11, "4.1": 11, "4.2": 15, "4.3": 17}
	for _, r := range Rows() {
		if len(r.Pinned) != want[r.Line] {
			t.Errorf("%s pins %d confs, want %d", r.Line, len(r.Pinned), want[r.Line])
		}
		seen := map[string]bool{}
		for _, c := range r.Pinned {
			if seen[c.Key] {
				t.Errorf("%s pins %s twice", r.Line, c.Key)
			}
			seen[c.Key] = true
			if c.Since == "" {
				t.Errorf("%s: %s cites no Spark change", r.Line, c.Key)
			}
		}
		if r.Cite == "" {
			t.Errorf("%s cites no Spark change", r.Line)
		}
	}
}

// TestHashOrderOfRealOffsets: the conf maps of real offsets/0 files are
// in Scala HashMap order of their keys: 2.13 for 4.0.5, 4.1.1 and 4.3.0,
// 2.12 (interleaved) for 3.5.9.
func TestHashOrderOfRealOffsets(t *testing.T) {
	real411 := []string{"spark.sql.streaming.stateStore.providerClass", "spark.sql.streaming.stateStore.rocksdb.formatVersion", "spark.sql.streaming.stateStore.encodingFormat", "spark.sql.streaming.statefulOperator.useStrictDistribution", "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion", "spark.sql.streaming.multipleWatermarkPolicy", "spark.sql.streaming.aggregation.stateFormatVersion", "spark.sql.shuffle.partitions", "spark.sql.streaming.join.stateFormatVersion", "spark.sql.streaming.stateStore.compression.codec", "spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan"}
	real430 := []string{"spark.sql.streaming.stateStore.providerClass", "spark.sql.dropDuplicates.deterministicKeyOrder.enabled", "spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion", "spark.sql.streaming.stateStore.rocksdb.formatVersion", "spark.sql.streaming.queryEvolution.enableSourceEvolution", "spark.sql.streaming.stateStore.encodingFormat", "spark.sql.streaming.statefulOperator.useStrictDistribution", "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion", "spark.sql.streaming.multipleWatermarkPolicy", "spark.sql.streaming.stateStore.rowChecksum.enabled", "spark.sql.streaming.statefulOperator.alwaysNullableOutput.enabled", "spark.sql.streaming.aggregation.stateFormatVersion", "spark.sql.function.protobufExtensions.enabled", "spark.sql.shuffle.partitions", "spark.sql.streaming.join.stateFormatVersion", "spark.sql.streaming.stateStore.compression.codec", "spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan"}
	real359 := []string{"spark.sql.streaming.stateStore.providerClass", "spark.sql.streaming.join.stateFormatVersion", "spark.sql.streaming.stateStore.compression.codec", "spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan", "spark.sql.streaming.stateStore.rocksdb.formatVersion", "spark.sql.streaming.statefulOperator.useStrictDistribution", "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion", "spark.sql.streaming.multipleWatermarkPolicy", "spark.sql.streaming.aggregation.stateFormatVersion", "spark.sql.shuffle.partitions"}
	for _, c := range []struct {
		line string
		real []string
	}{{"3.5", real359}, {"4.0", real411}, {"4.1", real411}, {"4.3", real430}} {
		r, _ := lookup(c.line)
		var keys []string
		for _, p := range r.Pinned {
			keys = append(keys, p.Key)
		}
		if got := HashOrder(keys, r.Scala212); !slices.Equal(got, c.real) {
			t.Errorf("%s: order %v\nreal Spark %v", c.line, got, c.real)
		}
	}
}

func TestKeyOrder(t *testing.T) {
	call := []string{"id", "n", "l", "d", "b", "ts"}
	r43, _ := lookup("4.3")
	r41, _ := lookup("4.1")
	r35, _ := lookup("3.5")
	for _, c := range []struct {
		k    KeyOrder
		want []string
	}{
		{r43.KeyOrderFor("true"), call},
		{r43.KeyOrderFor("false"), []string{"n", "ts", "id", "b", "l", "d"}},
		{r41.KeyOrderFor(""), []string{"n", "ts", "id", "b", "l", "d"}},
		// Measured: pyspark 3.5.9 stores struct<n,ts,id,b,l,d> too.
		{r35.KeyOrderFor(""), []string{"n", "ts", "id", "b", "l", "d"}},
	} {
		if got := c.k.Order(call); !slices.Equal(got, c.want) {
			t.Errorf("%v: %v, want %v", c.k, got, c.want)
		}
	}
	// Up to four names every order is the call order.
	four := []string{"d", "c", "b", "a"}
	for _, k := range []KeyOrder{SetOrder, SetOrder212, CallOrder} {
		if got := k.Order(four); !slices.Equal(got, four) {
			t.Errorf("%v of four: %v", k, got)
		}
	}
}

// TestHashOrder212Interleaves: Scala 2.12 visits a sub-trie at its slot,
// so a name whose slot comes after a sub-trie's follows the sub-trie's
// names, where 2.13 puts every entry before any sub-trie.
func TestHashOrder212Interleaves(t *testing.T) {
	names := []string{"id", "n", "l", "d", "b", "ts", "event_id", "user", "amount"}
	a, b := HashOrder(names, false), HashOrder(names, true)
	sa, sb := slices.Clone(a), slices.Clone(b)
	slices.Sort(sa)
	slices.Sort(sb)
	if !slices.Equal(sa, sb) || len(a) != len(names) {
		t.Fatalf("names lost: %v %v", a, b)
	}
}

// TestMetricsByLine: the customMetrics each line adds, as real pyspark
// reports them (stateOperators[0].customMetrics of a dropDuplicates over
// the HDFS-backed store: 4.1.1, 4.2.1 and 4.3.0 measured; 3.5 and 4.0
// have no instance metrics), and the sidecar rule.
func TestMetricsByLine(t *testing.T) {
	for _, c := range []struct {
		line      string
		operator  []string
		hdfs      []string
		snapshots bool
		crc       bool
	}{
		{"3.5", nil, nil, false, false},
		{"4.0", nil, nil, false, false},
		{"4.1", nil, nil, true, true},
		{"4.2", nil, []string{"forceSnapshotCount", "numSnapshotsAutoRepaired"}, true, false},
		{"4.3", []string{"numRowsReadDuringEviction", "numRowsIncrementallyRemoved"}, []string{"forceSnapshotCount", "numSnapshotsAutoRepaired"}, true, false},
	} {
		r, ok := lookup(c.line)
		if !ok {
			t.Fatalf("no row for %s", c.line)
		}
		m := r.Metrics
		if !slices.Equal(m.Operator, c.operator) || !slices.Equal(m.HDFS, c.hdfs) || m.SnapshotLastUploaded != c.snapshots || r.FileChecksum != c.crc {
			t.Errorf("%s: operator %v hdfs %v snapshots %v crc %v; want %v %v %v %v", c.line,
				m.Operator, m.HDFS, m.SnapshotLastUploaded, r.FileChecksum, c.operator, c.hdfs, c.snapshots, c.crc)
		}
		if (len(m.Operator) > 0 || len(m.HDFS) > 0 || m.SnapshotLastUploaded) && m.Cite == "" {
			t.Errorf("%s: metrics cite no Spark change", c.line)
		}
	}
}

// TestSnapshotLastUploadedNames: at most five partitions' instance
// metrics; with seven partitions real pyspark 4.3.0 reported partitions
// 2 to 6 (all -1), the first five of the names' HashMap order.
func TestSnapshotLastUploadedNames(t *testing.T) {
	name := func(ps ...int) []string {
		var out []string
		for _, p := range ps {
			out = append(out, "SnapshotLastUploaded.partition_"+strconv.Itoa(p)+"_default")
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		n    int
		want []string
	}{
		{1, name(0)},
		{2, name(0, 1)},
		{5, name(0, 1, 2, 3, 4)},
		{7, name(2, 3, 4, 5, 6)},
	} {
		if got := SnapshotLastUploadedNames(c.n); !slices.Equal(got, c.want) {
			t.Errorf("%d partitions: %v, want %v", c.n, got, c.want)
		}
	}
}
