package state

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzRecordFile: the record-file reader (trailer, then records) takes any
// bytes; it accepts exactly the files whose framing, checksum and stamp
// are right, and refuses the rest with a *CorruptFileError naming the
// file. An accepted file is re-encoded byte for byte.
func FuzzRecordFile(f *testing.F) {
	id := ID{Operator: 0, Partition: 3}
	valid := AppendEnd(AppendRemove(AppendPut(nil, []byte("key"), []byte("value")), []byte("gone")))
	f.Add(AppendTrailer(bytes.Clone(valid), KindDelta, id, 7), false)
	f.Add(AppendStampedTrailer(AppendEnd(AppendPut(nil, []byte("a"), nil)), KindSnapshot, id, 7, BatchStamp{OffsetsCRC: 9, NextWatermarkMs: 5}), true)
	f.Add(AppendTrailer(bytes.Clone(valid), KindDelta, id, 6), false) // stamped for another version
	f.Add(valid, false)                                               // no trailer
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, data []byte, snapshot bool) {
		kind := KindDelta
		if snapshot {
			kind = KindSnapshot
		}
		const path = "state/0/3/7.delta"
		body, err := CheckTrailer(path, data, kind, id, 7)
		var m map[string][]byte
		if err == nil {
			m = map[string][]byte{}
			var size int64
			err = applyFile(path, body, snapshot, m, &size)
		}
		if err != nil {
			var cf *CorruptFileError
			if !errors.As(err, &cf) || cf.Path != path || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		st, err := ReadBatchStamp(path, data, kind, id, 7)
		if err != nil {
			t.Fatalf("trailer accepted once, refused again: %v", err)
		}
		// Re-encode: the records as they were walked, the end, the trailer.
		var again []byte
		WalkRecords(path, body, func(k, v []byte) error { again = AppendPut(again, k, v); return nil },
			func(k []byte) error { again = AppendRemove(again, k); return nil })
		again = AppendStampedTrailer(AppendEnd(again), kind, id, 7, st)
		if !bytes.Equal(again, data) {
			t.Fatalf("accepted file does not re-encode to itself")
		}
	})
}
