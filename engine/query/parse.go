package query

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/internal/duration"
	suggestpkg "github.com/dedupsim/dedupsim/internal/suggest"
	"github.com/dedupsim/dedupsim/internal/yamlstrict"
)

// The schema, one list of field names per mapping. The order is the order
// used when listing known fields in an error.
var (
	topFields       = []string{"name", "dedup", "watermark", "sources", "shuffle_partitions", "state_store", "watermark_policy", "no_data_batches", "sink", "drop_future_events", "schema", "case_sensitive", "checkpoint_format_version", "spark_version", "spark_conf", "trigger"}
	triggerFields   = []string{"real_time"}
	dedupFields     = []string{"api", "keys"}
	watermarkFields = []string{"column", "delay"}
	sourceFields    = []string{"name", "watermark"}
	sinkFields      = []string{"kind", "app_id", "generate_app_id", "lookback", "keys"}

	apis        = []string{string(DropDuplicates), string(DropDuplicatesWithinWatermark), string(BatchDropDuplicates)}
	sinkKinds   = sink.Names()
	stateStores = []string{StateStoreMemory, StateStorePebble}
	policies    = []string{PolicyMin, PolicyMax}

	// misplacedTop points a top-level field that belongs to a section at
	// that section: `keys:` written flush left is a common slip.
	misplacedTop = map[string]string{
		"api": "dedup.api", "keys": "dedup.keys",
		"column": "watermark.column", "delay": "watermark.delay",
		"kind": "sink.kind", "app_id": "sink.app_id", "lookback": "sink.lookback",
	}
)

// Spark's messages, quoted so that users can search for them.
const (
	msgWithinWatermarkNoWatermark = "dropDuplicatesWithinWatermark is not supported on streaming DataFrames/DataSets without watermark"
	msgMultipleEventTimeColumns   = "More than one event time columns are available. Please ensure there is at most one event time column per stream."
)

// maxAliasDepth bounds alias chasing; go-yaml v3 already rejects cycles, this
// only keeps the walker total on any node graph.
const maxAliasDepth = 64

type parser struct {
	file string
}

// field is one key/value pair of a YAML mapping.
type field struct {
	name string
	key  *yaml.Node
	val  *yaml.Node
}

func (p *parser) errAt(n *yaml.Node, path, format string, args ...any) *Error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: p.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) parse(data []byte) (q *Query, err error) {
	// go-yaml v3 turns its own failures into errors, but a bug in it must still
	// not take the process down: the input is user-supplied.
	defer func() {
		if r := recover(); r != nil {
			q, err = nil, &Error{File: p.file, Msg: fmt.Sprintf("cannot parse YAML: %v", r)}
		}
	}()
	doc, err := yamlstrict.One(data)
	var second *yamlstrict.SecondDocError
	switch {
	case errors.Is(err, yamlstrict.ErrEmpty):
		return nil, &Error{File: p.file, Msg: "empty document: want a query (at least dedup.api)"}
	case errors.As(err, &second):
		return nil, &Error{File: p.file, Line: second.Line, Msg: "more than one YAML document: want exactly one query"}
	case err != nil:
		return nil, p.yamlError(err, data)
	}
	if err := p.noTags(doc, 0); err != nil {
		return nil, err
	}
	root := doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, &Error{File: p.file, Msg: "empty document: want a query (at least dedup.api)"}
		}
		root = root.Content[0]
	}
	root, err = p.resolve(root, "")
	if err != nil {
		return nil, err
	}
	if yamlstrict.IsNull(root) {
		return nil, p.errAt(root, "", "empty document: want a query (at least dedup.api)")
	}
	return p.query(root)
}

