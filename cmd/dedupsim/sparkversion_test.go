package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecSparkVersion: --spark-version picks the line's pinned confs and
// key order; a 4.3 checkpoint (call order) is refused on 4.1 with exit 2;
// a file version that conflicts with the flag, an unknown line and a
// spark_conf with no version are bad input (exit 2).
func TestExecSparkVersion(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	q := write(t, dir, "q.yaml", "dedup: {api: dropDuplicates, keys: [id, n, l, d, b, ts]}\nshuffle_partitions: 1\n")
	s := write(t, dir, "s.jsonl", `{"rows": [{"id":"a","n":"1","l":"x","d":"y","b":"z","ts":5}]}`+"\n")
	for _, c := range []struct {
		version, schema, conf string
	}{
		{"4.3.0", `[{"name":"id",`, `"spark.sql.dropDuplicates.deterministicKeyOrder.enabled":"true"`},
		{"4.1.1", `[{"name":"n",`, `"spark.sql.streaming.stateStore.encodingFormat":"unsaferow"`},
	} {
		ckpt := filepath.Join(dir, "ckpt-"+c.version)
		if _, errOut, code := run(bin, "exec", "--query", q, "--input", s, "--checkpoint", ckpt, "--spark-version", c.version); code != 0 {
			t.Fatalf("%s: exit %d: %s", c.version, code, errOut)
		}
		schema, _ := os.ReadFile(filepath.Join(ckpt, "state/0/0/_metadata/schema"))
		off, _ := os.ReadFile(filepath.Join(ckpt, "offsets/0"))
		if !strings.Contains(string(schema), c.schema) || !strings.Contains(string(off), c.conf) {
			t.Fatalf("%s: schema %s\noffsets %s", c.version, schema, off)
		}
	}
	_, errOut, code := run(bin, "exec", "--query", q, "--input", s, "--checkpoint", filepath.Join(dir, "ckpt-4.3.0"), "--spark-version", "4.1.1")
	if code != 2 || !strings.Contains(errOut, "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE") {
		t.Fatalf("4.3 checkpoint on 4.1: exit %d: %s", code, errOut)
	}
	qv := write(t, dir, "qv.yaml", "dedup: {api: dropDuplicates, keys: [id]}\nspark_version: 4.3.0\n")
	qc := write(t, dir, "qc.yaml", "dedup: {api: dropDuplicates, keys: [id]}\nspark_conf: {spark.sql.streaming.stateStore.rowChecksum.enabled: false}\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--query", qv, "--spark-version", "4.1.1"}, "qv.yaml:2: spark_version: the query file says 4.3.0 but --spark-version says 4.1.1"},
		{[]string{"--query", q, "--spark-version", "3.4.1"}, "--spark-version: spark version \"3.4.1\": line 3.4 is not supported"},
		{[]string{"--query", qc}, "qc.yaml:2: spark_conf: needs a Spark version"},
	} {
		_, errOut, code := run(bin, append([]string{"exec", "--input", s}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d: %s", c.args, code, errOut)
		}
	}
}
