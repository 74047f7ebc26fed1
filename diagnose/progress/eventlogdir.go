package progress

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// A spark.eventLog.dir holds one event log per application attempt, as
// Spark's EventLogFileWriters name them and its history server
// (FsHistoryProvider) lists them (docs/diagnose.md A.2d):
//
//   - a single file <appId>[_<attemptId>][.<codec>][.inprogress] (the
//     default, spark.eventLog.rolling.enabled=false), codec one of lz4,
//     lzf, snappy, zstd; ".inprogress" while the application runs;
//   - a rolling folder eventlog_v2_<appId>[_<attemptId>] holding
//     events_<index>_<appId>[_<attemptId>][.<codec>] parts and the marker
//     appstatus_<appId>[_<attemptId>][.inprogress].
//
// Names starting with '.' (Hadoop's .crc files) are skipped, as the history
// server skips them.

// App is one application attempt's event log in a spark.eventLog.dir.
type App struct {
	// ID is the application id (with its attempt) from the name.
	ID   string `json:"id"`
	Path string `json:"path"`
	// Rolling: an eventlog_v2_ folder; else one file.
	Rolling bool `json:"rolling"`
	// Codec is the codec the name says ("" for none).
	Codec string `json:"codec,omitempty"`
	// InProgress: the application had not finished when the log was taken.
	InProgress bool `json:"inProgress"`
}

// Skipped is an entry of the folder that is no event log, and why.
type Skipped struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// rollingPrefix names a rolling event log folder.
const rollingPrefix = "eventlog_v2_"

// codecs are the short names Spark appends to an event log (CompressionCodec).
var codecs = []string{"lz4", "lzf", "snappy", "zstd"}

// IsEventLogDir says whether dir is a spark.eventLog.dir rather than one
// rolling event log: it holds no events_<index>_ part of its own.
func IsEventLogDir(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "events_") && !e.IsDir() {
			return false
		}
	}
	return true
}

// EventLogDir lists the applications of a spark.eventLog.dir, sorted by
// id, and the entries it skipped. A folder with neither is an error.
func EventLogDir(dir string) ([]App, []Skipped, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var apps []App
	var skipped []Skipped
	for _, e := range ents {
		name := e.Name()
		path := filepath.Join(dir, name)
		if strings.HasPrefix(name, ".") {
			continue
		}
		if e.IsDir() {
			id, ok := strings.CutPrefix(name, rollingPrefix)
			if !ok || id == "" {
				skipped = append(skipped, Skipped{name, "a folder that is no rolling event log (not eventlog_v2_<appId>)"})
				continue
			}
			apps = append(apps, App{ID: id, Path: path, Rolling: true, InProgress: rollingInProgress(path, id)})
			continue
		}
		st, err := os.Stat(path)
		if err != nil || !st.Mode().IsRegular() {
			skipped = append(skipped, Skipped{name, "not a regular file"})
			continue
		}
		a := App{ID: name, Path: path}
		if rest, ok := strings.CutSuffix(a.ID, ".inprogress"); ok {
			a.ID, a.InProgress = rest, true
		}
		for _, c := range codecs {
			if rest, ok := strings.CutSuffix(a.ID, "."+c); ok {
				a.ID, a.Codec = rest, c
				break
			}
		}
		apps = append(apps, a)
	}
	if len(apps) == 0 {
		return nil, skipped, fmt.Errorf("a folder with no event log in it: neither a rolling event log (events_<index>_<appId> files) nor a spark.eventLog.dir (eventlog_v2_<appId> folders, <appId>[.codec][.inprogress] files)")
	}
	sort.Slice(apps, func(i, j int) bool { return apps[i].ID < apps[j].ID })
	return apps, skipped, nil
}

// rollingInProgress: the folder's appstatus marker ends in .inprogress.
func rollingInProgress(dir, id string) bool {
	_, err := os.Stat(filepath.Join(dir, "appstatus_"+id+".inprogress"))
	return err == nil
}
