// Package delta reads a Delta Lake table folder, read-only, for `dedupsim
// inspect` (docs/delta.md): it replays the transaction log (_delta_log/:
// JSON commits, Parquet checkpoints, _last_checkpoint) into the table's live
// files, reads the key columns of those Parquet files, and reports the rows,
// the keys held more than once, the txn actions (txnAppId, txnVersion) per
// app id and the operation of every version.
//
// Nothing is ever written: files are opened for reading through an os.Root
// on the table folder, so no path in the log reaches outside it.
package delta

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/internal/lines"
)

// Error is a table that cannot be read: a missing or malformed log file, a
// data file the log names that is absent, or a feature dedupsim does not
// read (named). Path is the file.
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// MaxLineBytes caps one line of a JSON commit (one action).
const MaxLineBytes = 64 << 20

// IsTable reports whether dir looks like a Delta table: it has a
// _delta_log folder.
func IsTable(dir string) bool {
	st, err := os.Stat(path.Join(dir, "_delta_log"))
	return err == nil && st.IsDir()
}

// Action is one line of a commit, or one row of a checkpoint. Exactly one
// field is set for the actions the reader uses; others are ignored, as
// the protocol asks of readers.
type Action struct {
	Add        *AddFile    `json:"add,omitempty"`
	Remove     *RemoveFile `json:"remove,omitempty"`
	MetaData   *Metadata   `json:"metaData,omitempty"`
	Protocol   *Protocol   `json:"protocol,omitempty"`
	Txn        *Txn        `json:"txn,omitempty"`
	CommitInfo *CommitInfo `json:"commitInfo,omitempty"`
}

// AddFile is an add action: a data file joins the table.
type AddFile struct {
	Path            string             `json:"path"`
	PartitionValues map[string]*string `json:"partitionValues"`
	Size            int64              `json:"size"`
	Stats           string             `json:"stats,omitempty"`
	DeletionVector  *DeletionVector    `json:"deletionVector,omitempty"`
}

// DeletionVector is a file's deletion vector descriptor: rows of the file
// marked deleted.
type DeletionVector struct {
	StorageType    string `json:"storageType"`
	PathOrInlineDv string `json:"pathOrInlineDv"`
	Offset         *int64 `json:"offset,omitempty"`
	Cardinality    int64  `json:"cardinality"`
}

// id is the descriptor's unique id (the protocol's dvId): storage type,
// path or inline data, and offset.
func (dv *DeletionVector) id() string {
	if dv == nil {
		return ""
	}
	s := dv.StorageType + dv.PathOrInlineDv
	if dv.Offset != nil {
		s += "@" + strconv.FormatInt(*dv.Offset, 10)
	}
	return s
}

// RemoveFile is a remove action: a data file leaves the table.
type RemoveFile struct {
	Path           string          `json:"path"`
	DeletionVector *DeletionVector `json:"deletionVector,omitempty"`
}

// Metadata is the metaData action: the schema and settings.
type Metadata struct {
	ID               string            `json:"id"`
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	Configuration    map[string]string `json:"configuration"`
}

// Protocol is the protocol action.
type Protocol struct {
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty"`
	WriterFeatures   []string `json:"writerFeatures,omitempty"`
}

// Txn is a txn (SetTransaction) action: a writer's (appId, version), the
// txnAppId / txnVersion options of an idempotent write.
type Txn struct {
	AppID   string `json:"appId"`
	Version int64  `json:"version"`
}

// CommitInfo is the commitInfo action: what wrote the commit.
type CommitInfo struct {
	Operation string `json:"operation"`
	Timestamp int64  `json:"timestamp"`
}

// Log is the replayed log: the table's state at its latest version and
// the history of the JSON commits present.
type Log struct {
	Version  int64 // the latest version
	Metadata *Metadata
	Protocol *Protocol
	// Files are the live data files (path relative to the table, decoded),
	// in path order.
	Files []*AddFile
	// Checkpoint is the version of the checkpoint the state started from,
	// -1 for none (replayed from version 0).
	Checkpoint int64
	// HistoryFrom is the first JSON commit present: the commits from it to
	// Version are all there (older ones may have been cleaned up).
	HistoryFrom int64
	// Commits are the JSON commits HistoryFrom..Version: their txn
	// actions and operation.
	Commits []Commit
	// CheckpointTxns are the txn actions the checkpoint holds (each app
	// id's latest version), for history the cleaned-up commits held.
	CheckpointTxns []Txn
	// Warnings are things a reader should know (an unusable
	// _last_checkpoint, ignored files).
	Warnings []string
}

// Commit is one version's txn actions and operation.
type Commit struct {
	Version   int64
	Operation string
	Txns      []Txn
}

var (
	commitName     = regexp.MustCompile(`^(\d{20})\.json$`)
	checkpointName = regexp.MustCompile(`^(\d{20})\.checkpoint\.parquet$`)
	multipartName  = regexp.MustCompile(`^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$`)
	v2Name         = regexp.MustCompile(`^(\d{20})\.checkpoint\.[0-9a-fA-F-]{36}\.(json|parquet)$`)
)

