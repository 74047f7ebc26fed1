package query

import "github.com/dedupsim/dedupsim/engine/sparkver"

// StateKeyOrder is the order of the key columns in the dedup's state key
// (and so in the state schema Spark compares on restart) with no Spark
// version given, and on Spark 4.0 to 4.2: the names after Spark's
// `colNames.toSet.toSeq` in Dataset.groupColsFromDropDuplicates (kept for
// checkpoint compatibility, SPARK-31990). Scala 2.13's small immutable
// sets (Set1..Set4) keep insertion order, so up to four names the order is
// the call order; from five names on the set is a HashSet (a CHAMP trie)
// and the order is its iteration order, which depends only on the names'
// hashes (spark-semantics.md §13.1). dropDuplicates() with no names passes
// every column through the same path.
//
// Other lines order otherwise (sparkver.KeyOrder, spark-semantics.md §17):
// Spark 3.5 is built on Scala 2.12, whose HashSet iterates a node's
// entries and sub-tries interleaved; Spark 4.3 keeps the call order when
// spark.sql.dropDuplicates.deterministicKeyOrder.enabled is true.
func StateKeyOrder(names []string) []string {
	return sparkver.HashOrder(names, false)
}
