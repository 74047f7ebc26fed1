package progress

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/internal/codec"
)

// MaxLine bounds one line (Spark's event log writes a SQL plan on one line;
// 64 MiB is far beyond any plan). A longer line is a bad line, skipped to
// its end without being held.
const MaxLine = 64 << 20

// marker starts the driver log's progress message (ProgressReporter).
const marker = "Streaming query made progress: "

// eventPrefix is the Jackson type name of the streaming listener events in
// an event log (A.2c).
const eventPrefix = "org.apache.spark.sql.streaming.StreamingQueryListener$"

// InputError is an input that cannot be read at all (missing, a folder
// that is no event log, a broken compressed stream): exit 2.
type InputError struct {
	Path string
	Err  error
}

func (e *InputError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Read reads every input and groups the records per query and run. An
// input that yields no progress record is an InputError: a verdict is only
// given over records read, and one input read as nothing (a format not
// recognised, a log of another kind) would leave the verdict to the others.
func Read(paths []string) (*Log, error) {
	c := newCollector()
	for _, p := range paths {
		c.firstBad = ""
		f, err := c.readPath(p)
		if err == nil {
			err = c.noRecord(f)
		}
		if err != nil {
			return nil, &InputError{Path: p, Err: err}
		}
		c.log.Files = append(c.log.Files, f)
	}
	c.group()
	return &c.log, nil
}

func newCollector() *collector {
	return &collector{seen: map[recordKey]bool{}, batches: map[batchKey]int{}, strs: map[string]string{}}
}

// noRecord refuses an input that yielded no progress record, saying what
// it was read as.
func (c *collector) noRecord(f File) error {
	if f.Records > 0 {
		return nil
	}
	what := fmt.Sprintf("read as %s", f.Shape)
	if f.Codec != "" {
		what += " (" + f.Codec + ")"
	}
	what += fmt.Sprintf(": %s, %s, %s, %s", count(f.Lines, "line"), count(f.Bad, "bad line"), count(f.Events, "listener event"), count(f.Other, "other line"))
	if c.firstBad != "" {
		what += "; the first bad line: " + c.firstBad
	}
	return fmt.Errorf("no StreamingQueryProgress record in this input (%s)", what)
}

// count is n and what, with an s for any n but 1.
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// ReadFrom reads one input from r, named name in its messages (a file's
// bytes, for tests and fuzzing; Read opens files and folders).
func ReadFrom(name string, r io.Reader) (*Log, error) {
	c := newCollector()
	f := File{Path: name}
	err := c.readStream(&f, name, r)
	if err == nil {
		err = c.noRecord(f)
	}
	if err != nil {
		return nil, &InputError{Path: name, Err: err}
	}
	c.log.Files = append(c.log.Files, f)
	c.group()
	return &c.log, nil
}

type recordKey struct {
	id, run string
	batch   int64
	ts      int64
	idle    bool
}

// collector gathers records and events over every input.
type collector struct {
	log     Log
	records []Progress
	events  []Event
	seen    map[recordKey]bool
	batches map[batchKey]int // executed batch -> its index in records
	strs    map[string]string
	// firstBad is the current input's first bad line (where: reason).
	firstBad string
	// plans are the dedup plans of the event logs, by run id (plan.go).
	plans map[string]Plan
}

func (c *collector) readPath(path string) (File, error) {
	f := File{Path: path}
	st, err := os.Stat(path)
	if err != nil {
		return f, err
	}
	if st.IsDir() {
		return c.readRolling(path)
	}
	r, err := openRegular(path)
	if err != nil {
		return f, err
	}
	defer r.Close()
	f.InProgress = strings.HasSuffix(path, ".inprogress")
	err = c.readStream(&f, path, r)
	return f, err
}

// readRolling reads a rolling event log folder: events_<index>_<appId>[.codec]
// in index order (RollingEventLogFilesWriter), ignoring the appstatus marker.
func (c *collector) readRolling(dir string) (File, error) {
	f := File{Path: dir, Shape: EventLog}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return f, err
	}
	type part struct {
		idx  int
		name string
	}
	var parts []part
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "events_")
		if !ok || e.IsDir() {
			continue
		}
		i := strings.IndexByte(rest, '_')
		n, err := strconv.Atoi(rest[:max(i, 0)])
		if i < 0 || err != nil || n < 1 {
			return f, fmt.Errorf("%s: not an event log part name (want events_<index>_<appId>[.codec])", e.Name())
		}
		parts = append(parts, part{n, e.Name()})
	}
	if len(parts) == 0 {
		return f, errors.New("a folder, and not a rolling event log (no events_<index>_<appId> files): give files or an eventlog_v2_* folder")
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].idx < parts[j].idx })
	f.InProgress = rollingInProgress(dir, strings.TrimPrefix(filepath.Base(dir), rollingPrefix))
	for i, p := range parts {
		if p.idx != i+1 {
			return f, fmt.Errorf("event log part %d is missing (found %s)", i+1, p.name)
		}
		// Only the last part of a running application is being written.
		sub := File{Path: filepath.Join(dir, p.name), InProgress: f.InProgress && i == len(parts)-1}
		r, err := openRegular(sub.Path)
		if err != nil {
			return f, fmt.Errorf("%s: %w", p.name, err)
		}
		err = c.readStream(&sub, sub.Path, r)
		r.Close()
		if err != nil {
			return f, fmt.Errorf("%s: %w", p.name, err)
		}
		f.Codec, f.Parts, f.CutShort = sub.Codec, f.Parts+1, sub.CutShort
		f.Lines += sub.Lines
		f.Records += sub.Records
		f.Events += sub.Events
		f.Bad += sub.Bad
		f.Other += sub.Other
	}
	return f, nil
}

