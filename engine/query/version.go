package query

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dedupsim/dedupsim/engine/sparkver"
	"github.com/dedupsim/dedupsim/internal/yamlstrict"
)

// The query's Spark version (spark_version:, or --spark-version) and
// spark_conf (docs/exec-format.md, spark-semantics.md §17).

// confFields are the pinned confs the query sets with its own fields.
var confFields = map[string]string{
	sparkver.ConfShufflePartitions: "shuffle_partitions",
	sparkver.ConfStateStore:        "state_store",
	sparkver.ConfWatermarkPolicy:   "watermark_policy",
}

// sparkVersion reads `spark_version:` (a string such as "4.3" or "4.3.0";
// an unquoted 4.3 reads as the same text).
func (p *parser) sparkVersion(n *yaml.Node, q *Query) error {
	s, err := p.scalar(n, "spark_version", `a Spark version such as "4.3.0"`)
	if err != nil {
		return err
	}
	v, err := sparkver.Parse(s.Value)
	if err != nil {
		return p.errAt(s, "spark_version", "%v", err)
	}
	q.SparkVersion = v
	q.at().versionLine = s.Line
	return nil
}

// sparkConf reads `spark_conf:`, a mapping of Spark conf keys to values
// (strings, numbers or booleans, read as the text written).
func (p *parser) sparkConf(key, n *yaml.Node, q *Query) error {
	n, err := p.resolve(n, "spark_conf")
	if err != nil {
		return err
	}
	if n.Kind != yaml.MappingNode {
		return p.errAt(n, "spark_conf", "want a mapping of Spark conf keys to values, got %s", yamlstrict.Typed(n))
	}
	q.SparkConf = map[string]string{}
	q.at().confLines[""] = key.Line
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, err := p.resolve(n.Content[i], "spark_conf")
		if err != nil {
			return err
		}
		if k.Kind != yaml.ScalarNode || yamlstrict.IsNull(k) || k.Value == "" {
			return p.errAt(k, "spark_conf", "conf keys must be plain strings, got %s", yamlstrict.Typed(k))
		}
		if k.ShortTag() == "!!merge" {
			return p.errAt(k, "spark_conf", "YAML merge keys (<<) are not supported; write the confs out")
		}
		path := "spark_conf." + k.Value
		if line, dup := q.pos.confLines[k.Value]; dup {
			return p.errAt(k, path, "conf given twice (first at line %d)", line)
		}
		v, err := p.scalar(n.Content[i+1], path, "a conf value (a string, number or boolean)")
		if err != nil {
			return err
		}
		q.SparkConf[k.Value] = v.Value
		q.pos.confLines[k.Value] = k.Line
	}
	return nil
}

// SetSparkVersion gives the query the Spark version of --spark-version:
// one the query file names too must be the same line, and the same
// version where both give a patch ("4.3" and "4.3.0" agree, "4.3.0" and
// "4.3.1" do not). The
// query's spark_conf and options are checked against the line.
func (q *Query) SetSparkVersion(v sparkver.Version) error {
	if f := q.SparkVersion; !f.IsZero() && f.Line == v.Line && (f.Full == f.Line || f.Full == v.Full) {
		// The same line: the flag may name the patch the file leaves out.
	} else if !f.IsZero() && (f.Line != v.Line || v.Full != v.Line) {
		return &Error{File: q.at().file, Line: q.at().versionLine, Path: "spark_version", Msg: fmt.Sprintf("the query file says %s but --spark-version says %s: give one, or the same", q.SparkVersion.Full, v.Full)}
	}
	q.SparkVersion = v
	return q.CheckSparkVersion()
}

// CheckSparkVersion checks spark_conf and the options that depend on the
// line against the query's Spark version, and sets KeyOrder for a new
// checkpoint. A spark_conf without any version is refused: what a conf
// means depends on the line.
func (q *Query) CheckSparkVersion() error {
	errAt := func(key, format string, args ...any) error {
		pos := q.at()
		path, line := "spark_conf", pos.confLines[""]
		if key != "" {
			path, line = "spark_conf."+key, pos.confLines[key]
		}
		return &Error{File: pos.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)}
	}
	if q.SparkVersion.IsZero() {
		if q.SparkConf != nil {
			return errAt("", "needs a Spark version (spark_version: or --spark-version): which confs exist and what they do depends on the line")
		}
		if q.RealTimeMs > 0 {
			return q.realTimeErr(q.at().rtLine, "trigger.real_time", "needs a Spark version (spark_version: or --spark-version): real-time mode exists from Spark 4.1 and runs dropDuplicates from 4.3")
		}
		return nil
	}
	row, _ := sparkver.Lookup(q.SparkVersion)
	if err := q.checkRealTime(row); err != nil {
		return err
	}
	keys := make([]string, 0, len(q.SparkConf))
	for k := range q.SparkConf {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := q.SparkConf[k]
		if f, ok := confFields[k]; ok {
			return errAt(k, "set with the query field %s, not spark_conf", f)
		}
		c, ok := row.Conf(k)
		if !ok {
			return errAt(k, "Spark %s has no conf %q that dedupsim models (known on %s: %s)", q.SparkVersion.Full, k, row.Line, strings.Join(withoutFields(row.ConfKeys()), ", "))
		}
		switch k {
		case sparkver.ConfKeyOrder:
			if v != "true" && v != "false" {
				return errAt(k, "want true or false, got %q", v)
			}
		case sparkver.ConfRowChecksum:
			switch v {
			case "false":
			case "true":
				return errAt(k, "true is not supported: the row checksum changes the layout of every state row (a checksum after the value), which dedupsim does not read or write")
			default:
				return errAt(k, "want true or false, got %q", v)
			}
		case sparkver.ConfIncrementalCleanup:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return errAt(k, "want a number, got %q", v)
			}
			if f != 0 {
				return errAt(k, "%s is not supported: incremental cleanup changes which expired rows an eviction removes in a batch (numRowsRemoved, numRowsTotal), which dedupsim does not model; only 0 (Spark's default) runs", v)
			}
		default:
			if v != c.Value {
				return errAt(k, "only %s (Spark's default) is modelled, got %q", c.Value, v)
			}
		}
	}
	if q.CheckpointFormat == 2 && !row.FormatV2 {
		return &Error{File: q.at().file, Line: q.at().formatLine, Path: "checkpoint_format_version", Msg: fmt.Sprintf("2 needs Spark 4.0 or later (Spark %s has no state checkpoint format v2: %s is ignored)", q.SparkVersion.Full, sparkver.ConfCheckpointFormat)}
	}
	q.KeyOrder = row.KeyOrderFor(q.ConfValue(sparkver.ConfKeyOrder))
	return nil
}

func withoutFields(keys []string) []string {
	out := keys[:0:0]
	for _, k := range keys {
		if _, ok := confFields[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// ConfValue is the session value of a conf the line pins or knows: the
// query's spark_conf, else the line's default; "" when the line has no
// such conf (or no version is given).
func (q *Query) ConfValue(key string) string {
	row, ok := sparkver.Lookup(q.SparkVersion)
	if !ok {
		return ""
	}
	c, ok := row.Conf(key)
	if !ok {
		return ""
	}
	if v, ok := q.SparkConf[key]; ok {
		return v
	}
	return c.Value
}
