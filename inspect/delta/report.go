package delta

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// Options say what Inspect checks.
type Options struct {
	// Keys are the key columns: with them the keys held more than once are
	// counted (none: rows only).
	Keys []string
	// Sample is how many duplicate keys are listed (default 10).
	Sample int
}

// Report is what inspect says about a Delta table.
type Report struct {
	Table            string   `json:"table"`
	Version          int64    `json:"version"`
	Checkpoint       int64    `json:"checkpointVersion"` // -1: none used
	HistoryFrom      int64    `json:"historyFromVersion"`
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty"`
	ColumnMapping    string   `json:"columnMapping,omitempty"`
	Columns          []string `json:"columns"`
	PartitionColumns []string `json:"partitionColumns,omitempty"`
	Files            int      `json:"files"`
	Bytes            int64    `json:"bytes"`
	Rows             int64    `json:"rows"`
	// With Keys: the keys held more than once (DuplicateKeys), the rows
	// beyond the first of each (ExtraRows), a sample, and the rows with a
	// null key column (nulls group together, as Spark's groupBy groups
	// them).
	Keys          []string    `json:"keys,omitempty"`
	DuplicateKeys int64       `json:"duplicateKeys"`
	ExtraRows     int64       `json:"extraRows"`
	NullKeyRows   int64       `json:"nullKeyRows"`
	Duplicates    []Duplicate `json:"duplicates,omitempty"`
	// Apps are the txn actions per app id, in order of first appearance.
	Apps       []App       `json:"apps,omitempty"`
	AppChanges []AppChange `json:"appChanges,omitempty"`
	// CheckpointTxns: each app id's latest version as the checkpoint holds
	// it (the history before HistoryFrom is gone).
	CheckpointTxns []Txn `json:"checkpointTxns,omitempty"`
	// Operations is the operation of every version of the history
	// (commitInfo.operation), OperationCounts their counts.
	Operations      []Operation    `json:"operations"`
	OperationCounts map[string]int `json:"operationCounts"`
	Warnings        []string       `json:"warnings,omitempty"`
}

// Duplicate is a key held more than once.
type Duplicate struct {
	Key   json.RawMessage `json:"key"` // a JSON array of the key's values
	Count int64           `json:"count"`
}

// App is one app id's txn actions: the table versions that hold them and
// the txnVersions (batch ids) they wrote.
type App struct {
	AppID        string `json:"appId"`
	Commits      int    `json:"commits"`
	FirstVersion int64  `json:"firstTableVersion"`
	LastVersion  int64  `json:"lastTableVersion"`
	FirstTxn     int64  `json:"firstTxnVersion"`
	LastTxn      int64  `json:"lastTxnVersion"`
	Gaps         []Gap  `json:"gaps,omitempty"`
	GapsOmitted  int    `json:"gapsOmitted,omitempty"`
}

// Gap is a run of txnVersions an app id skipped: After was written, Next
// is the one that followed.
type Gap struct {
	After int64 `json:"after"`
	Next  int64 `json:"next"`
}

// AppChange is a commit whose txn app id is not the previous txn commit's:
// a writer restarted with a new txnAppId. Replayed says the new id wrote a
// txnVersion the old one had already written (seed 000's replay
// duplicates: Delta skips a replayed batch only under the same app id).
type AppChange struct {
	TableVersion int64  `json:"tableVersion"`
	From         string `json:"from"`
	To           string `json:"to"`
	FromLastTxn  int64  `json:"fromLastTxnVersion"`
	ToFirstTxn   int64  `json:"toTxnVersion"`
	Replayed     bool   `json:"replayed"`
}

// Operation is one version's operation.
type Operation struct {
	Version   int64  `json:"version"`
	Operation string `json:"operation"`
}

// maxGaps bounds the gaps listed per app id.
const maxGaps = 20

