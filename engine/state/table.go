package state

import (
	"bytes"
	"cmp"
	"math/bits"
	"slices"
	"unsafe"
)

// table is the memory provider's map from key to value: an open-addressing
// hash table whose slots hold no pointers, over one byte arena that holds
// every key and value. A Go map[string][]byte costs two allocations per
// insert (the key string and the value) and gives the garbage collector
// three pointers per entry to scan; at millions of keys that scanning,
// not the lookups, is what a batch pays for. Here an insert appends to the
// arena and the collector sees two objects whatever the size.
//
// Entries are immutable: a Put of a key that exists appends a new copy of
// key and value and points the slot at it, so a value handed out by get,
// and the arena offsets the undo log and the expiry index keep, stay valid
// until compact, which the store calls only between batches. The dead
// bytes this leaves are reclaimed by compact once they outweigh the live
// ones.
//
// Linear probing with tombstones: a delete marks its slot, so nothing
// moves while Range or eviction walks the table, and the table is rebuilt
// once live entries plus tombstones pass 3/4 of the slots.
type table struct {
	slots []tslot // a power of two long, or empty
	shift uint    // 64 - log2(len(slots)): a slot number is the top bits of a mixed hash
	n     int     // live entries
	dead  int     // tombstones
	arena []byte  // arena[0] is unused, so that off 0 means an empty slot
	live  int64   // Σ len(key)+len(value) over the live entries
}

// tslot is one slot: empty (off 0), a tombstone (off 0, klen tombstone) or
// an entry whose key is arena[off:off+klen] and value the vlen bytes after.
type tslot struct {
	hash       uint64 // keyHash of the key
	off        uint64
	klen, vlen uint32
}

const tombstone = ^uint32(0)

