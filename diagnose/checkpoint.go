package diagnose

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/dedupsim/dedupsim/inspect"
)

// The checkpoint beside the log (diagnose --checkpoint DIR): what the
// metrics cannot show, the state can. dedupsim inspect reads it (the CLI
// fills Checkpoint from its report, so that this package stays free of
// files); Join adds what it shows to the query it belongs to.

// Checkpoint is what a real Spark checkpoint says, as dedupsim inspect
// reads it.
type Checkpoint struct {
	Dir     string `json:"dir"`
	QueryID string `json:"queryId"`
	// LastOffsetBatch and LastCommitBatch are the last batch planned and
	// the last committed (-1: none).
	LastOffsetBatch int64                `json:"lastOffsetBatch"`
	LastCommitBatch int64                `json:"lastCommitBatch"`
	Operators       []CheckpointOperator `json:"operators"`
	// Policy is the pinned spark.sql.streaming.multipleWatermarkPolicy.
	Policy string `json:"watermarkPolicy,omitempty"`
}

// CheckpointOperator is one stateful operator's state.
type CheckpointOperator struct {
	ID        int    `json:"operatorId"`
	Name      string `json:"operatorName"`
	EventTime string `json:"eventTimeColumn"`
	Version   int64  `json:"version"`
	Keys      int64  `json:"keys"`
	// KeyColumns are the key schema's column names, in its order;
	// DelayMs the watermark delay its metadata holds; Partitions the
	// state partitions.
	KeyColumns []string `json:"keyColumns,omitempty"`
	DelayMs    int64    `json:"delayMs,omitempty"`
	Partitions int      `json:"partitions"`
	// KeysWithSeveralTimes are ids (the key's columns but the event time)
	// held under more than one event time; Examples a few of them.
	KeysWithSeveralTimes int      `json:"keysWithSeveralEventTimes"`
	Examples             []string `json:"examples,omitempty"`
}

// CheckpointOf is what Join takes of inspect's report of the checkpoint
// at dir (the key schema's column names, the pinned policy).
func CheckpointOf(dir string, ir *inspect.Report) Checkpoint {
	ck := Checkpoint{Dir: dir, QueryID: ir.QueryID, LastOffsetBatch: ir.LastOffsetBatch, LastCommitBatch: ir.LastCommitBatch,
		Policy: ir.Conf["spark.sql.streaming.multipleWatermarkPolicy"]}
	for _, op := range ir.Operators {
		var ks struct {
			Fields []struct {
				Name string `json:"name"`
			} `json:"fields"`
		}
		var cols []string
		if json.Unmarshal([]byte(op.KeySchema), &ks) == nil {
			for _, f := range ks.Fields {
				cols = append(cols, f.Name)
			}
		}
		ck.Operators = append(ck.Operators, CheckpointOperator{ID: op.ID, Name: op.Name, EventTime: op.EventTime, Version: op.Version,
			Keys: op.Keys, KeysWithSeveralTimes: op.KeysWithSeveralTimes, Examples: op.SeveralTimesExamples,
			KeyColumns: cols, DelayMs: op.DelayMs, Partitions: op.NumPartitions})
	}
	return ck
}