// Inspect reads the Delta table in dir. Memory: the log's live file list,
// 8 bytes per row of the table (a hash of each row's key) and one row
// group's key values while a file is read, plus the keys held more than
// once; nothing else of the data is kept.
func Inspect(dir string, opt Options) (*Report, error) {
	if opt.Sample <= 0 {
		opt.Sample = 10
	}
	t, log, err := open(dir)
	if err != nil {
		return nil, err
	}
	defer t.root.Close()
	r := &Report{Table: dir, Version: log.Version, Checkpoint: log.Checkpoint, HistoryFrom: log.HistoryFrom,
		MinReaderVersion: log.Protocol.MinReaderVersion, MinWriterVersion: log.Protocol.MinWriterVersion,
		ReaderFeatures: log.Protocol.ReaderFeatures, PartitionColumns: log.Metadata.PartitionColumns,
		ColumnMapping: log.Metadata.Configuration["delta.columnMapping.mode"], Files: len(log.Files),
		CheckpointTxns: log.CheckpointTxns, Warnings: log.Warnings, OperationCounts: map[string]int{}}
	if err := t.checkReadable(log); err != nil {
		return nil, err
	}
	fields, err := Schema(log.Metadata)
	if err != nil {
		return nil, t.errf("_delta_log", "%v", err)
	}
	for _, f := range fields {
		r.Columns = append(r.Columns, f.Name+" "+f.TypeName())
	}
	for _, f := range log.Files {
		r.Bytes += f.Size
	}
	history(r, log)
	cols := []keyColumn{}
	if len(opt.Keys) > 0 {
		if cols, err = keyColumns(log, opt.Keys); err != nil {
			return nil, &KeyError{err}
		}
		for _, c := range cols {
			r.Keys = append(r.Keys, c.Name)
		}
	}
	if err := t.keys(r, log, cols, opt.Sample); err != nil {
		return nil, err
	}
	return r, nil
}

// KeyError is a --keys value the table cannot answer (no such column, a
// nested type): bad input.
type KeyError struct{ Err error }

func (e *KeyError) Error() string { return e.Err.Error() }
func (e *KeyError) Unwrap() error { return e.Err }

// checkReadable refuses, by name, what dedupsim does not read: a reader
// version or feature it does not know, and live files with deletion
// vectors (their deleted rows are still in the Parquet file).
func (t *table) checkReadable(log *Log) error {
	p := log.Protocol
	if p.MinReaderVersion > 3 {
		return t.errf("_delta_log", "protocol minReaderVersion %d: dedupsim reads versions 1-3", p.MinReaderVersion)
	}
	for _, f := range p.ReaderFeatures {
		if !slices.Contains(readerFeatures, f) {
			return t.errf("_delta_log", "reader table feature %q is not one dedupsim reads (%s)", f, strings.Join(readerFeatures, ", "))
		}
	}
	n := 0
	first := ""
	for _, f := range log.Files {
		if f.DeletionVector != nil {
			if n == 0 {
				first = f.Path
			}
			n++
		}
	}
	if n > 0 {
		return t.errf(first, "deletion vectors: %d live file(s) have one (table feature deletionVectors), marking rows deleted "+
			"that are still in the Parquet file; dedupsim does not read deletion vectors, so its counts would be wrong. "+
			"Rewrite the files without them (REORG TABLE ... APPLY (PURGE)) or count with Spark", n)
	}
	return nil
}

// history fills the txn actions per app id, the app id changes and the
// operations from the JSON commits present.
func history(r *Report, log *Log) {
	idx := map[string]int{}
	prev := -1
	for _, c := range log.Commits {
		r.Operations = append(r.Operations, Operation{c.Version, c.Operation})
		r.OperationCounts[c.Operation]++
		for _, tx := range c.Txns {
			i, ok := idx[tx.AppID]
			if !ok {
				i = len(r.Apps)
				idx[tx.AppID] = i
				r.Apps = append(r.Apps, App{AppID: tx.AppID, FirstVersion: c.Version, FirstTxn: tx.Version, LastTxn: tx.Version})
			} else {
				a := &r.Apps[i]
				if tx.Version > a.LastTxn+1 {
					if len(a.Gaps) < maxGaps {
						a.Gaps = append(a.Gaps, Gap{After: a.LastTxn, Next: tx.Version})
					} else {
						a.GapsOmitted++
					}
				}
				a.LastTxn = tx.Version
			}
			a := &r.Apps[i]
			a.Commits++
			a.LastVersion = c.Version
			if prev >= 0 && prev != i {
				from := r.Apps[prev]
				r.AppChanges = append(r.AppChanges, AppChange{TableVersion: c.Version, From: from.AppID, To: tx.AppID,
					FromLastTxn: from.LastTxn, ToFirstTxn: tx.Version, Replayed: tx.Version <= from.LastTxn})
			}
			prev = i
		}
	}
}

