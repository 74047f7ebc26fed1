// Package steps reads STEPS.jsonl, the input of `dedupsim exec`
// (docs/exec-format.md): one step per line, each a batch of rows to
// append and trigger, a clean restart, or a crash armed for the next batch.
//
// Rows are decoded here, once, with the query's key and event-time columns,
// so that a bad row is reported with its file, line and index before the
// engine runs anything.
package steps

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dedupsim/dedupsim/engine/crashpoint"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/sink"
)

// Kind is what a step does.
type Kind int

// The kinds of step. The zero Kind is not a step, so a zero Step is
// recognisably unset.
const (
	// RowsStep appends rows to one or more sources, then triggers.
	RowsStep Kind = iota + 1
	// RestartStep stops the query cleanly and starts it from the checkpoint.
	RestartStep
	// CrashStep arms a crash at a point of the next batch.
	CrashStep
	// TickStep is one processing-time trigger with no new input: at most
	// one batch runs (a pending re-run, or a no-data batch when one is due).
	TickStep
)

func (k Kind) String() string {
	switch k {
	case RowsStep:
		return "rows"
	case RestartStep:
		return "restart"
	case CrashStep:
		return "crash"
	case TickStep:
		return "tick"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Step is one line of STEPS.jsonl.
type Step struct {
	// Line is the 1-based line number in the file.
	Line int
	Kind Kind
	// Rows maps a source name to the rows appended to it, in file order
	// (RowsStep only). A source named on the line has an entry even when
	// its list is empty, because Spark's MemoryStream.addData of no rows
	// still creates a new offset and so a batch; a source not named has
	// none. {"rows": [...]} names the query's only source.
	Rows map[string][]row.Row
	// Crash is the crash point (CrashStep only).
	Crash crashpoint.Point
	// Once (rows steps) runs exactly one batch after appending, as one
	// processing-time trigger does, instead of the data batch and every
	// no-data batch (processAllAvailable). Traces exported from the
	// simulator use it to keep its batch boundaries.
	Once bool
	// CrashBatch is the batch id the crash waits for ({"crash": P,
	// "batch": N}), or -1 for the next batch that reaches the point. A
	// batch id reaches no-data batches, which no input line can target.
	CrashBatch int64
}

// stepFields are the fields a step line may have; exactly one per line.
var stepFields = []string{"rows", "sources", "restart", "crash", "tick"}

// MaxLineBytes bounds one line of a steps file: one line is one batch,
// held in memory while it runs, so the cap bounds exec's memory for the
// input (a line of 1 M rows of 100 bytes is 100 MB). Longer lines are
// refused, not read: "--input /dev/zero" ends at once.
const MaxLineBytes = 256 << 20

// ParseFile reads and parses the steps file at path; errors name path.
// It holds every step in memory; a run over a large file reads it with
// NewReader instead.
func ParseFile(path string, q *query.Query) ([]Step, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read steps: %w", err)
	}
	defer f.Close()
	r, err := NewReader(path, f, q)
	if err != nil {
		return nil, err
	}
	return r.All()
}

// Parse parses a whole steps file for query q. filename is used in error
// messages only. Errors for bad input (exit status 2 in `dedupsim exec`)
// are *query.Error, the query file's error type, printed as
// "file:line: path: message"; Path locates the problem inside the line,
// e.g. "rows[1]" or "sources.web[0]". The file is split on '\n' by
// hand, so a line may be any length up to MaxLineBytes.
// Rows are read untyped unless q has a schema: exec's drivers call
// InferSchema first (ParseTyped).
func Parse(filename string, data []byte, q *query.Query) ([]Step, error) {
	r, err := NewReader(filename, bytes.NewReader(data), q)
	if err != nil {
		return nil, err
	}
	return r.All()
}

// ParseTyped is Parse as `dedupsim exec` reads a steps file: when q
// declares no schema, one is first inferred from every row of data
// (InferSchema) and set on q, and the rows are read under it.
func ParseTyped(filename string, data []byte, q *query.Query) ([]Step, error) {
	if err := InferSchema(filename, bytes.NewReader(data), q); err != nil {
		return nil, err
	}
	return Parse(filename, data, q)
}

// InferSchema reads every row of a steps file and sets q.Schema to the
// schema Spark's JSON source infers from them (row.Inferrer), with
// q.SchemaInferred. A file with no rows (or only empty objects) leaves q
// untyped (nil schema). A
// key or event-time column that no row has is an error, as Spark cannot
// resolve it (UNRESOLVED_COLUMN). The file streams: memory holds one line.
func InferSchema(filename string, r io.Reader, q *query.Query) error {
	if q == nil || q.Schema != nil {
		return nil
	}
	rd, err := NewReader(filename, r, q)
	if err != nil {
		return err
	}
	return inferFrom(rd, q)
}

// inferFrom is InferSchema over the steps rd reads.
func inferFrom(rd *Reader, q *query.Query) error {
	inf := row.NewInferrer()
	rd.p.infer, rd.p.scratch = inf, true
	for {
		if _, err := rd.Next(); err == io.EOF {
			break
		} else if err != nil {
			return err
		}
	}
	return SetInferred(rd.p.file, inf, q)
}

// SetInferred ends InferSchema: it sets q.Schema to the schema inf
// inferred from the rows of the steps file filename, or refuses it.
func SetInferred(filename string, inf *row.Inferrer, q *query.Query) error {
	s := inf.Schema()
	if s == nil || len(s.Fields) == 0 {
		return nil // no rows, or only {}: nothing to type
	}
	// The query's names resolve against the inferred schema as Spark's
	// analyzer resolves them (query.ResolveColumns: ignoring case unless
	// case_sensitive).
	q.Schema, q.SchemaInferred = s, true
	if err := q.ResolveColumns(s); err != nil {
		var re *query.ResolveError
		if errors.As(err, &re) && re.Unresolved {
			return &query.Error{File: filename, Msg: fmt.Sprintf("[UNRESOLVED_COLUMN] column %q is in no row, so it is not in the schema inferred from the rows (%s); declare it in the query's schema: to read it as null", re.Name, s)}
		}
		return &query.Error{File: filename, Msg: err.Error()}
	}
	return nil
}

// Reader reads a steps file one step at a time, so that a run holds one
// line of input, not the file.
type Reader struct {
	p      *parser
	br     *bufio.Reader
	lineNo int
	// buf is the buffer every line is read into, reused: as large as the
	// largest line so far.
	buf []byte
	// own is the copy of the line that rows may share (parser.shareLine):
	// of the line's size, not buf's, so that a small line's rows never
	// hold a buffer sized by an earlier large line. Reused for the next
	// line while no row took a slice of it (parser.lent).
	own  []byte
	done bool
	// last, when > 0, is the last line read (StopAfter).
	last int
	// rows counts the rows read so far, per source (query order).
	rows []int64
}

// NewReader reads the steps of query q from r; filename is used in error
// messages only.
func NewReader(filename string, r io.Reader, q *query.Query) (*Reader, error) {
	if q == nil {
		return nil, errors.New("steps: Parse needs the query")
	}
	if len(q.Sources) == 0 {
		return nil, errors.New("steps: the query has no sources")
	}
	p := &parser{file: filename, q: q}
	if q.Schema == nil {
		p.dec = row.NewDecoder(q.StateKeys(), q.EventTimeColumn())
	} else {
		dec, err := row.NewTypedDecoder(q.StateKeys(), q.EventTimeColumn(), q.Schema)
		if err != nil {
			return nil, p.errorf(0, "", "%v", err)
		}
		if q.API == query.BatchDropDuplicates {
			dec = dec.NormalizedFloats() // spark-semantics.md §15.5
		}
		p.dec = dec
	}
	// A sink with its own match columns (sink.keys: the parser admits them
	// only for a kind that takes them, merge) would match a row that lacks
	// one on nothing, so such a row is refused here, with its line.
	if len(q.Sink.Keys) > 0 {
		p.sinkDec = row.NewDecoder(q.Sink.Keys, q.EventTimeColumn())
	}
	if d, ok := sink.Lookup(q.Sink.Kind); ok && !d.HasTable {
		p.shareLine = true
	}
	return &Reader{p: p, br: bufio.NewReaderSize(r, 64<<10), rows: make([]int64, len(q.Sources))}, nil
}

// Rows returns how many rows each source (in query order) has received in
// the steps read so far.
func (r *Reader) Rows() []int64 { return r.rows }

// Line is the number of the last line read.
func (r *Reader) Line() int { return r.lineNo }

// All reads every remaining step.
func (r *Reader) All() ([]Step, error) {
	var out []Step
	for {
		st, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
}

// Check reads every remaining step as Next does and keeps none: the pass
// that finds the first bad line before a run starts. It returns nil at
// the end of the input.
func (r *Reader) Check() error {
	r.p.scratch = true
	defer func() { r.p.scratch = false }()
	for {
		if _, err := r.Next(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// Next returns the next step, or io.EOF after the last. Errors for bad
// input are *query.Error; after an error the Reader is done. Every row's Data
// is one JSON value without insignificant space (row.ValidCompact: the
// reader compacts what the file spaced), which trace.Options.RowsCompact
// relies on.
func (r *Reader) Next() (Step, error) {
	l, err := r.nextLine()
	if err != nil {
		return Step{}, err
	}
	r.p.rowBuf = r.p.rowBuf[:0]
	text := l.Text
	if r.p.shareLine && !r.p.scratch {
		// One copy of the line, a memmove, instead of one per row. A spare
		// copy is reused only when at most about twice the line's size, so
		// rows hold at most twice their line.
		if cap(r.own) < len(text) || cap(r.own) > 2*len(text)+64 {
			r.own = make([]byte, 0, len(text))
		}
		r.own = append(r.own[:0], text...)
		text, r.p.lent = r.own, false
	}
	st, err := r.p.line(l.No, l.Col, text)
	if r.p.lent {
		r.own = nil // the rows keep it: the next line gets a copy of its own
	}
	if err != nil {
		r.done = true
		return Step{}, err
	}
	for name, rows := range st.Rows {
		if i, ok := r.p.q.SourceIndex(name); ok {
			r.rows[i] += int64(len(rows))
		}
	}
	return st, nil
}

// Line is one step line, as NextLine gives it: its number, the column
// where its text starts, and the text, trimmed of surrounding space.
type Line struct {
	No, Col int
	Text    []byte
}

// NextLine returns the next step line without decoding it, for a pass
// that decodes lines out of order (LineParser), or io.EOF: blank and
// comment lines are skipped, and a line too long or not UTF-8 is refused
// here, as Next refuses it. The text is a copy, the caller's to keep.
func (r *Reader) NextLine() (Line, error) { return r.NextLineInto(nil) }

// NextLineInto is NextLine with the text copied into buf's storage (grown
// if too small): a pass recycles the buffers of lines it is done with.
func (r *Reader) NextLineInto(buf []byte) (Line, error) {
	l, err := r.nextLine()
	if err == nil {
		if buf == nil {
			l.Text = bytes.Clone(l.Text)
		} else {
			l.Text = append(buf[:0], l.Text...)
		}
	}
	return l, err
}

// nextLine is NextLine with the text in the Reader's buffer.
func (r *Reader) nextLine() (Line, error) {
	for !r.done && (r.last <= 0 || r.lineNo < r.last) {
		text, err := r.readLine()
		if err != nil {
			r.done = true
			return Line{}, err
		}
		if text == nil {
			r.done = true
			break
		}
		if r.lineNo == 1 {
			// An editor's byte-order mark is not part of the first line's JSON.
			text = bytes.TrimPrefix(text, []byte("\xef\xbb\xbf"))
		}
		trimmed := bytes.TrimLeft(text, " \t\r")
		col := len(text) - len(trimmed) + 1
		trimmed = bytes.TrimRight(trimmed, " \t\r")
		if len(trimmed) == 0 || trimmed[0] == '#' {
			continue
		}
		if !utf8.Valid(trimmed) {
			r.done = true
			at := 0
			for at < len(trimmed) {
				c, size := utf8.DecodeRune(trimmed[at:])
				if c == utf8.RuneError && size == 1 {
					break
				}
				at += size
			}
			return Line{}, r.p.errorf(r.lineNo, "", "invalid UTF-8 at column %d (byte %#02x): a steps file is UTF-8 text", col+at, trimmed[at])
		}
		return Line{No: r.lineNo, Col: col, Text: trimmed}, nil
	}
	return Line{}, io.EOF
}

// InferAlong gives every row Next decodes from now on to inf too, as
// InferSchema gives its own: a run on a schema inferred from the first
// rows learns, as it goes, the schema of every row (exec's run without a
// pass before it, execpipe). Call it before the first Next.
func (r *Reader) InferAlong(inf *row.Inferrer) { r.p.along = inf }

// LineParser checks, or infers a schema from, single step lines in any
// order, with what Next would say about each. A pass may give lines to
// several LineParsers, one per goroutine, and keep the error of the
// lowest line: the answer of Check (or InferSchema) over the whole file.
// That holds only when the lines are independent (Independent).
type LineParser struct {
	p *parser
	// unchecked: InferCheck read lines it could not check (an all-columns
	// key, whose columns are the schema's).
	unchecked bool
}

// Independent reports whether the reader's lines can be decoded out of
// order: not with an all-columns key and no schema, where the file's first
// row fixes the columns every later row must have.
func (r *Reader) Independent() bool { return len(r.p.q.Keys) > 0 || r.p.q.Schema != nil }

// LineParser makes a parser of single lines with r's query and decoders
// (which hold only configuration) and buffers of its own.
func (r *Reader) LineParser() *LineParser {
	p := *r.p
	p.rowBuf, p.tmp, p.schema, p.schemaAt, p.infer, p.fuse, p.along = nil, nil, nil, "", nil, nil, nil
	p.scratch = true
	return &LineParser{p: &p}
}

// Check is Reader.Check's verdict on one line.
func (lp *LineParser) Check(l Line) error {
	lp.p.infer = nil
	lp.p.rowBuf = lp.p.rowBuf[:0]
	_, err := lp.p.line(l.No, l.Col, l.Text)
	return err
}

// Infer adds the line's rows to inf, as InferSchema reads them.
func (lp *LineParser) Infer(l Line, inf *row.Inferrer) error {
	lp.p.infer = inf
	defer func() { lp.p.infer = nil }()
	lp.p.rowBuf = lp.p.rowBuf[:0]
	_, err := lp.p.line(l.No, l.Col, l.Text)
	return err
}

// InferCheck is Infer and Check in one pass, for a query with key columns
// and no declared schema (Independent): the line's rows are added to inf
// and, in the same scan of each row, checked as Check would check them
// under the types inf has inferred so far (the row's own included). Only
// inference's error is returned; the check's verdict waits for the
// schema inferred from the whole file (Checked). Give one LineParser the
// lines in file order, and inf only its lines.
func (lp *LineParser) InferCheck(l Line, inf *row.Inferrer) error {
	p := lp.p
	if len(p.q.Keys) == 0 {
		lp.unchecked = true
		return lp.Infer(l, inf)
	}
	if p.fuse == nil {
		p.fuse = &fused{}
	}
	p.fuse.inf = inf
	p.infer = inf
	defer func() { p.infer = nil }()
	p.rowBuf = p.rowBuf[:0]
	_, err := p.line(l.No, l.Col, l.Text)
	return err
}

// Checked is the check's verdict on the lines InferCheck read, now that
// q.Schema is the schema inferred from the whole file. A row checked under
// types that are not q's, or before every key and event-time column was
// in the schema, proves nothing: recheck is the last line with such a row
// (0: none; math.MaxInt: the lines are to be checked again, all of them,
// as when this parser's types never reached q's). err is the first row
// (in file order) refused under q's types after that point, nil if none:
// Check's answer over these lines, once lines up to recheck are checked
// again.
func (lp *LineParser) Checked(q *query.Query) (recheck int, err error) {
	f := lp.p.fuse
	if lp.unchecked {
		return math.MaxInt, nil
	}
	if f == nil || len(f.under) == 0 {
		return 0, nil
	}
	if q.Schema == nil || len(q.Keys) == 0 {
		return math.MaxInt, nil
	}
	final, derr := row.NewTypedDecoder(q.StateKeys(), q.EventTimeColumn(), q.Schema)
	last := f.under[len(f.under)-1]
	if derr != nil || last.dec == nil || !last.dec.SameTypes(final) {
		return math.MaxInt, nil
	}
	for _, u := range f.under[:len(f.under)-1] {
		recheck = max(recheck, u.lastLine)
	}
	return recheck, last.err
}

// fused is InferCheck's state: the types rows were checked under, in the
// order the parser met them, each with the first row it refused. An
// inferrer's types only widen, and the schema of the whole file is the
// widest: only the last types can be the file's.
type fused struct {
	inf     *row.Inferrer
	changes uint64 // inf.Changes() when under's last entry was made
	under   []checkedUnder
	found   row.Found
	r       row.Row // scratch: the row under check
	tmp     []byte  // scratch: a row compacted
}

// checkedUnder is one set of types rows were checked under.
type checkedUnder struct {
	dec      *row.Decoder // typed; nil while a column is not in the schema
	lastLine int          // the last line with a row checked under dec
	err      error        // the first row refused under dec
}

// check checks element i of the array at path on line lineNo, just added
// to f.inf, under the types inferred so far: found says whether f.found
// holds the walk's slots (else data is compact, and walked again).
func (f *fused) check(p *parser, lineNo int, path string, i int, data []byte, found bool) {
	if len(f.under) == 0 || f.inf.Changes() != f.changes {
		f.changes = f.inf.Changes()
		dec, err := row.NewTypedDecoder(p.q.StateKeys(), p.q.EventTimeColumn(), f.inf.Schema())
		if err != nil {
			dec = nil // a column not seen yet: nothing to check against
		}
		if n := len(f.under); n == 0 || (dec == nil) != (f.under[n-1].dec == nil) || (dec != nil && !dec.SameTypes(f.under[n-1].dec)) {
			f.under = append(f.under, checkedUnder{dec: dec})
		}
	}
	u := &f.under[len(f.under)-1]
	u.lastLine = lineNo
	if u.dec == nil || u.err != nil {
		return // nothing to check under, or this set's answer is known
	}
	var err error
	switch {
	case found && row.IsCompact(data):
		err = u.dec.DecodeFound(data, &f.found, &f.r)
	case found:
		// Decoded from its compacted copy, as Check does.
		f.tmp = row.AppendCompact(f.tmp[:0], data)
		data = f.tmp
		fallthrough
	default:
		err = u.dec.Decode(data, &f.r)
	}
	if err != nil {
		u.err = p.errorf(lineNo, path+"["+strconv.Itoa(i)+"]", "%v", err)
		return
	}
	if err := p.checkRow(lineNo, path, i, &f.r); err != nil {
		u.err = err.(*rowError).err
	}
}

// StopAfter ends the input after line: the Reader then gives io.EOF, as
// at the end of the file. A pass over the first lines only (checking
// again those InferCheck could not vouch for: Checked) sets it first.
func (r *Reader) StopAfter(line int) { r.last = line }

// readLine returns the next line without its '\n' (nil at the end of the
// input). The slice is valid until the next call.
func (r *Reader) readLine() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.buf)+len(chunk) > MaxLineBytes+1 {
			r.lineNo++
			return nil, r.p.errorf(r.lineNo, "", "line longer than %d bytes (256 MiB), the longest line (one batch) a steps file may have; split the batch over several lines", MaxLineBytes)
		}
		if len(r.buf)+len(chunk) > cap(r.buf) {
			// Doubled, not grown by append's quarter for large slices: a
			// long line is copied a few times, not dozens.
			r.buf = slices.Grow(r.buf, max(len(chunk), cap(r.buf)))
		}
		r.buf = append(r.buf, chunk...)
		switch {
		case err == nil:
			r.lineNo++
			return r.buf[:len(r.buf)-1], nil
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			if len(r.buf) == 0 {
				return nil, nil
			}
			r.lineNo++
			return r.buf, nil
		default:
			return nil, fmt.Errorf("read %s: %w", r.p.file, err)
		}
	}
}

type parser struct {
	file string
	q    *query.Query
	dec  *row.Decoder
	// sinkDec decodes the merge sink's own match columns (sink.keys), nil
	// when the sink has none of its own.
	sinkDec *row.Decoder
	// infer, when set, takes every row instead of the decoders (InferSchema).
	infer *row.Inferrer
	// fuse, with infer, also checks every row under the types inferred so
	// far (LineParser.InferCheck).
	fuse *fused
	// along, outside scratch passes, is given every row a run decodes, as
	// InferSchema gives its inferrer (Reader.InferAlong); alongFound holds
	// the columns its walk found, for the decoder (rowsAcc.scanAlong).
	along      *row.Inferrer
	alongFound row.Found
	// scratch: the rows of a line are dropped before the next line is
	// read (InferSchema, Check): their Data may share the line's buffer
	// or tmp, and they live in rowBuf, reused from line to line. Such a
	// Step's rows are good for counting only.
	scratch bool
	rowBuf  []row.Row
	tmp     []byte
	// keys is the chunk the keys of a run's rows are cut from (its spare
	// capacity): one allocation for many small keys. A key lives as long
	// as its row in the source and the batch (the state store and the
	// sinks copy what they keep), so a chunk outlives its rows' batch
	// only while something holds one of its keys.
	keys []byte
	// rowsSeen rows of rowBytesSeen bytes were decoded (outside scratch
	// passes), at most mostRows in one array: newRowsAcc's size hint.
	rowsSeen, rowBytesSeen, mostRows int64
	// slow takes encoding/json's path only, as every line did before the
	// row scanner's (the tests hold the two to the same answers).
	slow bool
	// shareLine: a compact row's Data is a slice of its line instead of a
	// copy (outside scratch passes), and Reader.Next gives the parser a
	// copy of each line of the line's size (Reader.own). Set when the query's sink keeps no rows
	// (foreachBatch), so that a line lives as long as its rows' batch, as
	// the copies did; a sink with a table keeps rows for the whole run,
	// and a few kept rows must not hold whole lines.
	shareLine bool
	// lent: a row of the current line took a slice of it (shareLine).
	lent bool

	// For an all-columns key: the sorted field names of the file's first
	// row, and where that row is, for messages.
	schema   []string
	schemaAt string
}

func (p *parser) errorf(line int, path, format string, args ...any) *query.Error {
	return &query.Error{File: p.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// member is one field of a JSON object.
type member struct {
	name string
	val  json.RawMessage
	// rows are val's rows when fastMembers decoded them as it scanned
	// (decoded set).
	rows    []row.Row
	decoded bool
}

// fastMembers is members in one scan with the row scanner, which also
// validates the whole object. It gives up (ok false) on anything but an
// object with plain names, each once, and on any error in a row: members
// and encoding/json then say what is wrong, in their words, in their
// order. The values share raw's bytes.
//
// rowsAt, when not nil, names the rows of a member (its path in messages;
// "" for a member that holds no rows): an array there is decoded as it is
// scanned, so its rows are scanned twice (validation, decoding), not three
// times.
func (p *parser) fastMembers(lineNo int, raw []byte, rowsAt func(name []byte) string) (ms []member, ok bool) {
	if p.slow {
		return nil, false
	}
	var acc *rowsAcc
	var each func(name []byte, esc bool) (func([]byte) (int, error), error)
	if rowsAt != nil {
		each = func(name []byte, esc bool) (func([]byte) (int, error), error) {
			acc = nil
			if esc {
				return nil, errSlowPath
			}
			for _, m := range ms {
				if m.name == string(name) {
					return nil, errSlowPath
				}
			}
			if path := rowsAt(name); path != "" {
				acc = p.newRowsAcc(lineNo, path, len(raw))
				return acc.scan, nil
			}
			return nil, nil
		}
	}
	err := row.Members(raw, each, func(name []byte, esc bool, val []byte) error {
		if esc {
			return errSlowPath
		}
		for _, m := range ms {
			if m.name == string(name) {
				return errSlowPath
			}
		}
		m := member{name: string(name), val: val}
		if acc != nil && len(val) > 0 && val[0] == '[' {
			m.rows, m.decoded = acc.done(), true
		}
		acc = nil
		ms = append(ms, m)
		return nil
	})
	return ms, err == nil
}

// rowsAcc collects the rows of one array, element by element.
type rowsAcc struct {
	p            *parser
	lineNo       int
	path         string
	rows         []row.Row
	start, count int
}

// newRowsAcc starts the rows at path: in a scratch pass they go to one
// reused buffer (a sources line appends each source's after the previous
// one's).
//
// Otherwise the rows get a slice sized from the at most size bytes they
// come from and the rows read so far (their average size, the most in one
// array, doubled), so that a large batch is not copied as it grows: no
// more than the bytes could hold, nor twice the largest batch so far.
func (p *parser) newRowsAcc(lineNo int, path string, size int) *rowsAcc {
	a := &rowsAcc{p: p, lineNo: lineNo, path: path}
	if p.scratch {
		a.rows, a.start = p.rowBuf, len(p.rowBuf)
	} else if p.rowsSeen > 0 {
		avg := max(p.rowBytesSeen/p.rowsSeen, 2)
		a.rows = make([]row.Row, 0, min(int64(size)/avg+1, 2*p.mostRows+16))
	}
	return a
}

// add decodes the next element, as Elements gives it, compacted.
func (a *rowsAcc) add(e []byte) error {
	a.rows = append(a.rows, row.Row{})
	err := a.p.row(a.lineNo, a.path, a.count, a.p.compact(e), &a.rows[a.start+a.count])
	a.count++
	return err
}

// scan decodes the row at the start of rest, as Members walks an array,
// and returns its length: the element is scanned once, by the decoder (or
// the inferrer), which validates it.
func (a *rowsAcc) scan(rest []byte) (int, error) {
	p := a.p
	if n := len(a.rows); n < cap(a.rows) && (p.infer != nil || !p.scratch) {
		// The slot is not written twice: inference does not use it, and
		// outside scratch passes the slice is new, so its spare slots are
		// zero (the decoder then sets the whole row).
		a.rows = a.rows[:n+1]
	} else {
		a.rows = append(a.rows, row.Row{})
	}
	r := &a.rows[a.start+a.count]
	i := a.count
	a.count++
	if p.infer != nil && p.fuse != nil {
		n, err := p.infer.AddPrefixFind(rest, row.ElementDepth, p.dec, &p.fuse.found)
		if err == nil {
			p.fuse.check(p, a.lineNo, a.path, i, rest[:n], true)
		}
		return n, err
	}
	if p.infer != nil {
		// Inference reads names, value kinds and numbers' text, which
		// space between tokens leaves alone: the row need not be compact.
		return p.infer.AddPrefix(rest, row.ElementDepth)
	}
	if p.along != nil && !p.scratch && !p.dec.EveryColumn() {
		return a.scanAlong(rest, r, i)
	}
	var key []byte // nil: a fresh slice (a scratch pass)
	if !p.scratch {
		if cap(p.keys)-len(p.keys) < minKeySpare {
			p.keys = make([]byte, 0, keysChunk)
		}
		key = p.keys[len(p.keys):]
	}
	n, err := p.dec.DecodePrefixKey(rest, row.ElementDepth, r, key)
	if err != nil {
		return 0, err
	}
	if key != nil && len(r.Key) <= cap(key) {
		// In the chunk's spare room: the chunk keeps it.
		p.keys = p.keys[:len(p.keys)+len(r.Key)]
		r.Key = r.Key[:len(r.Key):len(r.Key)]
	}
	e := rest[:n]
	p.rowsSeen, p.rowBytesSeen = p.rowsSeen+1, p.rowBytesSeen+int64(n)
	if !row.IsCompact(e) {
		// Decoded again from its compacted copy, as on every other path.
		return n, p.row(a.lineNo, a.path, i, p.compact(e), r)
	}
	if err := p.inferAlong(a.lineNo, a.path, i, e); err != nil {
		return 0, err
	}
	switch {
	case p.scratch:
	case p.shareLine:
		r.Data, p.lent = e[:n:n], true
	default:
		r.Data = append(make([]byte, 0, n), e...)
	}
	return n, p.checkRow(a.lineNo, a.path, i, r)
}

// scanAlong is scan's decoding of a run's row that Reader.InferAlong's
// inferrer also reads: one walk of the row infers its types and finds the
// decoder's columns (Inferrer.AddPrefixFind), which are then decoded from
// where the walk found them (Decoder.DecodeFound), as the fused pass
// before a run does (LineParser.InferCheck); walking the row once for
// each cost exec's read-ahead a third more.
func (a *rowsAcc) scanAlong(rest []byte, r *row.Row, i int) (int, error) {
	p := a.p
	n, err := p.along.AddPrefixFind(rest, row.ElementDepth, p.dec, &p.alongFound)
	if err != nil {
		return 0, err
	}
	e := rest[:n]
	p.rowsSeen, p.rowBytesSeen = p.rowsSeen+1, p.rowBytesSeen+int64(n)
	if !row.IsCompact(e) {
		// Decoded again from its compacted copy, as on every other path;
		// its types are already inferred.
		along := p.along
		p.along = nil
		err := p.row(a.lineNo, a.path, i, p.compact(e), r)
		p.along = along
		return n, err
	}
	if cap(p.keys)-len(p.keys) < minKeySpare {
		p.keys = make([]byte, 0, keysChunk)
	}
	key := p.keys[len(p.keys):]
	r.Key = key // DecodeFound builds the key in r.Key's storage
	if err := p.dec.DecodeFound(e, &p.alongFound, r); err != nil {
		return 0, &rowError{p.errorf(a.lineNo, a.path+"["+strconv.Itoa(i)+"]", "%v", err)}
	}
	if len(r.Key) <= cap(key) {
		// In the chunk's spare room: the chunk keeps it.
		p.keys = p.keys[:len(p.keys)+len(r.Key)]
		r.Key = r.Key[:len(r.Key):len(r.Key)]
	}
	switch {
	case p.shareLine:
		r.Data, p.lent = e[:n:n], true
	default:
		r.Data = append(make([]byte, 0, n), e...)
	}
	return n, p.checkRow(a.lineNo, a.path, i, r)
}

// done returns the rows (never nil).
func (a *rowsAcc) done() []row.Row {
	a.p.mostRows = max(a.p.mostRows, int64(a.count))
	if a.p.scratch {
		a.p.rowBuf = a.rows
	}
	if a.rows == nil {
		return []row.Row{}
	}
	return a.rows[a.start:]
}

// keysChunk is the size of parser.keys' chunks; a chunk with less than
// minKeySpare bytes left is replaced before the next row (a longer key is
// allocated on its own).
const (
	keysChunk   = 32 << 10
	minKeySpare = 512
)

// errSlowPath stops a walk of the row scanner: the slow path answers.
var errSlowPath = errors.New("slow path")

// members returns an object's fields in order, rejecting repeated names,
// which encoding/json would silently collapse to the last one.
func members(raw []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("want a JSON object, got %s", kindOf(raw))
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		for _, m := range ms {
			if m.name == name {
				return nil, fmt.Errorf("field %q given twice", name)
			}
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		ms = append(ms, member{name: name, val: v})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return ms, nil
}

// kindOf names the JSON type of a valid value for messages.
func kindOf(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch c := raw[0]; {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	}
	return "a number"
}

func (p *parser) line(lineNo, col int, text []byte) (Step, error) {
	// One scan validates the whole line and splits it (fastMembers); only
	// a line it refuses goes through encoding/json, for its messages.
	ms, ok := p.fastMembers(lineNo, text, func(name []byte) string {
		if string(name) == "rows" && len(p.q.Sources) == 1 {
			return "rows"
		}
		return ""
	})
	if !ok {
		// Validate first, for a syntax error with its column.
		if !json.Valid(text) {
			var probe json.RawMessage
			err := json.Unmarshal(text, &probe)
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return Step{}, p.errorf(lineNo, "", "invalid JSON at column %d: %v", col+int(se.Offset)-1, se)
			}
			return Step{}, p.errorf(lineNo, "", "invalid JSON: %v", err)
		}
		var err error
		if ms, err = members(text); err != nil {
			return Step{}, p.errorf(lineNo, "", "%v (a step is {\"rows\": [...]}, {\"sources\": {...}}, {\"restart\": true} or {\"crash\": \"POINT\"})", err)
		}
	}
	var err error
	var kind, batch, once *member
	for i := range ms {
		m := &ms[i]
		if m.name == "batch" || m.name == "once" {
			mod := &batch
			if m.name == "once" {
				mod = &once
			}
			if *mod != nil {
				return Step{}, p.errorf(lineNo, m.name, "repeated field")
			}
			*mod = m
			continue
		}
		if !slices.Contains(stepFields, m.name) {
			return Step{}, p.errorf(lineNo, "", "unknown field %q (want exactly one of %s)", m.name, strings.Join(stepFields, ", "))
		}
		if kind != nil {
			return Step{}, p.errorf(lineNo, "", "%q and %q on one line: want exactly one of %s", kind.name, m.name, strings.Join(stepFields, ", "))
		}
		kind = m
	}
	if kind == nil {
		return Step{}, p.errorf(lineNo, "", "empty step: want exactly one of %s", strings.Join(stepFields, ", "))
	}
	st := Step{Line: lineNo, CrashBatch: -1}
	if once != nil {
		if kind.name != "rows" && kind.name != "sources" {
			return Step{}, p.errorf(lineNo, "once", "only a rows or sources step takes once ({\"rows\": [...], \"once\": true})")
		}
		if string(bytes.TrimSpace(once.val)) != "true" {
			return Step{}, p.errorf(lineNo, "once", "want true, got %s", once.val)
		}
		st.Once = true
	}
	if batch != nil && kind.name != "crash" {
		return Step{}, p.errorf(lineNo, "batch", "only a crash step takes a batch id ({\"crash\": \"POINT\", \"batch\": N})")
	}
	switch kind.name {
	case "rows":
		st.Kind = RowsStep
		if len(p.q.Sources) > 1 {
			return Step{}, p.errorf(lineNo, "rows", "the query has %d sources (%s): name them with {\"sources\": {%q: [...], ...}}",
				len(p.q.Sources), strings.Join(p.q.SourceNames(), ", "), p.q.Sources[0].Name)
		}
		rows := kind.rows
		if !kind.decoded {
			if rows, err = p.rows(lineNo, "rows", kind.val); err != nil {
				return Step{}, err
			}
		}
		st.Rows = map[string][]row.Row{p.q.Sources[0].Name: rows}
	case "sources":
		st.Kind = RowsStep
		if st.Rows, err = p.sources(lineNo, kind.val); err != nil {
			return Step{}, err
		}
	case "tick":
		st.Kind = TickStep
		if string(bytes.TrimSpace(kind.val)) != "true" {
			return Step{}, p.errorf(lineNo, "tick", "want true, got %s (a tick step is {\"tick\": true})", kind.val)
		}
	case "restart":
		st.Kind = RestartStep
		if string(bytes.TrimSpace(kind.val)) != "true" {
			return Step{}, p.errorf(lineNo, "restart", "want true, got %s (a restart step is {\"restart\": true})", kind.val)
		}
	case "crash":
		st.Kind = CrashStep
		var name string
		if err := json.Unmarshal(kind.val, &name); err != nil {
			return Step{}, p.errorf(lineNo, "crash", "want a crash point string (one of %s), got %s", crashpoint.List(), kindOf(kind.val))
		}
		point, ok := crashpoint.Parse(name)
		if !ok {
			return Step{}, p.errorf(lineNo, "crash", "unknown crash point %q (want %s)", name, crashpoint.List())
		}
		st.Crash = point
		if batch != nil {
			var id int64
			if err := json.Unmarshal(batch.val, &id); err != nil || id < 0 {
				return Step{}, p.errorf(lineNo, "batch", "want a batch id (a whole number >= 0), got %s", batch.val)
			}
			st.CrashBatch = id
		}
	}
	return st, nil
}

func (p *parser) sources(lineNo int, raw json.RawMessage) (map[string][]row.Row, error) {
	ms, ok := p.fastMembers(lineNo, raw, func(name []byte) string {
		if _, ok := p.q.SourceIndex(string(name)); ok {
			return "sources." + string(name)
		}
		return ""
	})
	if !ok {
		var err error
		if ms, err = members(raw); err != nil {
			return nil, p.errorf(lineNo, "sources", "%v (want {\"SOURCE\": [ROW, ...], ...})", err)
		}
	}
	out := make(map[string][]row.Row, len(ms))
	for _, m := range ms {
		if _, ok := p.q.SourceIndex(m.name); !ok {
			return nil, p.errorf(lineNo, "sources", "unknown source %q (the query's sources: %s)", m.name, strings.Join(p.q.SourceNames(), ", "))
		}
		rows := m.rows
		if !m.decoded {
			var err error
			if rows, err = p.rows(lineNo, "sources."+m.name, m.val); err != nil {
				return nil, err
			}
		}
		out[m.name] = rows
	}
	return out, nil
}

// rows decodes an array of row objects. Each row keeps its bytes, compacted,
// as its Data: a copy of its own, except in a scratch pass, where Data
// may share the line's buffer (the rows are dropped before the next line).
func (p *parser) rows(lineNo int, path string, raw json.RawMessage) ([]row.Row, error) {
	// null would unmarshal to an empty list; it is a mistake, not "no rows".
	if kindOf(raw) != "an array" {
		return nil, p.errorf(lineNo, path, "want an array of row objects, got %s", kindOf(raw))
	}
	// The line was validated as a whole (fastMembers or json.Valid), so
	// only the row scanner's stricter grammar can make Elements fail; the
	// elements are then split by encoding/json, as they always were, and
	// decoded again from the first (the decoders give the same answers).
	acc := p.newRowsAcc(lineNo, path, len(raw))
	err := errSlowPath
	if !p.slow {
		err = row.Elements(raw, acc.add)
	}
	var rerr *rowError
	switch {
	case errors.As(err, &rerr):
		return nil, rerr.err
	case err != nil:
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) != nil {
			return nil, p.errorf(lineNo, path, "want an array of row objects, got %s", kindOf(raw))
		}
		acc = p.newRowsAcc(lineNo, path, len(raw))
		for i, e := range elems {
			var buf bytes.Buffer
			buf.Grow(len(e))
			if err := json.Compact(&buf, e); err != nil {
				return nil, p.errorf(lineNo, fmt.Sprintf("%s[%d]", path, i), "%v", err)
			}
			acc.rows = append(acc.rows, row.Row{})
			if err := p.row(lineNo, path, i, buf.Bytes(), &acc.rows[acc.start+i]); err != nil {
				return nil, err.(*rowError).err
			}
		}
	}
	return acc.done(), nil
}

// rowError is p.row's refusal of the row, a *query.Error from p.errorf: Elements
// passes it through, told apart from its own (scanner) errors.
type rowError struct{ err error }

func (e *rowError) Error() string { return e.err.Error() }

// compact is an element Elements accepted, compacted, as the row's Data:
// its own copy, or in a scratch pass possibly the line's bytes.
func (p *parser) compact(e []byte) []byte {
	switch {
	case p.scratch && row.IsCompact(e):
		return e
	case p.scratch:
		p.tmp = row.AppendCompact(p.tmp[:0], e)
		return p.tmp
	case row.IsCompact(e):
		return append(make([]byte, 0, len(e)), e...)
	}
	return row.AppendCompact(make([]byte, 0, len(e)), e)
}

// row decodes element i of the array at path, compacted, into r, or
// feeds it to the inferrer.
func (p *parser) row(lineNo int, path string, i int, data []byte, r *row.Row) error {
	rpath := func() string { return path + "[" + strconv.Itoa(i) + "]" }
	if p.infer != nil {
		if err := p.infer.Add(data); err != nil {
			return &rowError{p.errorf(lineNo, rpath(), "%v", err)}
		}
		if p.fuse != nil {
			p.fuse.check(p, lineNo, path, i, data, false)
		}
		return nil
	}
	if err := p.inferAlong(lineNo, path, i, data); err != nil {
		return err
	}
	if err := p.dec.Decode(data, r); err != nil {
		return &rowError{p.errorf(lineNo, rpath(), "%v", err)}
	}
	return p.checkRow(lineNo, path, i, r)
}

// inferAlong gives a run's row (element i of the array at path, compact)
// to the inferrer of Reader.InferAlong, if any.
func (p *parser) inferAlong(lineNo int, path string, i int, data []byte) error {
	if p.along == nil {
		return nil
	}
	if err := p.along.Add(data); err != nil {
		return &rowError{p.errorf(lineNo, path+"["+strconv.Itoa(i)+"]", "%v", err)}
	}
	return nil
}

// checkRow checks a decoded row (element i of the array at path) against
// the sink's match columns and the schema of an all-columns key.
func (p *parser) checkRow(lineNo int, path string, i int, r *row.Row) error {
	rpath := func() string { return path + "[" + strconv.Itoa(i) + "]" }
	if p.sinkDec != nil {
		var m row.Row
		if err := p.sinkDec.Decode(r.Data, &m); err != nil {
			return &rowError{p.errorf(lineNo, rpath(), "sink.keys: %v (the merge sink matches rows on sink.keys)", err)}
		}
	}
	if len(p.q.Keys) == 0 && p.q.Schema == nil {
		if err := p.checkSchema(lineNo, rpath(), r.Data); err != nil {
			return &rowError{err}
		}
	}
	return nil
}

// checkSchema holds every row to the field names of the file's first row:
// with an all-columns key, the key is the schema, which Spark fixes when the
// query starts.
func (p *parser) checkSchema(lineNo int, path string, data []byte) error {
	names, err := row.FieldNames(data)
	if err != nil {
		return p.errorf(lineNo, path, "%v", err)
	}
	slices.Sort(names)
	if p.schema == nil {
		p.schema = names
		p.schemaAt = fmt.Sprintf("line %d %s", lineNo, path)
		return nil
	}
	if slices.Equal(names, p.schema) {
		return nil
	}
	for _, n := range names {
		if _, found := slices.BinarySearch(p.schema, n); !found {
			return p.errorf(lineNo, path, "field %q is not in the schema set by the first row (%s: %s); with dedup.keys empty every row must have the same fields",
				n, p.schemaAt, strings.Join(p.schema, ", "))
		}
	}
	for _, n := range p.schema {
		if _, found := slices.BinarySearch(names, n); !found {
			return p.errorf(lineNo, path, "missing field %q of the schema set by the first row (%s: %s); with dedup.keys empty every row must have the same fields",
				n, p.schemaAt, strings.Join(p.schema, ", "))
		}
	}
	return nil
}
