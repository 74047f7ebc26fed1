package conform

import (
	"strconv"
)

// BenchQuery is the speed comparison's query (make bench-spark, docs/performance.md):
// dropDuplicatesWithinWatermark on a string id with a 10-second delay, 4
// partitions.
const BenchQuery = "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\nshuffle_partitions: 4\n"

// BenchSteps is the speed comparison's steps file: rows rows in nsteps
// lines, 5% duplicates (half of them in the same batch, half one batch
// later, inside the delay). BenchmarkExecVsSpark runs it through dedupsim
// and Spark; execpipe's BenchmarkExec through the exec pipeline.
func BenchSteps(rows, nsteps int) []byte {
	per := rows / nsteps
	b := make([]byte, 0, rows*60)
	n := 0
	for s := range nsteps {
		b = append(b, `{"rows": [`...)
		for i := range per {
			if i > 0 {
				b = append(b, ',')
			}
			id := n
			switch {
			case i%40 == 1 && n > 0: // a copy in the same batch
				id = n - 1
			case i%40 == 2 && s > 0: // a copy of the previous batch, within the delay
				id = n - per
			}
			// 5 s of event time per step, 100 µs apart: the watermark
			// trails by the delay, so copies a batch apart are caught.
			ts := 1_700_000_000_000_000 + int64(n)*100
			b = append(b, `{"id":"evt-`...)
			b = appendPadded(b, int64(id), 7)
			b = append(b, `","ts":`...)
			b = strconv.AppendInt(b, ts/1_000_000, 10)
			b = append(b, '.')
			b = appendPadded(b, ts%1_000_000, 6)
			b = append(b, `,"amount":`...)
			b = strconv.AppendInt(b, int64(n%997), 10)
			b = append(b, '}')
			n++
		}
		b = append(b, "]}\n"...)
	}
	return b
}

// appendPadded appends v (>= 0) in decimal, zero-padded to width digits.
func appendPadded(b []byte, v int64, width int) []byte {
	var d [20]byte
	s := strconv.AppendInt(d[:0], v, 10)
	for range width - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}