// keys counts the rows and, with key columns, the keys held more than
// once: a first pass keeps a 64-bit hash per row (8 bytes a row), sorted to
// find the hashes seen twice; a second pass counts exactly the keys with
// such a hash (so a hash collision is no false duplicate).
func (t *table) keys(r *Report, log *Log, cols []keyColumn, sample int) error {
	var hashes []uint64
	for _, f := range log.Files {
		n, err := t.scanFile(f, cols, func(key []byte) {
			if len(cols) > 0 {
				hashes = append(hashes, xxhash.Sum64(key))
			}
		})
		if err != nil {
			return err
		}
		r.Rows += n
	}
	if len(cols) == 0 {
		return nil
	}
	slices.Sort(hashes)
	cand := map[uint64]bool{}
	for i := 1; i < len(hashes); i++ {
		if hashes[i] == hashes[i-1] {
			cand[hashes[i]] = true
		}
	}
	hashes = nil
	counts := map[string]int64{}
	for _, f := range log.Files {
		_, err := t.scanFile(f, cols, func(key []byte) {
			if keyHasNull(key) {
				r.NullKeyRows++
			}
			if cand[xxhash.Sum64(key)] {
				counts[string(key)]++
			}
		})
		if err != nil {
			return err
		}
	}
	type dup struct {
		key   string
		count int64
	}
	var dups []dup
	for k, n := range counts {
		if n > 1 {
			dups = append(dups, dup{render([]byte(k), cols), n})
			r.DuplicateKeys++
			r.ExtraRows += n - 1
		}
	}
	// The most repeated first, then by key: the same table gives the same
	// sample.
	sort.Slice(dups, func(i, j int) bool {
		if dups[i].count != dups[j].count {
			return dups[i].count > dups[j].count
		}
		return dups[i].key < dups[j].key
	})
	for _, d := range dups[:min(sample, len(dups))] {
		r.Duplicates = append(r.Duplicates, Duplicate{Key: json.RawMessage(d.key), Count: d.count})
	}
	return nil
}

// keyHasNull reports a null item in a key (see appendValue).
func keyHasNull(key []byte) bool {
	for i := 0; i < len(key); {
		switch key[i] {
		case 'n':
			return true
		case 'b':
			i += 2
		case 'i', 'd':
			i += 9
		default:
			n, w := uvarint(key[i+1:])
			i += 1 + w + int(n)
		}
	}
	return false
}