// noTags refuses explicit YAML tags (`api: !!int dropDuplicates`,
// `!custom x`): every field has one type, written plainly, and a tag would
// either be ignored (a string field reads the text) or change a value's
// meaning behind the reader's back.
func (p *parser) noTags(n *yaml.Node, depth int) error {
	if n == nil || depth > maxAliasDepth*16 {
		return nil
	}
	if n.Style&yaml.TaggedStyle != 0 {
		return p.errAt(n, "", "YAML tag %s is not supported: write the value without a tag", n.Tag)
	}
	if n.Kind == yaml.AliasNode {
		return nil // its target is checked where it is defined
	}
	for _, c := range n.Content {
		if err := p.noTags(c, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// yamlLine matches go-yaml v3's "yaml: line N: message". The module is
// go.yaml.in/yaml/v3 (the maintained home of the archived gopkg.in/yaml.v3,
// byte-identical messages); v4 adds "(value: N)" to some messages and moves
// some lines, which the query and scenario corpora assert, so stay on v3.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlAnchor matches go-yaml v3's "unknown anchor" error, which has no line.
var yamlAnchor = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)

// yamlError rewrites a go-yaml v3 syntax error into file:line form. A few
// go-yaml v3 errors carry no line; for those the line is found in data.
func (p *parser) yamlError(err error, data []byte) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: p.file, Line: line, Msg: "invalid YAML: " + m[2]}
	}
	return &Error{File: p.file, Line: lineOfYAMLError(msg, data), Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// lineOfYAMLError locates the go-yaml v3 errors that come without a line; 0
// when it cannot.
func lineOfYAMLError(msg string, data []byte) int {
	at := -1
	switch {
	case yamlAnchor.MatchString(msg):
		// The first use of the alias is where the reader should look.
		at = bytes.Index(data, []byte("*"+yamlAnchor.FindStringSubmatch(msg)[1]))
	case strings.Contains(msg, "control characters"):
		at = bytes.IndexFunc(data, func(r rune) bool {
			return (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f
		})
	case strings.Contains(msg, "UTF-8"):
		for i := 0; i < len(data); {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				at = i
				break
			}
			i += size
		}
	case strings.Contains(msg, "end of stream"):
		at = len(bytes.TrimRight(data, "\n"))
	case strings.Contains(msg, "incompatible YAML document"):
		at = bytes.Index(data, []byte("%YAML"))
	}
	if at < 0 {
		return 0
	}
	return 1 + bytes.Count(data[:at], []byte("\n"))
}

// resolve follows aliases to the node they name.
func (p *parser) resolve(n *yaml.Node, path string) (*yaml.Node, error) {
	orig := n
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i == maxAliasDepth {
			return nil, p.errAt(orig, path, "alias chain too long")
		}
		n = n.Alias
	}
	if n == nil {
		return nil, p.errAt(orig, path, "unresolved alias")
	}
	return n, nil
}

// mapping checks that n is a mapping and returns its fields in document
// order. Unknown and repeated field names are errors.
func (p *parser) mapping(n *yaml.Node, path string, known []string) ([]field, error) {
	n, err := p.resolve(n, path)
	if err != nil {
		return nil, err
	}
	if n.Kind != yaml.MappingNode {
		return nil, p.errAt(n, path, "want a mapping with fields %s, got %s", strings.Join(known, ", "), yamlstrict.Typed(n))
	}
	fields := make([]field, 0, len(n.Content)/2)
	keys := yamlstrict.NewKeys(known)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, err := p.resolve(n.Content[i], path)
		if err != nil {
			return nil, err
		}
		if k.Kind != yaml.ScalarNode {
			return nil, p.errAt(k, path, "field names must be plain strings, got %s", yamlstrict.Typed(k))
		}
		if k.ShortTag() == "!!merge" {
			return nil, p.errAt(k, path, "YAML merge keys (<<) are not supported; write the fields out")
		}
		name := k.Value
		switch problem, first := keys.Check(name, k.Line); problem {
		case yamlstrict.Unknown:
			return nil, p.errAt(k, path, "unknown field %q%s", name, unknownHint(keys, name, path, known))
		case yamlstrict.Twice:
			return nil, p.errAt(k, yamlstrict.Join(path, name), "field given twice (first at line %d)", first)
		}
		fields = append(fields, field{name: name, key: k, val: n.Content[i+1]})
	}
	return fields, nil
}

