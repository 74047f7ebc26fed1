// Package state is the versioned state store behind the dedup operator, after
// Spark's StateStore: one store per (operator, partition), opened at version
// V (the state after batch V-1), changed by the batch, and committed as
// version V+1. A failed batch aborts; a replayed batch N opens version N again
// and its commit overwrites whatever the failed attempt left behind.
package state

import "fmt"

// ID names one store: the stateful operator's id and the partition.
type ID struct {
	Operator  int
	Partition int
}

// Dir is the store's folder inside the checkpoint: state/<op>/<partition>.
func (id ID) Dir() string { return fmt.Sprintf("state/%d/%d", id.Operator, id.Partition) }

// Provider opens stores. One provider serves one query run; a crash discards
// it and a restart creates a new one over the same files.
type Provider interface {
	// Load opens the store id at version (0 = empty). It fails when that
	// version cannot be rebuilt from the files that are retained.
	Load(id ID, version int64) (Store, error)
	// Close releases the provider's resources.
	Close() error
}

// Store is one partition's state at one version, open for one batch.
// Keys and values are opaque bytes; the store owns neither after a call
// returns (implementations copy what they keep).
type Store interface {
	// Version is the version this store was loaded at.
	Version() int64
	Get(key []byte) (value []byte, ok bool, err error)
	Put(key, value []byte) error
	Delete(key []byte) error
	// Range calls fn for every entry until fn returns false. Deleting the
	// current key from inside fn is allowed (eviction does it).
	Range(fn func(key, value []byte) bool) error
	// Commit persists the changes as version Version()+1 and returns it.
	Commit() (int64, error)
	// Abort drops the changes; the store is unusable afterwards.
	Abort()
	// Metrics describes the store after the last change (after Commit:
	// the committed version).
	Metrics() Metrics
}

// Metrics are the store-level figures Spark reports per store instance and
// sums over partitions.
type Metrics struct {
	NumKeys         int64
	MemoryUsedBytes int64
	// Custom are provider metrics reported under customMetrics
	// (HDFS-backed: loadedMapCacheHitCount, loadedMapCacheMissCount,
	// stateOnCurrentVersionSizeBytes).
	Custom map[string]int64
}

// Expirer is implemented by stores that can index their entries by an
// expiry carried in the value, so that eviction visits only the entries
// that expire instead of scanning every key with Range.
//
// EvictUpTo deletes every entry whose expiry(value) is (e, true) with
// e <= limit, exactly as Delete would (the deletions are part of the
// batch's changes: committed by Commit, undone by Abort), and returns how
// many entries it removed. Entries for which expiry reports false are never
// removed. expiry must be a pure function of the value, and every call on
// stores of the same ID must pass the same function: an implementation may
// keep the index it built across versions. The deletions are made in
// ascending order of (expiry, key), so that the changes a store writes
// (the remove records of a delta) do not depend on the order the entries
// were indexed in.
type Expirer interface {
	EvictUpTo(limit int64, expiry func(value []byte) (int64, bool)) (int64, error)
}

// ExpiryLayout is implemented by stores that can place their entries by
// expiry, so that eviction drops whole groups of them instead of deleting
// entries one by one (the Pebble store's buckets, pebblestore/layout.go).
// span is about how far apart in expiry the entries the store holds at
// once lie (the dedup operator passes its watermark delay); expiry is the
// function every EvictUpTo on the store will be called with. It is a
// hint: called or not, before the version's first write, the store's
// contents, results and changes are the same; only its cost differs.
type ExpiryLayout interface {
	SetExpiryLayout(span int64, expiry func(value []byte) (int64, bool))
}

// Inserter is implemented by stores that can look a key up and insert it
// in one step, as the dedup operator does for every row: PutIfAbsent is
// Get followed, when the key is absent, by Put(key, value), and reports
// whether it stored value. It saves the second lookup of the key.
type Inserter interface {
	PutIfAbsent(key, value []byte) (stored bool, err error)
}

// Prefetcher is implemented by stores whose lookups wait on memory: Prefetch
// reads where a later lookup of key will start, changing nothing, so that
// a caller walking many keys can start the cache miss of a key a few keys
// ahead while it works on the current one (the memory store's hash slots
// are scattered over megabytes; a miss per row was a fifth of a simulated
// run). It is only a hint: calling it or not changes no result.
type Prefetcher interface {
	Prefetch(key []byte)
}