// keyHash is the table's hash of a key: 64-bit FNV-1a, then multiplied by
// 2^64/φ (Fibonacci hashing), because FNV-1a's high bits are weak for short
// keys (a difference in the last byte reaches only bits 0-48) and the table
// uses the high bits: a slot's home is the hash's top bits, and snapshot
// entries are in hash order (see inSnapshotOrder), so that a table's slots,
// read from an empty slot on, are already in snapshot order up to the
// shuffle of linear probing. The order depends only on the keys.
func keyHash(key []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range key {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h * 0x9E3779B97F4A7C15
}

func newTable(capHint int) *table {
	t := &table{arena: make([]byte, 1, 1+16*capHint)}
	t.resize(capHint)
	return t
}

// resize rebuilds the slots for at least want live entries, dropping the
// tombstones.
func (t *table) resize(want int) {
	size := 8
	for size*3/4 < want+1 {
		size *= 2
	}
	old := t.slots
	t.slots = make([]tslot, size)
	t.shift = uint(64 - bits.TrailingZeros(uint(size)))
	t.dead = 0
	mask := uint64(size - 1)
	for _, s := range old {
		if s.off == 0 {
			continue
		}
		i := t.home(s.hash)
		for t.slots[i].off != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// home is the first slot probed for hash: its top bits (keyHash is mixed).
func (t *table) home(hash uint64) uint64 { return hash >> t.shift }

func (t *table) key(s *tslot) []byte {
	return t.arena[s.off : s.off+uint64(s.klen) : s.off+uint64(s.klen)]
}

func (t *table) value(s *tslot) []byte {
	if s.vlen == 0 {
		return nil
	}
	at := s.off + uint64(s.klen)
	return t.arena[at : at+uint64(s.vlen) : at+uint64(s.vlen)]
}

// find returns the slot holding key, or -1 and the slot an insert of key
// should use (the first tombstone on the probe path, else the empty slot
// that ended it).
func (t *table) find(key []byte, hash uint64) (found, free int) {
	mask := uint64(len(t.slots) - 1)
	free = -1
	for i := t.home(hash); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.off == 0 {
			if s.klen != tombstone {
				if free < 0 {
					free = int(i)
				}
				return -1, free
			}
			if free < 0 {
				free = int(i)
			}
			continue
		}
		if s.hash == hash && int(s.klen) == len(key) && bytes.Equal(t.key(s), key) {
			return int(i), -1
		}
	}
}

// hashHi is the top half of a key's hash, which the memory store keeps in
// its expiry items (Item.Vlen) so that eviction finds an item's slot
// without hashing the key again: a slot's home is the hash's top bits.
func hashHi(hash uint64) uint32 { return uint32(hash >> 32) }

// findEntry returns the slot holding the entry at arena offset off (offs[i]
// is slot i's offset when offs is set, else the slot's own), or -1 if no
// slot holds it (the key deleted or overwritten since); hi is hashHi of
// the entry's key. It probes from the key's home for that offset, as find
// does for the key, without reading or hashing the key (offsets are unique
// to an entry); a table of more than 2^32 slots, whose home needs more than
// hi, falls back to find on key.
func (t *table) findEntry(hi uint32, off uint64, offs []uint64, key []byte) int {
	if t.shift < 32 {
		i, _ := t.find(key, keyHash(key))
		if i >= 0 && (offs == nil && t.slots[i].off == off || offs != nil && offs[i] == off) {
			return i
		}
		return -1
	}
	mask := uint64(len(t.slots) - 1)
	for i := uint64(hi) >> (t.shift - 32); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.off == 0 {
			if s.klen != tombstone {
				return -1
			}
			continue
		}
		if offs == nil && s.off == off || offs != nil && offs[i] == off {
			return int(i)
		}
	}
}

// prefetchEntry asks the CPU for the home slot of a key whose hash has top
// half hi and for the arena bytes at off (see findEntry), without waiting.
func (t *table) prefetchEntry(hi uint32, off uint64) {
	if t.shift >= 32 {
		prefetch(uintptr(unsafe.Pointer(&t.slots[uint64(hi)>>(t.shift-32)])))
	}
	if off < uint64(len(t.arena)) {
		prefetch(uintptr(unsafe.Pointer(&t.arena[off])))
	}
}

// get returns the value of key; the slice aliases the arena.
func (t *table) get(key []byte, hash uint64) ([]byte, bool) {
	i, _ := t.find(key, hash)
	if i < 0 {
		return nil, false
	}
	return t.value(&t.slots[i]), true
}

// appendEntry copies key and value to the arena and returns the slot for
// them.
func (t *table) appendEntry(key, value []byte, hash uint64) tslot {
	s := tslot{hash: hash, off: uint64(len(t.arena)), klen: uint32(checkLen(len(key))), vlen: uint32(checkLen(len(value)))}
	t.arena = append(append(t.arena, key...), value...)
	if len(key)+len(value) == 0 {
		// One byte of padding, so that every entry has an offset of its
		// own (the undo log and the expiry index tell entries apart by it).
		t.arena = append(t.arena, 0)
	}
	return s
}

// put stores value under key and returns the entry it replaced (off 0 if
// none) and the new one.
func (t *table) put(key, value []byte, hash uint64) (old, entry tslot) {
	i, free := t.find(key, hash)
	entry = t.appendEntry(key, value, hash)
	if i >= 0 {
		old = t.slots[i]
		t.slots[i] = entry
		t.live += int64(entry.vlen) - int64(old.vlen)
		return old, entry
	}
	t.insertAt(free, entry)
	return tslot{}, entry
}

// insertAt puts s, whose key is absent, into slot free as find returned it.
func (t *table) insertAt(free int, s tslot) {
	if t.slots[free].klen == tombstone {
		t.dead--
	}
	t.slots[free] = s
	t.n++
	t.live += int64(s.klen) + int64(s.vlen)
	if t.n+t.dead > len(t.slots)*3/4 {
		t.resize(t.n)
	}
}

// restore points key's slot at entry e (an entry of the arena for the same
// key), inserting it if the key is absent: the undo of a change.
func (t *table) restore(e tslot) {
	key := t.key(&e)
	i, free := t.find(key, e.hash)
	if i >= 0 {
		t.live += int64(e.vlen) - int64(t.slots[i].vlen)
		t.slots[i] = e
		return
	}
	t.insertAt(free, e)
}

// removeAt deletes the entry in slot i.
func (t *table) removeAt(i int) {
	s := &t.slots[i]
	t.live -= int64(s.klen) + int64(s.vlen)
	*s = tslot{klen: tombstone}
	t.n--
	t.dead++
}

// garbage is the number of arena bytes no live entry uses.
func (t *table) garbage() int64 { return int64(len(t.arena)-1) - t.live }

// compact copies the live entries to a new arena, in slot order, and
// returns the offset each slot's entry had before (0 for empty slots), for
// whoever holds offsets to translate them. Every arena offset held outside
// the table (undo log, expiry index) is invalid afterwards; slices handed
// out before stay readable (they keep the old arena alive) but no longer
// alias the table.
func (t *table) compact() (oldOffs []uint64) {
	arena := make([]byte, 1, 1+t.live+t.live/4)
	oldOffs = make([]uint64, len(t.slots))
	for i := range t.slots {
		s := &t.slots[i]
		if s.off == 0 {
			continue
		}
		oldOffs[i] = s.off
		end := s.off + uint64(s.klen) + uint64(s.vlen)
		off := uint64(len(arena))
		arena = append(arena, t.arena[s.off:end]...)
		if end == s.off {
			arena = append(arena, 0) // see appendEntry
		}
		s.off = off
	}
	t.arena = arena
	return oldOffs
}

// inSnapshotOrder calls put for every live slot in snapshot order: by key
// hash, then by key. A slot's home is its hash's top bits, and linear
// probing never places an entry past an empty slot, so the entries between
// two empty slots (a run; a tombstone does not end one) are homed inside
// it, and one run's hashes are all below the next run's: only a run's own
// entries need sorting, and runs are short at the table's load (at most
// 3/4). The run that wraps past the last slot goes on at the first slots:
// its entries there (homed above their slot) are held back and sorted with
// the last run. Nothing is allocated per entry (the order of every slot,
// built and sorted, was 20 bytes a key and most of a snapshot's time at
// 10 M keys), and the arena is prefetched encodeAhead slots ahead: it is in
// insertion order, so hash order visits it at random.
func (t *table) inSnapshotOrder(put func(s *tslot)) {
	var run, wrapped []int32
	byHashKey := func(a, b int32) int {
		sa, sb := &t.slots[a], &t.slots[b]
		if sa.hash != sb.hash {
			return cmp.Compare(sa.hash, sb.hash)
		}
		return bytes.Compare(t.key(sa), t.key(sb))
	}
	flush := func() {
		if len(run) > 1 {
			slices.SortFunc(run, byHashKey)
		}
		for _, i := range run {
			put(&t.slots[i])
		}
		run = run[:0]
	}
	inWrap := true // the first slots, up to the first empty one
	for i := range t.slots {
		if j := i + encodeAhead; j < len(t.slots) && t.slots[j].off != 0 {
			prefetch(uintptr(unsafe.Pointer(&t.arena[t.slots[j].off])))
		}
		s := &t.slots[i]
		if s.off == 0 {
			if s.klen != tombstone {
				inWrap = false
				flush()
			}
			continue
		}
		if inWrap && t.home(s.hash) > uint64(i) {
			wrapped = append(wrapped, int32(i))
			continue
		}
		run = append(run, int32(i))
	}
	run = append(run, wrapped...)
	flush()
}

// encodeAhead is how many slots ahead inSnapshotOrder prefetches: enough
// misses in flight to cover a memory latency at a copy's cost (measured
// with BenchmarkTableEncode).
const encodeAhead = 16

// encode writes the table as the records of a snapshot file (end marker
// included, no trailer).
func (t *table) encode() []byte {
	b := make([]byte, 0, t.live+8*int64(t.n)+4+int64(TrailerLen))
	t.inSnapshotOrder(func(s *tslot) { b = AppendPut(b, t.key(s), t.value(s)) })
	return AppendEnd(b)
}

// apply applies the records of a delta (snapshot=false) or snapshot file;
// see applyFile. On error the table holds a prefix of the changes.
func (t *table) apply(path string, data []byte, snapshot bool) error {
	put := func(key, value []byte) error {
		t.put(key, value, keyHash(key))
		return nil
	}
	remove := func(key []byte) error {
		if i, _ := t.find(key, keyHash(key)); i >= 0 {
			t.removeAt(i)
		}
		return nil
	}
	if snapshot {
		remove = nil
	}
	return WalkRecords(path, data, put, remove)
}
