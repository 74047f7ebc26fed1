package query

import (
	"strings"
	"testing"
)

// checkpoint_format_version: 1 or 2 (Spark's
// spark.sql.streaming.stateStore.checkpointFormatVersion); 2 only with the
// Pebble store, as Spark's format v2 is its RocksDB provider's.
func TestCheckpointFormatVersion(t *testing.T) {
	const base = "dedup: {api: dropDuplicates, keys: [id]}\n"
	for _, tc := range []struct {
		in   string
		want int
		err  string
	}{
		{base, 0, ""},
		{base + "checkpoint_format_version: 1\n", 1, ""},
		{base + "state_store: pebble\ncheckpoint_format_version: 2\n", 2, ""},
		{base + "checkpoint_format_version: 2\n", 0, "q.yaml:2: checkpoint_format_version: 2 needs state_store: pebble"},
		{base + "state_store: pebble\ncheckpoint_format_version: 3\n", 0, "must be 1 or 2 (spark.sql.streaming.stateStore.checkpointFormatVersion), got 3"},
		{base + "checkpoint_format_version: two\n", 0, "checkpoint_format_version"},
	} {
		q, err := Parse("q.yaml", []byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: got %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || q.CheckpointFormat != tc.want {
			t.Errorf("%q: got %+v %v", tc.in, q, err)
		}
	}
}