func uvarint(b []byte) (uint64, int) {
	var x uint64
	var s uint
	for i, c := range b {
		if c < 0x80 {
			return x | uint64(c)<<s, i + 1
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, len(b) + 1
}

// JSON is the report as indented JSON.
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	return append(b, '\n'), err
}

// WriteText prints the report for people.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "Delta table %s\n", r.Table)
	fmt.Fprintf(w, "  version %d", r.Version)
	if r.Checkpoint >= 0 {
		fmt.Fprintf(w, " (state from the checkpoint of version %d)", r.Checkpoint)
	}
	if r.HistoryFrom > 0 {
		fmt.Fprintf(w, "; commits from version %d on (older ones cleaned up)", r.HistoryFrom)
	}
	fmt.Fprintf(w, "\n  protocol: reader %d, writer %d", r.MinReaderVersion, r.MinWriterVersion)
	if len(r.ReaderFeatures) > 0 {
		fmt.Fprintf(w, " (reader features: %s)", strings.Join(r.ReaderFeatures, ", "))
	}
	if r.ColumnMapping != "" {
		fmt.Fprintf(w, "; column mapping: %s", r.ColumnMapping)
	}
	fmt.Fprintf(w, "\n  columns: %s\n", strings.Join(r.Columns, ", "))
	if len(r.PartitionColumns) > 0 {
		fmt.Fprintf(w, "  partitioned by: %s\n", strings.Join(r.PartitionColumns, ", "))
	}
	fmt.Fprintf(w, "  rows: %d in %d live file(s), %d bytes\n", r.Rows, r.Files, r.Bytes)
	if len(r.Keys) > 0 {
		fmt.Fprintf(w, "\nKeys (%s):\n", strings.Join(r.Keys, ", "))
		if r.DuplicateKeys == 0 {
			fmt.Fprintf(w, "  every key is held once")
		} else {
			fmt.Fprintf(w, "  DUPLICATES: %d key(s) held more than once, %d extra row(s)", r.DuplicateKeys, r.ExtraRows)
		}
		if r.NullKeyRows > 0 {
			fmt.Fprintf(w, "; %d row(s) with a null key column (nulls count as one value, as Spark's groupBy)", r.NullKeyRows)
		}
		fmt.Fprintln(w)
		for _, d := range r.Duplicates {
			fmt.Fprintf(w, "    %s x%d\n", d.Key, d.Count)
		}
		if int64(len(r.Duplicates)) < r.DuplicateKeys {
			fmt.Fprintf(w, "    ... and %d more\n", r.DuplicateKeys-int64(len(r.Duplicates)))
		}
	}
	if len(r.Apps) > 0 || len(r.CheckpointTxns) > 0 {
		fmt.Fprintf(w, "\nIdempotent writes (txn actions: txnAppId, txnVersion):\n")
		for _, a := range r.Apps {
			fmt.Fprintf(w, "  %s: %d commit(s), table versions %d-%d, txnVersion %d-%d", a.AppID, a.Commits, a.FirstVersion, a.LastVersion, a.FirstTxn, a.LastTxn)
			if len(a.Gaps) > 0 {
				var g []string
				for _, x := range a.Gaps {
					g = append(g, fmt.Sprintf("%d->%d", x.After, x.Next))
				}
				fmt.Fprintf(w, "; gaps %s", strings.Join(g, " "))
				if a.GapsOmitted > 0 {
					fmt.Fprintf(w, " and %d more", a.GapsOmitted)
				}
			}
			fmt.Fprintln(w)
		}
		for _, c := range r.AppChanges {
			fmt.Fprintf(w, "  version %d: txnAppId changed from %s (last txnVersion %d) to %s (txnVersion %d)", c.TableVersion, c.From, c.FromLastTxn, c.To, c.ToFirstTxn)
			if c.Replayed {
				fmt.Fprintf(w, ": REPLAYED txnVersion %d-%d under a new app id, which Delta does not skip (a txnAppId generated at start-up?)", c.ToFirstTxn, c.FromLastTxn)
			}
			fmt.Fprintln(w)
		}
		if len(r.CheckpointTxns) > 0 && r.HistoryFrom > 0 {
			for _, tx := range r.CheckpointTxns {
				fmt.Fprintf(w, "  %s: txnVersion %d in the checkpoint\n", tx.AppID, tx.Version)
			}
		}
	}
	fmt.Fprintf(w, "\nOperations:")
	for _, k := range sortedKeys(r.OperationCounts) {
		fmt.Fprintf(w, " %s %d", orUnknown(k), r.OperationCounts[k])
	}
	fmt.Fprintln(w)
	const show = 12
	for i, o := range r.Operations {
		if len(r.Operations) > 2*show && i == show {
			fmt.Fprintf(w, "  ... %d versions ...\n", len(r.Operations)-2*show)
		}
		if len(r.Operations) > 2*show && i >= show && i < len(r.Operations)-show {
			continue
		}
		fmt.Fprintf(w, "  v%d %s\n", o.Version, orUnknown(o.Operation))
	}
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "(no commitInfo)"
	}
	return s
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
