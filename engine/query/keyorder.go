package query

import (
	"sort"
	"unicode/utf16"
)

// StateKeyOrder is the order of the key columns in the dedup's state key
// (and so in the state schema Spark compares on restart): the names after
// Spark's `colNames.toSet.toSeq` in Dataset.groupColsFromDropDuplicates
// (kept for checkpoint compatibility, SPARK-31990). Scala 2.13's small
// immutable sets (Set1..Set4) keep insertion order, so up to four names
// the order is the call order; from five names on the set is a HashSet
// (a CHAMP trie) and the order is its iteration order, which depends only
// on the names' hashes (spark-semantics.md §13.1). dropDuplicates() with
// no names passes every column through the same path.
//
// Spark 3.5 is built on Scala 2.12, whose HashSet iterates a node's
// entries and sub-tries interleaved rather than entries first: for five or
// more names its order can differ from this one (4.x).
func StateKeyOrder(names []string) []string {
	if len(names) <= 4 {
		return append([]string(nil), names...)
	}
	root := &champNode{}
	for _, n := range names {
		root.insert(n, improve(javaHash(n)), 0)
	}
	out := make([]string, 0, len(names))
	return root.walk(out)
}

// javaHash is java.lang.String.hashCode over UTF-16 code units.
func javaHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			a, b := utf16.EncodeRune(r)
			h = 31*h + int32(a)
			h = 31*h + int32(b)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// improve is scala.collection.Hashing.improve, the bit spreader Scala's
// HashSet applies to an element's hashCode.
func improve(hcode int32) uint32 {
	h := hcode + ^(hcode << 9)
	h ^= int32(uint32(h) >> 14)
	h += h << 4
	return uint32(h ^ int32(uint32(h)>>10))
}

// champNode is one node of Scala 2.13's BitmapIndexedSetNode: entries and
// sub-nodes, each at the 5-bit slot of the hash at this depth. Iteration
// (ChampBaseIterator) yields a node's entries in slot order, then walks
// its sub-nodes in slot order, depth first.
type champNode struct {
	data  map[uint32]champEntry
	nodes map[uint32]*champNode
	// collision holds names whose whole 32-bit hashes are equal (Scala's
	// HashCollisionSetNode, at the bottom of the trie), in insertion order.
	collision []string
}

type champEntry struct {
	name string
	hash uint32
}

const champBits = 5

func (n *champNode) insert(name string, hash uint32, shift uint) {
	if shift >= 32 {
		n.collision = append(n.collision, name)
		return
	}
	slot := (hash >> shift) & (1<<champBits - 1)
	if sub, ok := n.nodes[slot]; ok {
		sub.insert(name, hash, shift+champBits)
		return
	}
	if e, ok := n.data[slot]; ok {
		if e.name == name {
			return
		}
		// Two entries in one slot: both move into a new sub-node.
		delete(n.data, slot)
		sub := &champNode{}
		sub.insert(e.name, e.hash, shift+champBits)
		sub.insert(name, hash, shift+champBits)
		if n.nodes == nil {
			n.nodes = map[uint32]*champNode{}
		}
		n.nodes[slot] = sub
		return
	}
	if n.data == nil {
		n.data = map[uint32]champEntry{}
	}
	n.data[slot] = champEntry{name: name, hash: hash}
}

func (n *champNode) walk(out []string) []string {
	out = append(out, n.collision...)
	for _, s := range sortedSlots(n.data) {
		out = append(out, n.data[s].name)
	}
	for _, s := range sortedSlots(n.nodes) {
		out = n.nodes[s].walk(out)
	}
	return out
}

func sortedSlots[V any](m map[uint32]V) []uint32 {
	s := make([]uint32, 0, len(m))
	for k := range m {
		s = append(s, k)
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}