func unknownHint(keys *yamlstrict.Keys, name, path string, known []string) string {
	if s := keys.Suggest(name); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	if path == "" {
		if where, ok := misplacedTop[name]; ok {
			return fmt.Sprintf(" (did you mean %s? %q belongs under %s)", where, name, strings.SplitN(where, ".", 2)[0])
		}
	}
	return " (known fields: " + strings.Join(known, ", ") + ")"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// scalar returns the text of a non-null scalar. String-valued fields take the
// text exactly as written, so `name: 2024-01-01` or `keys: [1]` mean the
// strings "2024-01-01" and "1" rather than a date and a number.
func (p *parser) scalar(n *yaml.Node, path, want string) (*yaml.Node, error) {
	n, err := p.resolve(n, path)
	if err != nil {
		return nil, err
	}
	if n.Kind != yaml.ScalarNode || yamlstrict.IsNull(n) {
		return nil, p.errAt(n, path, "want %s, got %s", want, yamlstrict.Typed(n))
	}
	return n, nil
}

func (p *parser) str(n *yaml.Node, path string) (string, error) {
	s, err := p.scalar(n, path, "a string")
	if err != nil {
		return "", err
	}
	return s.Value, nil
}

func (p *parser) nonEmptyStr(n *yaml.Node, path string) (string, error) {
	s, err := p.str(n, path)
	if err != nil {
		return "", err
	}
	if s == "" {
		return "", p.errAt(n, path, "must not be empty")
	}
	return s, nil
}

// enum reads one of allowed; anything else, including another spelling or
// case, is an error listing the choices.
func (p *parser) enum(n *yaml.Node, path, what string, allowed []string) (string, error) {
	s, err := p.str(n, path)
	if err != nil {
		return "", err
	}
	if !contains(allowed, s) {
		return "", p.errAt(n, path, "unknown %s %q (want %s)", what, s, suggestpkg.OrList(allowed))
	}
	return s, nil
}

func (p *parser) integer(n *yaml.Node, path string) (int64, error) {
	s, err := p.scalar(n, path, "an integer")
	if err != nil {
		return 0, err
	}
	var v int64
	if s.ShortTag() != "!!int" || s.Decode(&v) != nil {
		return 0, p.errAt(s, path, "want an integer, got %s", yamlstrict.Typed(s))
	}
	return v, nil
}

func (p *parser) boolean(n *yaml.Node, path string) (bool, error) {
	s, err := p.scalar(n, path, "true or false")
	if err != nil {
		return false, err
	}
	var v bool
	if s.ShortTag() != "!!bool" || s.Decode(&v) != nil {
		return false, p.errAt(s, path, "want true or false, got %s", yamlstrict.Typed(s))
	}
	return v, nil
}

// columns reads a list of distinct, non-empty column names.
func (p *parser) columns(n *yaml.Node, path string) ([]string, error) {
	n, err := p.resolve(n, path)
	if err != nil {
		return nil, err
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errAt(n, path, "want a list of column names (e.g. [id]), got %s", yamlstrict.Typed(n))
	}
	if len(n.Content) > MaxColumns {
		return nil, p.errAt(n, path, "%d columns: at most %d", len(n.Content), MaxColumns)
	}
	cols := make([]string, 0, len(n.Content))
	seen := make(map[string]bool, len(n.Content))
	for i, item := range n.Content {
		ipath := fmt.Sprintf("%s[%d]", path, i)
		c, err := p.nonEmptyStr(item, ipath)
		if err != nil {
			return nil, err
		}
		if len(c) > MaxNameBytes {
			return nil, p.errAt(item, ipath, "column name of %d bytes: at most %d", len(c), MaxNameBytes)
		}
		if seen[c] {
			return nil, p.errAt(item, ipath, "column %q listed twice", c)
		}
		seen[c] = true
		cols = append(cols, c)
	}
	return cols, nil
}

// delay reads an interval that must not be negative.
func (p *parser) delay(n *yaml.Node, path string) (int64, error) {
	s, err := p.scalar(n, path, `an interval such as "10 seconds" or "10s"`)
	if err != nil {
		return 0, err
	}
	ms, err := ParseDelay(s.Value)
	if err != nil {
		return 0, p.errAt(s, path, "%v", err)
	}
	return ms, nil
}

// watermark reads a {column, delay} mapping; colNode is where the column
// is written, for errors that compare columns across sources.
func (p *parser) watermark(key, n *yaml.Node, path string) (w *Watermark, colNode *yaml.Node, err error) {
	fields, err := p.mapping(n, path, watermarkFields)
	if err != nil {
		return nil, nil, err
	}
	w = &Watermark{}
	haveDelay := false
	for _, f := range fields {
		fpath := yamlstrict.Join(path, f.name)
		switch f.name {
		case "column":
			if w.Column, err = p.nonEmptyStr(f.val, fpath); err != nil {
				return nil, nil, err
			}
			colNode = f.val
		case "delay":
			if w.DelayMs, err = p.delay(f.val, fpath); err != nil {
				return nil, nil, err
			}
			haveDelay = true
		}
	}
	if colNode == nil {
		return nil, nil, p.errAt(key, path, `missing required field "column" (the event-time column of withWatermark)`)
	}
	if !haveDelay {
		return nil, nil, p.errAt(key, path, `missing required field "delay" (e.g. delay: 10 seconds)`)
	}
	return w, colNode, nil
}

// sourceNodes is where a source and its watermark column are written.
type sourceNodes struct {
	item, column *yaml.Node
}

func (p *parser) sources(n *yaml.Node, path string) ([]Source, []sourceNodes, error) {
	n, err := p.resolve(n, path)
	if err != nil {
		return nil, nil, err
	}
	if n.Kind != yaml.SequenceNode {
		return nil, nil, p.errAt(n, path, "want a list of sources ({name, watermark}), got %s", yamlstrict.Typed(n))
	}
	if len(n.Content) == 0 {
		return nil, nil, p.errAt(n, path, "want at least one source")
	}
	if len(n.Content) > MaxSources {
		return nil, nil, p.errAt(n, path, "%d sources: at most %d", len(n.Content), MaxSources)
	}
	srcs := make([]Source, 0, len(n.Content))
	// Each source's node and watermark column node (nil without a
	// watermark), for errors found once all sources are known.
	nodes := make([]sourceNodes, 0, len(n.Content))
	for i, item := range n.Content {
		ipath := fmt.Sprintf("%s[%d]", path, i)
		fields, err := p.mapping(item, ipath, sourceFields)
		if err != nil {
			return nil, nil, err
		}
		var src Source
		var colNode *yaml.Node
		haveName := false
		for _, f := range fields {
			fpath := yamlstrict.Join(ipath, f.name)
			switch f.name {
			case "name":
				if src.Name, err = p.nonEmptyStr(f.val, fpath); err != nil {
					return nil, nil, err
				}
				for j := range srcs {
					if srcs[j].Name == src.Name {
						return nil, nil, p.errAt(f.val, fpath, "source name %q used twice (also %s[%d])", src.Name, path, j)
					}
				}
				haveName = true
			case "watermark":
				if src.Watermark, colNode, err = p.watermark(f.key, f.val, fpath); err != nil {
					return nil, nil, err
				}
			}
		}
		if !haveName {
			return nil, nil, p.errAt(item, ipath, `missing required field "name"`)
		}
		srcs = append(srcs, src)
		nodes = append(nodes, sourceNodes{item: item, column: colNode})
	}
	return srcs, nodes, nil
}

func (p *parser) query(root *yaml.Node) (*Query, error) {
	fields, err := p.mapping(root, "", topFields)
	if err != nil {
		return nil, err
	}
	q := &Query{
		ShufflePartitions: DefaultShufflePartitions,
		StateStore:        StateStoreMemory,
		WatermarkPolicy:   PolicyMin,
		NoDataBatches:     true,
		Sink:              Sink{Kind: sink.KindForeachBatch},
	}
	// Key nodes of the fields that cross-field checks point at.
	var dedupKey, apiNode, wmKey, sourcesKey, sinkKey, futureKey, schemaKey, formatKey, storeKey *yaml.Node
	var sinkNodes sinkFieldNodes
	var topWM *Watermark
	var srcNodes []sourceNodes
	for _, f := range fields {
		switch f.name {
		case "name":
			q.Name, err = p.str(f.val, f.name)
		case "dedup":
			dedupKey = f.key
			apiNode, err = p.dedup(f.val, q)
		case "watermark":
			wmKey = f.key
			topWM, _, err = p.watermark(f.key, f.val, f.name)
		case "sources":
			sourcesKey = f.key
			q.Sources, srcNodes, err = p.sources(f.val, f.name)
		case "shuffle_partitions":
			var n int64
			if n, err = p.integer(f.val, f.name); err == nil && (n < 1 || n > MaxShufflePartitions) {
				err = p.errAt(f.val, f.name, "must be from 1 to %d, got %d", MaxShufflePartitions, n)
			}
			q.ShufflePartitions = int(n)
		case "state_store":
			storeKey = f.key
			q.StateStore, err = p.enum(f.val, f.name, "state store", stateStores)
		case "checkpoint_format_version":
			formatKey = f.key
			q.at().formatLine = f.key.Line
			var n int64
			if n, err = p.integer(f.val, f.name); err == nil && n != 1 && n != 2 {
				err = p.errAt(f.val, f.name, "must be 1 or 2 (spark.sql.streaming.stateStore.checkpointFormatVersion), got %d", n)
			}
			q.CheckpointFormat = int(n)
		case "trigger":
			err = p.trigger(f.val, q)
		case "spark_version":
			err = p.sparkVersion(f.val, q)
		case "spark_conf":
			err = p.sparkConf(f.key, f.val, q)
		case "watermark_policy":
			q.WatermarkPolicy, err = p.enum(f.val, f.name, "watermark policy", policies)
		case "no_data_batches":
			q.NoDataBatches, err = p.boolean(f.val, f.name)
		case "case_sensitive":
			q.CaseSensitive, err = p.boolean(f.val, f.name)
		case "sink":
			sinkKey = f.key
			sinkNodes, err = p.sink(f.val, &q.Sink)
		case "schema":
			schemaKey = f.key
			q.Schema, err = p.schema(f.val)
		case "drop_future_events":
			futureKey = f.key
			var sc *yaml.Node
			if sc, err = p.scalar(f.val, f.name, `an interval such as "1 hour"`); err == nil {
				var ms int64
				if ms, err = ParseDelay(sc.Value); err != nil {
					err = p.errAt(sc, f.name, "%v", err)
				}
				q.DropFutureEventsMs, q.DropFutureEvents = ms, true
			}
		}
		if err != nil {
			return nil, err
		}
	}

	if dedupKey == nil {
		return nil, p.errAt(root, "", `missing required field "dedup" (e.g. dedup: {api: dropDuplicates, keys: [id]})`)
	}
	if apiNode == nil {
		return nil, p.errAt(dedupKey, "dedup", `missing required field "api" (want %s)`, suggestpkg.OrList(apis))
	}
	if wmKey != nil && sourcesKey != nil {
		return nil, p.errAt(sourcesKey, "sources", "cannot be combined with the top-level watermark (line %d): give each source its own watermark", wmKey.Line)
	}
	if sourcesKey == nil {
		q.Sources = []Source{{Name: DefaultSourceName, Watermark: topWM}}
	}
	if err := p.checkSources(q, srcNodes); err != nil {
		return nil, err
	}
	if q.API == DropDuplicatesWithinWatermark && q.EventTimeColumn() == "" {
		return nil, p.errAt(apiNode, "dedup.api", "%s (add a top-level watermark: {column, delay} or one per source)", msgWithinWatermarkNoWatermark)
	}
	if err := p.checkSink(q, sinkKey, sinkNodes); err != nil {
		return nil, err
	}
	if err := p.checkSchema(q, schemaKey); err != nil {
		if err.Analysis != "" {
			return q, err // the query, for a harness that runs it on Spark (Parse)
		}
		return nil, err
	}
	if q.RealTimeMs > 0 {
		q.pos.file = p.file
		q.pos.apiLine = apiNode.Line
		if sinkKey != nil {
			q.pos.sinkLine = sinkKey.Line
		}
		if err := q.realTimeDefaults(storeKey, formatKey); err != nil {
			return nil, err
		}
	}
	if q.CheckpointFormat == 2 && q.StateStore != StateStorePebble {
		return nil, p.errAt(formatKey, "checkpoint_format_version", "2 needs state_store: pebble (format v2 is Spark's RocksDB provider with changelog checkpointing)")
	}
	if futureKey != nil && q.EventTimeColumn() == "" {
		return nil, p.errAt(futureKey, "drop_future_events", "needs a watermark: the filter compares the event-time column with processing time")
	}
	if !q.SparkVersion.IsZero() {
		q.pos.file = p.file
		if err := q.CheckSparkVersion(); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// trigger reads `trigger: {real_time: INTERVAL}`: Trigger.RealTime's
// batch duration. Spark refuses a month-based interval (a month has no
// fixed length in ms) and one under minBatchDuration (checkRealTime).
func (p *parser) trigger(n *yaml.Node, q *Query) error {
	fields, err := p.mapping(n, "trigger", triggerFields)
	if err != nil {
		return err
	}
	for _, f := range fields {
		sc, err := p.scalar(f.val, "trigger.real_time", `an interval such as "5 minutes"`)
		if err != nil {
			return err
		}
		if monthBased.MatchString(sc.Value) {
			return p.errAt(sc, "trigger.real_time", "%q is month-based: Trigger.RealTime takes a fixed duration (seconds, minutes, hours, days)", sc.Value)
		}
		micros, err := duration.Interval(sc.Value)
		if err != nil {
			return p.errAt(sc, "trigger.real_time", "%v", err)
		}
		if micros < 1000 {
			return p.errAt(sc, "trigger.real_time", "must be a positive interval, got %q", sc.Value)
		}
		q.RealTimeMs = micros / 1000
		q.at().rtLine = f.key.Line
	}
	if q.RealTimeMs == 0 {
		return p.errAt(n, "trigger", `missing required field "real_time" (e.g. trigger: {real_time: 5 minutes})`)
	}
	return nil
}

// monthBased finds a month or year unit in an interval.
var monthBased = regexp.MustCompile(`(?i)\b(months?|years?)\b`)

func (p *parser) dedup(n *yaml.Node, q *Query) (apiNode *yaml.Node, err error) {
	fields, err := p.mapping(n, "dedup", dedupFields)
	if err != nil {
		return nil, err
	}
	for _, f := range fields {
		fpath := yamlstrict.Join("dedup", f.name)
		switch f.name {
		case "api":
			var api string
			if api, err = p.enum(f.val, fpath, "api", apis); err != nil {
				return nil, err
			}
			q.API = API(api)
			apiNode = f.val
		case "keys":
			if q.Keys, err = p.columns(f.val, fpath); err != nil {
				return nil, err
			}
		}
	}
	return apiNode, nil
}

// checkSources enforces what Spark's union of watermarked streams needs of
// the sources (multi-source form only; the single-source form cannot break
// these rules).
func (p *parser) checkSources(q *Query, nodes []sourceNodes) error {
	if len(nodes) == 0 {
		return nil
	}
	var first *Source
	firstIdx := -1
	for i := range q.Sources {
		s := &q.Sources[i]
		if s.Watermark == nil {
			continue
		}
		if first == nil {
			first, firstIdx = s, i
			continue
		}
		if s.Watermark.Column != first.Watermark.Column {
			return p.errAt(nodes[i].column, fmt.Sprintf("sources[%d].watermark.column", i),
				"%s (source %q watermarks %q, source %q watermarks %q)",
				msgMultipleEventTimeColumns, first.Name, first.Watermark.Column, s.Name, s.Watermark.Column)
		}
	}
	// Spark's Union takes each output column, with its metadata, from its
	// first child. If that child has no withWatermark, the dedup sees no
	// event-time column at all: no late filtering, no eviction, and
	// dropDuplicatesWithinWatermark is rejected, even though a later source's
	// watermark still advances. That is almost surely not what was meant, and
	// supporting it would make "the event-time column" depend on the source,
	// so it is refused with the fix.
	if first != nil && firstIdx != 0 {
		return p.errAt(nodes[0].item, "sources[0]",
			"source %q has no watermark but source %q has one; Spark's union takes the event-time column from its first input, so the dedup would see no watermark: give %q a watermark or list a watermarked source first",
			q.Sources[0].Name, first.Name, q.Sources[0].Name)
	}
	return nil
}

// sinkFieldNodes remembers where each sink field was written, for checks that
// need the sink kind and the watermark.
type sinkFieldNodes struct {
	kind, appID, genAppID, lookback, keys *yaml.Node
}

func (p *parser) sink(n *yaml.Node, s *Sink) (sinkFieldNodes, error) {
	var nodes sinkFieldNodes
	fields, err := p.mapping(n, "sink", sinkFields)
	if err != nil {
		return nodes, err
	}
	for _, f := range fields {
		fpath := yamlstrict.Join("sink", f.name)
		switch f.name {
		case "kind":
			var k string
			k, err = p.enum(f.val, fpath, "sink kind", sinkKinds)
			s.Kind = sink.Kind(k)
			nodes.kind = f.key
		case "app_id":
			s.AppID, err = p.nonEmptyStr(f.val, fpath)
			nodes.appID = f.key
		case "generate_app_id":
			s.GenerateAppID, err = p.boolean(f.val, fpath)
			nodes.genAppID = f.key
		case "lookback":
			var sc *yaml.Node
			if sc, err = p.scalar(f.val, fpath, `an interval such as "7 days"`); err == nil {
				var micros int64
				if micros, err = duration.Interval(sc.Value); err == nil && micros < 0 {
					err = fmt.Errorf("lookback (%s) should not be negative", sc.Value)
				}
				if err != nil {
					err = p.errAt(sc, fpath, "%v", err)
				}
				s.LookbackMs, s.HasLookback = micros/1000, true
			}
			nodes.lookback = f.key
		case "keys":
			s.Keys, err = p.columns(f.val, fpath)
			nodes.keys = f.key
		}
		if err != nil {
			return nodes, err
		}
	}
	return nodes, nil
}

func (p *parser) checkSink(q *Query, sinkKey *yaml.Node, nodes sinkFieldNodes) error {
	if sinkKey == nil {
		return nil
	}
	kind := q.Sink.Kind
	d, _ := sink.Lookup(kind) // the enum check admitted only known kinds
	// notTaken refuses a sink field the kind does not take, naming the
	// kinds that do.
	notTaken := func(n *yaml.Node, option string) error {
		if n == nil || d.Takes(option) {
			return nil
		}
		return p.errAt(n, "sink."+option, "only for sink kind %s (kind is %s)", suggestpkg.OrList(sink.Taking(option)), kind)
	}
	if err := notTaken(nodes.appID, "app_id"); err != nil {
		return err
	}
	if nodes.genAppID != nil {
		if err := notTaken(nodes.genAppID, "generate_app_id"); err != nil {
			return err
		}
		if nodes.appID != nil && q.Sink.GenerateAppID {
			return p.errAt(nodes.genAppID, "sink.generate_app_id", "cannot be combined with app_id (line %d)", nodes.appID.Line)
		}
	}
	if nodes.lookback != nil {
		if err := notTaken(nodes.lookback, "lookback"); err != nil {
			return err
		}
		if q.EventTimeColumn() == "" {
			return p.errAt(nodes.lookback, "sink.lookback", "needs a watermark: the lookback compares the table's event-time column, and the query has none")
		}
	}
	return notTaken(nodes.keys, "keys")
}