// endReader notes when the file it reads has ended.
type endReader struct {
	r   io.Reader
	eof bool
}

func (e *endReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		e.eof = true
	}
	return n, err
}

// cutShortReader ends a compressed stream of an event log still being
// written where its file ends: a decoder error once the whole file was
// read is a last block not written yet (Spark's history server replays
// such logs as maybe truncated), not damage; before that it stays an
// error.
type cutShortReader struct {
	r   io.Reader
	raw *endReader
	f   *File
}

func (c *cutShortReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF && c.raw.eof {
		c.f.CutShort = true
		return n, io.EOF
	}
	return n, err
}

// maxLayers bounds the codecs stacked on one input (a gzip of a zstd
// event log is two; more is no log anyone keeps).
const maxLayers = 3

// sniffLen is how many bytes are looked at to tell a codec or binary data.
const sniffLen = 4096

func (c *collector) readStream(f *File, path string, raw io.Reader) error {
	var tail *endReader
	if f.InProgress {
		tail = &endReader{r: raw}
		raw = tail
	}
	in := bufio.NewReaderSize(raw, 1<<16)
	var names []string
	for layer := 0; ; layer++ {
		head, err := in.Peek(16)
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return err
		}
		cd, err := codec.Sniff(head)
		if err != nil {
			return err
		}
		if cd == codec.None {
			break
		}
		if layer == maxLayers {
			return fmt.Errorf("more than %d layers of compression (%s): not a log", maxLayers, strings.Join(names, "+"))
		}
		names = append(names, string(cd))
		dr, err := codec.NewReader(in, cd)
		if err != nil {
			return err
		}
		defer dr.Close()
		var dec io.Reader = dr
		if tail != nil {
			dec = &cutShortReader{r: dr, raw: tail, f: f}
		}
		in = bufio.NewReaderSize(dec, 1<<16)
	}
	f.Codec = strings.Join(names, "+")
	// Text logs and JSON hold no NUL byte: one in the first bytes is a
	// binary or unknown compressed format (or UTF-16), never read as a
	// driver log of no records.
	head, err := in.Peek(sniffLen)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return err
	}
	if i := bytes.IndexByte(head, 0); i >= 0 {
		what := "the file"
		if f.Codec != "" {
			what = "the " + f.Codec + " stream's content"
		}
		return fmt.Errorf("binary data (a NUL byte at byte %d of %s): not a text log or JSON; an unknown compressed or binary format, or UTF-16, is not read", i, what)
	}
	first, ok, err := firstByte(in)
	if err != nil {
		return err
	}
	switch {
	case !ok:
		f.Shape = Empty
		return nil
	case first == '[':
		f.Shape = JSONArray
		return c.readArray(f, path, in)
	case first == '{':
		f.Shape = JSONLines
	default:
		f.Shape = DriverLog
	}
	return c.readLines(f, path, in)
}

// firstByte peeks the first byte that is not white space or a UTF-8 byte
// order mark (ok false: the stream holds none). A stream error (a corrupt
// compressed file) is returned.
func firstByte(in *bufio.Reader) (byte, bool, error) {
	if bom, err := in.Peek(3); err == nil && string(bom) == "\xEF\xBB\xBF" {
		in.Discard(3)
	}
	for {
		b, err := in.ReadByte()
		if err == io.EOF {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			return b, true, in.UnreadByte()
		}
	}
}

