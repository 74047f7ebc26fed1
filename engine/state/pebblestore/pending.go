package pebblestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A version's changes are not kept in a Pebble batch. They are the
// changelog records the store appends anyway (state.AppendPut,
// AppendRemove), plus pendingIndex, a hash table from each changed key to
// its latest record, which gives read-your-writes. Commit sorts the changed
// keys once and, when there are many (Options.IngestMinKeys), writes them
// as one sstable and ingests it: the keys never go through a skiplist, not a
// batch's and not the memtable's, and the memtable is never flushed. An
// indexed pebble.Batch costs a skiplist insert per key and the memtable a
// second one, and the flush then writes the same keys out again: three
// passes of which an ingest keeps one (issue 15's profile: Batch.Set, the
// memtable apply and the flush were half of a 1 M-key run). Fewer than
// Options.IngestMinKeys changes go into the memtable through a plain
// batch: an ingest has a fixed cost (a file, a manifest edit).

// pendingIndex maps each key changed in a version to its latest record in
// the version's records. A slot holds the offset of that record plus one
// (0: empty) and 30 bits of the key's hash, which reject most probes of
// another key without reading the record, whether the key was in the
// database before the version (inDB), and whether its copy there is in a
// bucket the commit excises (excised, layout.go): a key Put and removed again within
// the version (under a watermark, the rows that are already expired when
// their batch ends) then leaves nothing to write, not even a tombstone.
// Linear probing, at most half full.
type pendingIndex struct {
	slots []pendingSlot
	n     int
}

type pendingSlot struct {
	off1 uint32 // the record's offset + 1; 0: empty slot
	tag  uint32 // the hash's low 30 bits, inDB in the top bit, excised below it
}

const (
	inDBBit    = 1 << 31
	excisedBit = 1 << 30
	slotFlags  = inDBBit | excisedBit
)

func hashTag(h uint64) uint32 { return uint32(h) &^ slotFlags }

func (s pendingSlot) inDB() bool { return s.tag&inDBBit != 0 }

// flags are the slot's inDB and excised bits, as changeInDB and
// changeExcised.
func (s pendingSlot) flags() uint8 { return uint8(s.tag >> 30) }

const (
	changeExcised = 1 // excisedBit >> 30
	changeInDB    = 2 // inDBBit >> 30
)

// dropped reports a key removed within the version that the database never
// held: the commit writes nothing for it.
func (s pendingSlot) dropped(recs []byte) bool {
	if s.inDB() {
		return false
	}
	_, _, removed := recordAt(recs, s.off1-1)
	return removed
}

const minPendingSlots = 1 << 10

// recordAt decodes the record at off of recs, which the store wrote (or
// state.WalkRecords validated): key, and value unless it is a remove.
func recordAt(recs []byte, off uint32) (key, value []byte, removed bool) {
	kl := binary.BigEndian.Uint32(recs[off:])
	ks := off + 4
	key = recs[ks : ks+kl : ks+kl]
	vl := int32(binary.BigEndian.Uint32(recs[ks+kl:]))
	if vl < 0 {
		return key, nil, true
	}
	vs := ks + kl + 4
	return key, recs[vs : vs+uint32(vl) : vs+uint32(vl)], false
}

// find returns the slot of key (hash h): its record's offset and whether it
// is there; otherwise the empty slot where it would go.
func (p *pendingIndex) find(recs, key []byte, h uint64) (int, bool) {
	if len(p.slots) == 0 {
		return -1, false
	}
	mask := len(p.slots) - 1
	tag := hashTag(h)
	for i := int(h>>32) & mask; ; i = (i + 1) & mask {
		s := p.slots[i]
		if s.off1 == 0 {
			return i, false
		}
		if s.tag&^slotFlags == tag {
			if k, _, _ := recordAt(recs, s.off1-1); bytes.Equal(k, key) {
				return i, true
			}
		}
	}
}

// lookup returns key's latest record in recs.
func (p *pendingIndex) lookup(recs, key []byte, h uint64) (value []byte, removed, found bool) {
	i, ok := p.find(recs, key, h)
	if !ok {
		return nil, false, false
	}
	_, value, removed = recordAt(recs, p.slots[i].off1-1)
	return value, removed, true
}

// errTooLarge: offsets into a version's records are 32 bits.
var errTooLarge = errors.New("the changes of one version exceed 4 GiB")

// set makes the record at off key's latest, recs ending with that record.
// inDB says whether the database holds key; only the first change of a key
// in the version records it (later ones take it from the slot: the
// database does not change during a version). It returns whether the
// database holds key, from the slot.
func (p *pendingIndex) set(recs, key []byte, h uint64, off int, inDB bool) (bool, error) {
	return p.setExcised(recs, key, h, off, inDB, false)
}