// table is an open table folder.
type table struct {
	dir  string
	root *os.Root
}

func (t *table) errf(name, format string, a ...any) error {
	return &Error{path.Join(t.dir, name), fmt.Errorf(format, a...)}
}

// ReadLog replays the log of the table in dir.
func ReadLog(dir string) (*Log, error) {
	t, log, err := open(dir)
	if err != nil {
		return nil, err
	}
	t.root.Close()
	return log, nil
}

// open opens the table in dir and replays its log; the caller closes
// t.root.
func open(dir string) (*table, *Log, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, &Error{dir, err}
	}
	t := &table{dir: dir, root: root}
	log, err := t.readLog()
	if err != nil {
		root.Close()
		return nil, nil, err
	}
	return t, log, nil
}

func (t *table) readLog() (*Log, error) {
	entries, err := fs.ReadDir(t.root.FS(), "_delta_log")
	if err != nil {
		return nil, t.errf("_delta_log", "not a Delta table: %v", err)
	}
	commits := map[int64]string{}
	checkpoints := map[int64][]string{} // version -> part files, in part order
	parts := map[int64]int{}            // multi-part: the declared number of parts
	var v2 []int64
	for _, e := range entries {
		name := e.Name()
		switch {
		case commitName.MatchString(name):
			commits[mustVersion(name)] = name
		case checkpointName.MatchString(name):
			checkpoints[mustVersion(name)] = []string{name}
		case multipartName.MatchString(name):
			m := multipartName.FindStringSubmatch(name)
			v := mustVersion(name)
			n, _ := strconv.Atoi(m[3])
			parts[v] = n
			checkpoints[v] = append(checkpoints[v], name)
		case v2Name.MatchString(name):
			v2 = append(v2, mustVersion(name))
		}
	}
	if len(commits) == 0 && len(checkpoints) == 0 {
		return nil, t.errf("_delta_log", "no commit (NNNNNNNNNNNNNNNNNNNN.json) or checkpoint: not a Delta table, or an empty one")
	}
	log := &Log{Version: -1, Checkpoint: -1}
	for v := range commits {
		log.Version = max(log.Version, v)
	}
	for v := range checkpoints {
		log.Version = max(log.Version, v)
	}
	// Complete multi-part checkpoints only.
	for v, names := range checkpoints {
		if n, ok := parts[v]; ok {
			slices.Sort(names)
			if len(names) != n {
				log.Warnings = append(log.Warnings, fmt.Sprintf("checkpoint of version %d has %d of its %d parts: not used", v, len(names), n))
				delete(checkpoints, v)
			}
		}
	}
	// The JSON history present: the longest run of consecutive commits that
	// ends at the latest version.
	log.HistoryFrom = log.Version + 1
	for v := log.Version; v >= 0; v-- {
		if _, ok := commits[v]; !ok {
			break
		}
		log.HistoryFrom = v
	}
	// The state: the newest checkpoint whose later commits are all there,
	// as Spark reads it; else every commit from version 0.
	hint := t.lastCheckpoint(log)
	start := int64(-1)
	var cps []int64
	for v := range checkpoints {
		cps = append(cps, v)
	}
	slices.Sort(cps)
	for i := len(cps) - 1; i >= 0; i-- {
		if cps[i]+1 >= log.HistoryFrom {
			start = cps[i]
			break
		}
	}
	if hint >= 0 && hint != start {
		if _, ok := checkpoints[hint]; !ok {
			log.Warnings = append(log.Warnings, fmt.Sprintf("_delta_log/_last_checkpoint names version %d, which has no complete checkpoint: the log was listed instead", hint))
		}
	}
	if start < 0 && log.HistoryFrom != 0 {
		if slices.ContainsFunc(v2, func(v int64) bool { return v+1 >= log.HistoryFrom }) {
			return nil, t.errf("_delta_log", "the table's state starts at a V2 checkpoint (table feature v2Checkpoint, NNN.checkpoint.UUID.json|parquet), which dedupsim does not read")
		}
		return nil, t.errf("_delta_log", "commits before version %d are gone and no checkpoint covers them: the log cannot be replayed", log.HistoryFrom)
	}
	files := map[string]*AddFile{}
	if start >= 0 {
		log.Checkpoint = start
		for _, name := range checkpoints[start] {
			acts, err := t.readCheckpoint("_delta_log/" + name)
			if err != nil {
				return nil, err
			}
			for i := range acts {
				if err := log.apply(t, "_delta_log/"+name, &acts[i], files); err != nil {
					return nil, err
				}
				if a := acts[i].Txn; a != nil {
					log.CheckpointTxns = append(log.CheckpointTxns, *a)
				}
			}
		}
	}
	for v := log.HistoryFrom; v <= log.Version; v++ {
		name := "_delta_log/" + commits[v]
		c := Commit{Version: v}
		err := t.readCommit(name, func(a *Action) error {
			if a.Txn != nil {
				c.Txns = append(c.Txns, *a.Txn)
			}
			if a.CommitInfo != nil {
				c.Operation = a.CommitInfo.Operation
			}
			if v <= start {
				return nil // in the checkpoint's state already
			}
			return log.apply(t, name, a, files)
		})
		if err != nil {
			return nil, err
		}
		log.Commits = append(log.Commits, c)
	}
	if log.Metadata == nil {
		return nil, t.errf("_delta_log", "no metaData action up to version %d", log.Version)
	}
	if log.Protocol == nil {
		return nil, t.errf("_delta_log", "no protocol action up to version %d", log.Version)
	}
	for _, f := range files {
		log.Files = append(log.Files, f)
	}
	sort.Slice(log.Files, func(i, j int) bool { return log.Files[i].Path < log.Files[j].Path })
	sort.Slice(log.CheckpointTxns, func(i, j int) bool { return log.CheckpointTxns[i].AppID < log.CheckpointTxns[j].AppID })
	return log, nil
}