// lineReader yields lines of at most MaxLine bytes; a longer one is
// reported as too long and skipped.
type lineReader struct {
	in   *bufio.Reader
	n    int
	buf  []byte
	long bool
}

func (l *lineReader) next() ([]byte, error) {
	l.buf = l.buf[:0]
	l.long = false
	for {
		frag, err := l.in.ReadSlice('\n')
		if len(l.buf)+len(frag) > MaxLine {
			l.long = true
		} else {
			l.buf = append(l.buf, frag...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(l.buf) == 0 && !l.long {
			return nil, io.EOF
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		l.n++
		return bytes.TrimRight(l.buf, "\r\n"), nil
	}
}

func (c *collector) badLine(f *File, where, reason string, text []byte) {
	f.Bad++
	c.log.BadTotal++
	if c.firstBad == "" {
		c.firstBad = where + ": " + reason
	}
	if len(c.log.Bad) < MaxBad {
		c.log.Bad = append(c.log.Bad, BadLine{Where: where, Reason: reason, Text: quote(text)})
	}
}

func (c *collector) readLines(f *File, path string, in *bufio.Reader) error {
	lr := &lineReader{in: in}
	for {
		line, err := lr.next()
		if err == io.EOF {
			f.Lines = lr.n
			return nil
		}
		if err != nil {
			return err
		}
		where := fmt.Sprintf("%s:%d", path, lr.n)
		if lr.long {
			c.badLine(f, where, fmt.Sprintf("line longer than %d MiB", MaxLine>>20), line)
			continue
		}
		t := bytes.TrimSpace(line)
		switch {
		case len(t) == 0:
		case t[0] == '{':
			c.jsonLine(f, where, t)
		case bytes.Contains(t, []byte(marker)):
			c.logRecord(f, lr, path, where, t)
		case f.Shape == JSONLines:
			c.badLine(f, where, "not a JSON object (a JSON Lines file holds one object per line)", t)
		default:
			f.Other++
		}
	}
}

// logRecord reads the JSON after the marker: on the line itself (compact)
// or spread over the following lines until its braces balance.
func (c *collector) logRecord(f *File, lr *lineReader, path, where string, line []byte) {
	if f.Shape == JSONLines {
		f.Shape = DriverLog
	}
	js := bytes.TrimSpace(line[bytes.Index(line, []byte(marker))+len(marker):])
	var b braces
	b.feed(js)
	buf := append([]byte(nil), js...)
	for !b.closed() {
		if len(buf) > maxRecord || !b.open() {
			c.badLine(f, where, "the progress after \"Streaming query made progress:\" is not one JSON object", line)
			return
		}
		next, err := lr.next()
		if err != nil {
			c.badLine(f, where, "the progress JSON is cut off at the end of the file", line)
			return
		}
		b.feed(next)
		buf = append(append(buf, '\n'), next...)
	}
	c.progressJSON(f, where, buf)
}

// braces tracks JSON nesting, strings and escapes over a stream of lines.
type braces struct {
	depth         int
	started, str  bool
	esc, overflow bool
}

func (b *braces) feed(p []byte) {
	for _, ch := range p {
		switch {
		case b.esc:
			b.esc = false
		case b.str && ch == '\\':
			b.esc = true
		case ch == '"':
			b.str = !b.str
		case b.str:
		case ch == '{' || ch == '[':
			b.depth++
			b.started = true
		case ch == '}' || ch == ']':
			b.depth--
			if b.depth < 0 {
				b.overflow = true
			}
		}
	}
}

func (b *braces) closed() bool { return b.started && b.depth == 0 && !b.str }
func (b *braces) open() bool   { return b.started && !b.overflow }

// jsonLine is one JSON object line: a progress, a wrapped progress, a
// listener event, an event log event or a structured-logging record.
func (c *collector) jsonLine(f *File, where string, line []byte) {
	if bytes.HasPrefix(line, []byte(`{"Event":`)) {
		// An event log line. Only the streaming events matter; the others
		// (SQL plans, tasks) can be big and are not decoded at all.
		f.Shape = EventLog
		if !bytes.Contains(line[:min(len(line), 256)], []byte(eventPrefix)) {
			f.Other++
			if bytes.Contains(line, []byte("StreamingDeduplicate")) {
				c.planLine(line)
			}
			return
		}
	}
	if len(line) > maxRecord {
		c.badLine(f, where, fmt.Sprintf("a JSON object larger than %d MiB", maxRecord>>20), line)
		return
	}
	// One decoding serves both: the line's own fields as a progress, and
	// the fields that say what else it might be.
	var probe struct {
		rawProgress
		Event    *string         `json:"Event"`
		Kind     *string         `json:"event"`
		Progress json.RawMessage `json:"progress"`
		Msg      *string         `json:"msg"`
		Level    *string         `json:"level"`
	}
	if err := json.Unmarshal(line, &probe); err != nil {
		c.badLine(f, where, jsonReason(err).Error(), line)
		return
	}
	switch {
	case probe.Msg != nil && probe.Level != nil:
		// Structured logging (4.0+): the pretty progress sits in msg.
		if i := strings.Index(*probe.Msg, marker); i >= 0 {
			c.progressJSON(f, where, []byte((*probe.Msg)[i+len(marker):]))
		} else {
			f.Other++
		}
	case len(probe.Progress) > 0:
		c.progressJSON(f, where, probe.Progress)
	case probe.BatchID != nil:
		c.progress(f, where, line, probe.rawProgress)
	case probe.Event != nil || probe.Kind != nil:
		c.eventJSON(f, where, line, probe.Event, probe.Kind)
	default:
		c.badLine(f, where, "a JSON object that is neither a StreamingQueryProgress (no batchId) nor a listener event", line)
	}
}

func (c *collector) progressJSON(f *File, where string, js []byte) {
	var r rawProgress
	if err := decodeRaw(js, &r); err != nil {
		c.badLine(f, where, err.Error(), js)
		return
	}
	c.progress(f, where, js, r)
}

// progress checks one decoded record and keeps it.
func (c *collector) progress(f *File, where string, js []byte, r rawProgress) {
	p, err := r.check()
	if err != nil {
		c.badLine(f, where, err.Error(), js)
		return
	}
	p.Where = where
	p.ID, p.RunID, p.Name = c.intern(p.ID), c.intern(p.RunID), c.intern(p.Name)
	f.Records++
	if !p.Idle {
		// One executed batch of a run has one progress: a second copy is
		// a duplicate or a conflict, whatever its timestamp.
		k := batchKey{p.ID, p.RunID, p.BatchID}
		if i, ok := c.batches[k]; ok {
			c.copyOf(i, p)
			return
		}
		c.batches[k] = len(c.records)
		c.records = append(c.records, p)
		return
	}
	k := recordKey{p.ID, p.RunID, p.BatchID, p.TimestampMs, p.Idle}
	if c.seen[k] {
		c.log.Duplicates++
		return
	}
	c.seen[k] = true
	c.records = append(c.records, p)
}

// intern shares one copy of each id, run id and name among the records.
func (c *collector) intern(s string) string {
	if v, ok := c.strs[s]; ok {
		return v
	}
	if len(c.strs) < 1<<16 {
		c.strs[s] = s
	}
	return s
}

// eventJSON reads a started, idle or terminated event: an event log's
// Jackson dump ("Event": "...$QueryStartedEvent") or a listener's own
// serialisation ("event": "QueryStartedEvent" or "started").
func (c *collector) eventJSON(f *File, where string, line []byte, jackson, kind *string) {
	name := ""
	if jackson != nil {
		name = strings.TrimPrefix(*jackson, eventPrefix)
	} else {
		name = *kind
	}
	var ek EventKind
	switch strings.TrimSuffix(strings.TrimPrefix(strings.ToLower(name), "query"), "event") {
	case "started":
		ek = Started
	case "idle":
		ek = Idle
	case "terminated":
		ek = Terminated
	case "progress":
		c.badLine(f, where, "a progress event without its progress object", line)
		return
	default:
		if jackson != nil {
			f.Other++
			return
		}
		c.badLine(f, where, fmt.Sprintf("unknown listener event %q: want started, idle, terminated or a progress", truncate(name, 40)), line)
		return
	}
	var r struct {
		ID        *string `json:"id"`
		RunID     *string `json:"runId"`
		Name      *string `json:"name"`
		Timestamp *string `json:"timestamp"`
		Exception *string `json:"exception"`
	}
	if err := json.Unmarshal(line, &r); err != nil {
		c.badLine(f, where, jsonReason(err).Error(), line)
		return
	}
	e := Event{Kind: ek, Where: where}
	var err error
	if e.ID, err = uuidField("id", r.ID); err == nil {
		e.RunID, err = uuidField("runId", r.RunID)
	}
	if err == nil && r.Timestamp != nil {
		e.TimestampMs, err = parseTime("timestamp", *r.Timestamp)
	}
	if err == nil && ek != Terminated && r.Timestamp == nil {
		err = bad("timestamp", "missing")
	}
	if err != nil {
		c.badLine(f, where, err.Error(), line)
		return
	}
	if r.Name != nil {
		e.Name = *r.Name
	}
	if r.Exception != nil {
		e.Exception = *r.Exception
	}
	f.Events++
	c.events = append(c.events, e)
}

// readArray streams a top-level JSON array of progress objects. Each
// element is cut out lexically (strings, escapes and nesting followed byte
// by byte) and held only up to the record limit: a larger one is skipped
// to its end as it streams in, never held or decoded, and the elements
// after it are still read.
func (c *collector) readArray(f *File, path string, in *bufio.Reader) error {
	if b, err := in.ReadByte(); err != nil || b != '[' {
		return fmt.Errorf("%s: not a JSON array", path)
	}
	var buf []byte
	for i := 0; ; i++ {
		b, err := skipSpace(in)
		if err == io.EOF {
			c.badLine(f, path+": end", "the array is not closed", nil)
			return nil
		}
		if err != nil {
			return err
		}
		if i == 0 && b == ']' {
			break
		}
		where := fmt.Sprintf("%s: element %d", path, i)
		in.UnreadByte()
		var long bool
		buf, long, err = scanValue(in, buf[:0], maxRecord)
		if err != nil && err != io.EOF {
			return err
		}
		f.Lines++
		switch {
		case err == io.EOF:
			c.badLine(f, where, "the element is cut off at the end of the file", buf)
			return nil
		case long:
			c.badLine(f, where, fmt.Sprintf("element larger than %d MiB", maxRecord>>20), buf)
		case buf[0] == '{':
			c.jsonLine(f, where, buf)
		default:
			c.badLine(f, where, "not a JSON object", buf)
		}
		b, err = skipSpace(in)
		if err == io.EOF {
			c.badLine(f, path+": end", "the array is not closed", nil)
			return nil
		}
		if err != nil {
			return err
		}
		if b == ']' {
			break
		}
		if b != ',' {
			c.badLine(f, where, fmt.Sprintf("want , or ] after the element, got %q", b), nil)
			return nil // the rest of the array cannot be found again
		}
	}
	if _, err := skipSpace(in); err != io.EOF {
		c.badLine(f, path+": end", "data after the JSON array", nil)
	}
	return nil
}

// skipSpace reads up to the first byte that is not JSON white space.
func skipSpace(in *bufio.Reader) (byte, error) {
	for {
		b, err := in.ReadByte()
		if err != nil {
			return 0, err
		}
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			return b, nil
		}
	}
}

// scanValue reads one JSON value's bytes: an object or array to its
// closing bracket, a string to its closing quote, anything else to the
// next delimiter. At most limit bytes are kept in buf (long: there were
// more, read and dropped). io.EOF: the value was cut off.
func scanValue(in *bufio.Reader, buf []byte, limit int) ([]byte, bool, error) {
	long := false
	keep := func(b byte) {
		if len(buf) < limit {
			buf = append(buf, b)
		} else {
			long = true
		}
	}
	first, err := in.ReadByte()
	if err != nil {
		return buf, false, err
	}
	keep(first)
	if first != '{' && first != '[' && first != '"' {
		for {
			b, err := in.ReadByte()
			if err != nil {
				return buf, long, nil // a scalar may end the file; the caller sees the array unclosed
			}
			if b == ',' || b == ']' || b == '}' || b == ' ' || b == '\t' || b == '\r' || b == '\n' {
				in.UnreadByte()
				return buf, long, nil
			}
			keep(b)
		}
	}
	depth, str, esc := 1, first == '"', false
	if str {
		depth = 0
	}
	for {
		// Scan what is buffered in place (Peek, then Discard what was
		// used): only quotes, backslashes and brackets change the state.
		if in.Buffered() == 0 {
			if _, err := in.Peek(1); err != nil {
				if err == io.EOF {
					return buf, long, io.EOF
				}
				return buf, long, err
			}
		}
		chunk, _ := in.Peek(in.Buffered())
		used, done := len(chunk), false
		for k, b := range chunk {
			switch {
			case esc:
				esc = false
			case str && b == '\\':
				esc = true
			case b == '"':
				str = !str
				done = !str && depth == 0
			case str:
			case b == '{' || b == '[':
				depth++
			case b == '}' || b == ']':
				depth--
				done = depth == 0
			}
			if done {
				used = k + 1
				break
			}
		}
		if room := max(limit-len(buf), 0); used > room {
			buf = append(buf, chunk[:room]...)
			long = true
		} else {
			buf = append(buf, chunk[:used]...)
		}
		in.Discard(used)
		if done {
			return buf, long, nil
		}
	}
}