// setExcised is set, and sets the slot's excised bit if excised (see
// pendingSlot).
func (p *pendingIndex) setExcised(recs, key []byte, h uint64, off int, inDB, excised bool) (bool, error) {
	if len(recs) >= math.MaxUint32 { // recordAt's arithmetic is 32-bit
		return false, errTooLarge
	}
	if 2*(p.n+1) > len(p.slots) {
		p.grow(recs)
	}
	i, ok := p.find(recs, key, h)
	tag := hashTag(h)
	if ok {
		tag = p.slots[i].tag
	} else {
		p.n++
		if inDB {
			tag |= inDBBit
		}
	}
	if excised {
		tag |= excisedBit
	}
	p.slots[i] = pendingSlot{off1: uint32(off) + 1, tag: tag}
	return tag&inDBBit != 0, nil
}

func (p *pendingIndex) grow(recs []byte) {
	old := p.slots
	p.slots = make([]pendingSlot, max(2*len(old), minPendingSlots))
	mask := len(p.slots) - 1
	for _, s := range old {
		if s.off1 == 0 {
			continue
		}
		k, _, _ := recordAt(recs, s.off1-1)
		h := keyHash(k)
		i := int(h>>32) & mask
		for p.slots[i].off1 != 0 {
			i = (i + 1) & mask
		}
		p.slots[i] = s
	}
}

// reset empties the index for the next version. A slot array far larger
// than this version needed (after one big version) is dropped rather than
// kept: every sorted, filter rebuild and reset walks all of its slots.
func (p *pendingIndex) reset() {
	if len(p.slots) > 4*minPendingSlots && 8*p.n < len(p.slots) {
		p.slots = nil
	} else {
		clear(p.slots)
	}
	p.n = 0
}

// sorted returns the offsets of the latest records of the changed keys,
// in key order: a radix sort on each key's first eight bytes, read as a
// big-endian number (zero-padded), then a comparison sort of every run of
// keys that share them. It is linear in the keys, where a comparison sort
// of this many keys was a tenth of a watermark run (issue 15's profile).
//
// Keys removed within the version that the database never held are left
// out (pendingSlot.dropped): there is nothing to write or visit.
func (p *pendingIndex) sorted(recs []byte) []uint32 {
	return p.sortedWith(recs, &sortScratch{}, false)
}

// sortScratch holds the slices of a sort for the next one: a commit's
// sort reuses the last commit's (workDB.sortScratch), which spares the
// collector a fifth of the bytes a watermark run allocates.
type sortScratch struct {
	es, tmp []prefixed
	offs    []uint32
	flags   []uint8 // of each of offs: changeInDB, changeExcised
}

// sortedWith is sorted in sc's slices; the result is valid until the next
// sort in sc. dropExcised leaves out the keys removed whose copy in the
// database is in a bucket the commit excises (the excised bit): a
// laid-out commit writes nothing for them (layout.go), and under a
// watermark they are half of the changes.
func (p *pendingIndex) sortedWith(recs []byte, sc *sortScratch, dropExcised bool) []uint32 {
	if cap(sc.es) > 4*(p.n+minPendingSlots) { // after one big commit: drop
		*sc = sortScratch{}
	}
	es := sc.es[:0]
	if cap(es) < p.n {
		es = make([]prefixed, 0, p.n)
	}
	for _, s := range p.slots {
		if s.off1 == 0 || s.dropped(recs) {
			continue
		}
		k, _, removed := recordAt(recs, s.off1-1)
		if dropExcised && removed && s.tag&excisedBit != 0 {
			continue
		}
		var b [8]byte
		copy(b[:], k)
		es = append(es, prefixed{binary.BigEndian.Uint64(b[:]), s.off1 - 1, s.flags()})
	}
	if cap(sc.tmp) < len(es) {
		sc.tmp = make([]prefixed, len(es))
	}
	es, sc.tmp = radixSort(es, sc.tmp[:len(es)])
	sc.es = es
	for i := 0; i < len(es); {
		j := i + 1
		for j < len(es) && es[j].prefix == es[i].prefix {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(es[i:j], func(a, b prefixed) int {
				ka, _, _ := recordAt(recs, a.off)
				kb, _, _ := recordAt(recs, b.off)
				return bytes.Compare(ka, kb)
			})
		}
		i = j
	}
	out := sc.offs[:0]
	if cap(out) < len(es) {
		out = make([]uint32, 0, len(es))
	}
	out = out[:len(es)]
	sc.offs = out
	if cap(sc.flags) < len(es) {
		sc.flags = make([]uint8, len(es))
	}
	sc.flags = sc.flags[:len(es)]
	for i, e := range es {
		out[i], sc.flags[i] = e.off, e.flags
	}
	return out
}

// prefixed is a record's offset with its key's first eight bytes.
type prefixed struct {
	prefix uint64
	off    uint32
	flags  uint8
}

