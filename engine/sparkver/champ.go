package sparkver

import (
	"sort"
	"unicode/utf16"
)

// HashOrder is the iteration order of Scala's immutable Set/Map of the
// given names (strings, hashed by java.lang.String.hashCode spread by
// scala.collection.Hashing.improve). Up to four names Scala builds a
// Set1..Set4 / Map1..Map4, which keep insertion order; from five names on
// a hash trie, whose order depends only on the hashes.
//
// Scala 2.13 (Spark 4.x) iterates a CHAMP node (BitmapIndexedSetNode /
// BitmapIndexedMapNode, ChampBaseIterator) entries first, in slot order,
// then its sub-nodes in slot order. Scala 2.12 (Spark 3.5) iterates a
// HashTrieSet / HashTrieMap node's elems array (TrieIterator), in which
// leaves and sub-tries sit interleaved by slot.
//
// spark-semantics.md §13.1 and the version table (§17) rest on this:
// the dedup's state key order before Spark 4.3 (Dataset.
// groupColsFromDropDuplicates' colNames.toSet.toSeq) and the order of the
// conf map Spark writes in offsets/N (OffsetSeqMetadata's
// relevantSQLConfs ... .toMap).
func HashOrder(names []string, scala212 bool) []string {
	if len(names) <= 4 {
		return append([]string(nil), names...)
	}
	root := &champNode{}
	for _, n := range names {
		root.insert(n, improve(javaHash(n)), 0)
	}
	out := make([]string, 0, len(names))
	if scala212 {
		return root.walkInterleaved(out)
	}
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

// improve is scala.collection.Hashing.improve (2.13) and
// HashSet/HashMap.improve (2.12): the same bit spreader.
func improve(hcode int32) uint32 {
	h := hcode + ^(hcode << 9)
	h ^= int32(uint32(h) >> 14)
	h += h << 4
	return uint32(h ^ int32(uint32(h)>>10))
}

// champNode is one node of the trie: entries and sub-nodes, each at the
// 5-bit slot of the hash at this depth.
type champNode struct {
	data  map[uint32]champEntry
	nodes map[uint32]*champNode
	// collision holds names whose whole 32-bit hashes are equal (a
	// collision node at the bottom of the trie), in insertion order.
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

// walk is Scala 2.13's order: a node's entries, then its sub-nodes.
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

// walkInterleaved is Scala 2.12's order: every slot in turn, a leaf or a
// whole sub-trie.
func (n *champNode) walkInterleaved(out []string) []string {
	out = append(out, n.collision...)
	for s := uint32(0); s < 1<<champBits; s++ {
		if e, ok := n.data[s]; ok {
			out = append(out, e.name)
		} else if sub, ok := n.nodes[s]; ok {
			out = sub.walkInterleaved(out)
		}
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