// Join adds the checkpoint's evidence to the report: ids held under
// several event times are a table-duplicate problem (their copies were
// each emitted); a checkpoint of another query, or one that lacks batches
// the log has, is a checkpoint-mismatch problem; an event-time-in-key risk
// the state answers is settled either way.
func Join(r *Report, ck Checkpoint) {
	r.Checkpoint = &ck
	defer r.summarize()
	if len(r.Queries) == 0 {
		return
	}
	qi := -1
	var ids []string
	for i, q := range r.Queries {
		ids = append(ids, q.ID)
		if q.ID == ck.QueryID {
			qi = i
		}
	}
	if qi < 0 {
		q := &r.Queries[0]
		q.Finding = append([]Finding{{Kind: CheckpointMismatch, Severity: Problem, Query: q.ID, Operator: -1, FromBatch: -1, Confidence: 1,
			Message:  fmt.Sprintf("the checkpoint %s is query %s's, not a query of the log (%s): its state says nothing about them", ck.Dir, orNone(ck.QueryID), strings.Join(ids, ", ")),
			Evidence: []string{fmt.Sprintf("%s/metadata: id %s", ck.Dir, orNone(ck.QueryID)), fmt.Sprintf("the log's StreamingQueryProgress id: %s", strings.Join(ids, ", "))},
			Advice:   "give the checkpointLocation of the query the log is of (its metadata file holds the log's query id)"}}, q.Finding...)
		sort.SliceStable(q.Finding, func(i, j int) bool { return kindIndex(q.Finding[i].Kind) < kindIndex(q.Finding[j].Kind) })
		return
	}
	q := &r.Queries[qi]
	var lastLog int64 = -1
	for _, p := range q.Points {
		lastLog = max(lastLog, p.BatchID)
	}
	var add []Finding
	if lastLog > ck.LastOffsetBatch {
		add = append(add, Finding{Kind: CheckpointMismatch, Severity: Problem, Operator: -1, FromBatch: ck.LastOffsetBatch + 1, Confidence: 1,
			Message: fmt.Sprintf("the checkpoint lacks batches the log has: the log runs to batch %d, the checkpoint's offsets only to %d; it is an older copy, or another run of the same query id rewrote it", lastLog, ck.LastOffsetBatch),
			Evidence: []string{fmt.Sprintf("%s/offsets: last batch %d, commits: last batch %d", ck.Dir, ck.LastOffsetBatch, ck.LastCommitBatch),
				fmt.Sprintf("the log's last batch of query %s: %d", q.ID, lastLog)},
			Advice: "give the checkpoint as it is now (not a copy taken before the log's last batch), or the log of the run that wrote it"})
	}
	for _, op := range ck.Operators {
		if op.KeysWithSeveralTimes == 0 {
			continue
		}
		ev := []string{
			fmt.Sprintf("%s: operator %d (%s) at state version %d holds %s keys, %s of them ids under more than one %s", ck.Dir, op.ID, op.Name, op.Version, num(op.Keys), num(int64(op.KeysWithSeveralTimes)), op.EventTime),
			"keys the watermark evicted before the checkpoint's last batch are gone from the state: the table may hold more such events",
		}
		if len(op.Examples) > 0 {
			ev = append(ev, "for example: "+strings.Join(op.Examples, "; "))
		}
		add = append(add, Finding{Kind: TableDuplicate, Severity: Problem, Operator: op.ID, FromBatch: -1, Confidence: 1,
			Message: fmt.Sprintf("duplicates reach the table: %s id(s) are held in operator %d's state under more than one %s, so copies of one event with different event times were each a new key and each was emitted (at least %s events more than once in the table)",
				num(int64(op.KeysWithSeveralTimes)), op.ID, op.EventTime, num(int64(op.KeysWithSeveralTimes))),
			Evidence: ev,
			Advice:   adviceDuplicatesInTable})
	}
	// The risk is answered: a problem above, or none in the state now.
	for i := range q.Finding {
		f := &q.Finding[i]
		if f.Kind != EventTimeInKey || f.Severity != Risk {
			continue
		}
		f.Severity = Info
		if !hasFinding(add, TableDuplicate) {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: no id is held under two event times in the state now (keys evicted earlier are not in it)", ck.Dir))
		}
	}
	for i := range add {
		add[i].Query = q.ID
	}
	q.Finding = append(add, q.Finding...)
	sort.SliceStable(q.Finding, func(i, j int) bool { return kindIndex(q.Finding[i].Kind) < kindIndex(q.Finding[j].Kind) })
}

// adviceDuplicatesInTable is the fix of a table-duplicate the checkpoint
// shows.
const adviceDuplicatesInTable = `producers re-stamp the event time of a retry, so its copies are other keys: dedup on the id ` +
	`alone, dropDuplicatesWithinWatermark(["id"]) with a delay above the retries' largest gap (seed 000, "Event time in the ` +
	`key, different per retry"); then remove the extra rows from the table (keep the first row of each id); ` +
	`dedupsim shrink turns a scenario of it into a regression test`

func hasFinding(fs []Finding, k Kind) bool {
	for _, f := range fs {
		if f.Kind == k {
			return true
		}
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Application is one application of a spark.eventLog.dir given to
// diagnose: its event log, the streaming queries in it, and whether it was
// diagnosed (all are, unless --app picks one).
type Application struct {
	ID         string     `json:"id"`
	Path       string     `json:"path"`
	Rolling    bool       `json:"rolling"`
	Codec      string     `json:"codec,omitempty"`
	InProgress bool       `json:"inProgress"`
	Queries    []AppQuery `json:"queries"`
	// Note says why an application has no query to diagnose.
	Note      string `json:"note,omitempty"`
	Diagnosed bool   `json:"diagnosed"`
}

// AppQuery is a streaming query of an application.
type AppQuery struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Batches int    `json:"batches"`
}

// writeApplications lists the applications of an event-log folder.
func (r Report) writeApplications(w io.Writer) {
	if len(r.Applications) == 0 {
		return
	}
	n, all := 0, 0
	for _, a := range r.Applications {
		if a.Diagnosed {
			n++
		}
		if !strings.HasPrefix(a.Note, "skipped: ") {
			all++
		}
	}
	fmt.Fprintf(w, "applications: %d in the event-log folder, %d diagnosed (*)\n", all, n)
	for _, a := range r.Applications {
		shape := "file"
		if strings.HasPrefix(a.Note, "skipped: ") {
			fmt.Fprintf(w, "    %s: %s\n", a.ID, a.Note)
			continue
		}
		if a.Rolling {
			shape = "rolling"
		}
		if a.Codec != "" {
			shape += ", " + a.Codec
		}
		if a.InProgress {
			shape += ", in progress"
		}
		mark := " "
		if a.Diagnosed {
			mark = "*"
		}
		var what []string
		for _, q := range a.Queries {
			name := q.Name
			if name == "" {
				name = "(unnamed)"
			}
			what = append(what, fmt.Sprintf("query %s (id %s, %s)", name, q.ID, plural(q.Batches, "batch")))
		}
		if a.Note != "" {
			what = append(what, a.Note)
		}
		fmt.Fprintf(w, "  %s %s (%s): %s\n", mark, a.ID, shape, strings.Join(what, "; "))
	}
}