// radixSort sorts es by prefix, least significant byte first, skipping the
// bytes every entry shares (the high bytes of small numbers, a common
// type tag), with tmp (as long as es) as scratch; it returns the slice
// that holds the result, and the other.
func radixSort(es, tmp []prefixed) ([]prefixed, []prefixed) {
	if len(es) < 2 {
		return es, tmp
	}
	for shift := uint(0); shift < 64; shift += 8 {
		var count [257]int
		for _, e := range es {
			count[int(byte(e.prefix>>shift))+1]++
		}
		if count[int(byte(es[0].prefix>>shift))+1] == len(es) {
			continue // one digit for all: the pass would change nothing
		}
		for i := 1; i < len(count); i++ {
			count[i] += count[i-1]
		}
		for _, e := range es {
			d := byte(e.prefix >> shift)
			tmp[count[d]] = e
			count[d]++
		}
		es, tmp = tmp, es
	}
	return es, tmp
}

// applyPending writes the changed keys of idx (records in recs) to the
// working database: an ingested sstable when there are
// Options.IngestMinKeys or more, a plain batch otherwise. A database with
// a layout by expiry is written by applyLaid (layout.go), which reports
// laid; ev: the version's evictions (nil when replaying a changelog).
func (w *workDB) applyPending(recs []byte, idx *pendingIndex, ev *commitEvictions) (laid bool, err error) {
	if w.laid || w.width > 0 {
		return true, w.applyLaid(recs, idx, ev)
	}
	return false, w.applyPlain(recs, idx)
}

func (w *workDB) applyPlain(recs []byte, idx *pendingIndex) error {
	if idx.n == 0 {
		return nil
	}
	offs := idx.sortedWith(recs, &w.sortScratch, false)
	if len(offs) == 0 {
		return nil
	}
	if len(offs) < w.p.opts.IngestMinKeys {
		b := w.db.NewBatch()
		defer b.Close()
		err := eachChange(recs, offs, func(k, v []byte, removed bool) error {
			if removed {
				return b.Delete(k, nil)
			}
			return b.Set(k, v, nil)
		})
		if err != nil {
			return err
		}
		return w.db.Apply(b, pebble.NoSync)
	}
	// A fresh name per ingest: should Pebble link a file in and fail to
	// remove the original (it only logs that), the next ingest must not
	// truncate a file the database uses.
	w.ingests++
	path := w.fs.PathJoin(w.dir, "ingest-"+strconv.FormatInt(w.ingests, 10)+".sst")
	if err := w.writeTable(path, func(fn func(k, v []byte, removed bool) error) error {
		return eachChange(recs, offs, fn)
	}); err != nil {
		_ = w.fs.Remove(path)
		return err
	}
	if err := w.db.Ingest(context.Background(), []string{path}); err != nil {
		_ = w.fs.Remove(path)
		return fmt.Errorf("ingest: %w", err)
	}
	return nil
}

// blockSize is the data block size of every sstable, ingested or written
// by a compaction. Pebble's default, 4 KiB, suits reads from disk; these
// tables are written whole at every commit and mostly scanned or probed
// through the key filter, and at 16-32 KiB the 1 M-key benchmark spent a
// seventh less CPU (writing fewer, larger blocks; no slower lookups).
const blockSize = 32 << 10

// ingestTableFormat is the format of the sstables a commit writes and
// ingests: row-oriented blocks rather than the database's columnar format
// (w.db.TableFormat()), because these tables are written at every commit,
// and in four CPU profiles each of the 1 M-key
// dropDuplicatesWithinWatermark benchmark writeTable took 0.49-0.56 s with
// columnar blocks, 0.31-0.48 s with these. A database ingests any format
// from its FormatMajorVersion's MinTableFormat to MaxTableFormat (v1 to v7
// at FormatNewest); compactions still write the database's own.
const ingestTableFormat = sstable.TableFormatPebblev4

// writeTable writes the keys each gives (in key order) as an sstable at
// path, with a Bloom filter as level 0's tables have.
func (w *workDB) writeTable(path string, each func(fn func(k, v []byte, removed bool) error) error) error {
	f, err := w.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	wo := sstable.WriterOptions{
		TableFormat:  ingestTableFormat,
		FilterPolicy: bloom.FilterPolicy(10),
		BlockSize:    blockSize,
	}
	tw := sstable.NewWriter(objstorageprovider.NewFileWritable(f), wo)
	err = each(func(k, v []byte, removed bool) error {
		if removed {
			return tw.Delete(k)
		}
		return tw.Set(k, v)
	})
	if err != nil {
		_ = tw.Close()
		return err
	}
	return tw.Close()
}

// eachChange calls fn with the Pebble key (see appendKey; valid until the
// next call), value and kind of each record at offs, in order.
func eachChange(recs []byte, offs []uint32, fn func(k, v []byte, removed bool) error) error {
	var kbuf []byte
	for _, off := range offs {
		k, v, removed := recordAt(recs, off)
		kbuf = appendKey(kbuf, k)
		if err := fn(kbuf, v, removed); err != nil {
			return err
		}
	}
	return nil
}