func mustVersion(name string) int64 {
	v, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil {
		return -1 // 20 digits beyond int64: never the latest
	}
	return v
}

// lastCheckpoint reads _delta_log/_last_checkpoint's version, -1 when
// absent. A malformed file is a warning: the log is listed instead, as
// Delta does.
func (t *table) lastCheckpoint(log *Log) int64 {
	data, err := fs.ReadFile(t.root.FS(), "_delta_log/_last_checkpoint")
	if err != nil {
		return -1
	}
	var lc struct {
		Version *int64 `json:"version"`
	}
	if err := json.Unmarshal(data, &lc); err != nil || lc.Version == nil || *lc.Version < 0 {
		log.Warnings = append(log.Warnings, "_delta_log/_last_checkpoint is not {\"version\": N, ...}: the log was listed instead")
		return -1
	}
	return *lc.Version
}

// apply adds an action to the state.
func (log *Log) apply(t *table, file string, a *Action, files map[string]*AddFile) error {
	switch {
	case a.Add != nil:
		p, err := t.dataPath(file, a.Add.Path)
		if err != nil {
			return err
		}
		add := *a.Add
		add.Path = p
		// A logical file is its path and deletion vector: a DELETE that
		// adds a vector removes the file without it and adds it with it.
		files[p+"\x00"+add.DeletionVector.id()] = &add
	case a.Remove != nil:
		p, err := t.dataPath(file, a.Remove.Path)
		if err != nil {
			return err
		}
		delete(files, p+"\x00"+a.Remove.DeletionVector.id())
	case a.MetaData != nil:
		log.Metadata = a.MetaData
	case a.Protocol != nil:
		log.Protocol = a.Protocol
	}
	return nil
}

// dataPath decodes an add or remove path: a URI relative to the table
// (percent-encoded). An absolute URI or a path out of the table is refused:
// inspect reads the folder it was given and nothing else.
func (t *table) dataPath(file, p string) (string, error) {
	if p == "" {
		return "", t.errf(file, "an add or remove action with an empty path")
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || strings.HasPrefix(u.Path, "/") {
		return "", t.errf(file, "data file %q is not a path relative to the table (a shallow clone or an absolute URI): not read", p)
	}
	clean := path.Clean(u.Path)
	if clean == ".." || strings.HasPrefix(clean, "../") || clean == "." {
		return "", t.errf(file, "data file %q is outside the table: not read", p)
	}
	return clean, nil
}

// readCommit reads a JSON commit, one action a line.
func (t *table) readCommit(name string, each func(*Action) error) error {
	f, err := t.root.Open(name)
	if err != nil {
		return t.errf(name, "%v", err)
	}
	defer f.Close()
	return t.readActions(name, f, each)
}

func (t *table) readActions(name string, r io.Reader, each func(*Action) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := readLine(br)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return t.errf(name, "line %d: %v", n, err)
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var a Action
		if err := json.Unmarshal(line, &a); err != nil {
			return t.errf(name, "line %d: not a Delta action: %v", n, err)
		}
		if err := checkAction(&a); err != nil {
			return t.errf(name, "line %d: %v", n, err)
		}
		if err := each(&a); err != nil {
			return err
		}
	}
}

// checkAction refuses values outside their domain.
func checkAction(a *Action) error {
	switch {
	case a.Add != nil && a.Add.Size < 0:
		return fmt.Errorf("add %q: size %d is negative", a.Add.Path, a.Add.Size)
	case a.Txn != nil && a.Txn.Version < 0:
		return fmt.Errorf("txn %q: version %d is negative", a.Txn.AppID, a.Txn.Version)
	case a.Txn != nil && a.Txn.AppID == "":
		return errors.New("txn: empty appId")
	case a.Protocol != nil && (a.Protocol.MinReaderVersion < 1 || a.Protocol.MinWriterVersion < 1):
		return fmt.Errorf("protocol: minReaderVersion %d, minWriterVersion %d: want >= 1", a.Protocol.MinReaderVersion, a.Protocol.MinWriterVersion)
	}
	return nil
}

// readLine reads one line of at most MaxLineBytes, without its newline.
func readLine(br *bufio.Reader) ([]byte, error) {
	return lines.Read(br, MaxLineBytes, "")
}
