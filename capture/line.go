package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The columns a captured line adds beside the record's value. They start
// with an underscore, like the _copy column of exported steps, so that
// they seldom meet a field of the value; a value that has one is refused.
const (
	ColPartition = "_partition"
	ColOffset    = "_offset"
	// ColTimestamp is the record's timestamp (Spark's Kafka source column
	// timestamp: CreateTime, or LogAppendTime when the topic says so), the
	// arrival time: analyze --arrival _timestamp, capture --as-steps
	// --trigger groups by it.
	ColTimestamp = "_timestamp"
)

// Value formats.
const (
	// JSONValues merges the value, a JSON object, into the line.
	JSONValues = "json"
	// RawValues puts the value, UTF-8 text, in a "value" column.
	RawValues = "raw"
)

// TimestampLayout is the form of _timestamp: RFC 3339 in UTC with
// milliseconds, Kafka's precision.
const TimestampLayout = "2006-01-02T15:04:05.000Z07:00"

// RecordError is a record whose value cannot be captured.
type RecordError struct {
	Topic     string
	Partition int32
	Offset    int64
	Err       error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("topic %s partition %d offset %d: value: %v", e.Topic, e.Partition, e.Offset, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// AppendLine appends the captured form of rec to dst: one JSON object,
// without a newline. With JSONValues the value must be a JSON object
// (UTF-8, no repeated or reserved field); with RawValues it must be UTF-8
// text, or null.
func AppendLine(dst []byte, rec *kgo.Record, format string) ([]byte, error) {
	fail := func(err error) ([]byte, error) {
		return dst, &RecordError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Err: err}
	}
	start := len(dst)
	dst = append(dst, `{"`+ColPartition+`":`...)
	dst = strconv.AppendInt(dst, int64(rec.Partition), 10)
	dst = append(dst, `,"`+ColOffset+`":`...)
	dst = strconv.AppendInt(dst, rec.Offset, 10)
	dst = append(dst, `,"`+ColTimestamp+`":"`...)
	dst = rec.Timestamp.UTC().AppendFormat(dst, TimestampLayout)
	dst = append(dst, '"')
	switch format {
	case RawValues:
		if rec.Value == nil {
			return append(dst, `,"value":null}`...), nil
		}
		if !utf8.Valid(rec.Value) {
			return fail(errors.New("not UTF-8 text; --value-format raw takes text values only"))
		}
		s, _ := json.Marshal(string(rec.Value))
		dst = append(dst, `,"value":`...)
		return append(append(dst, s...), '}'), nil
	case JSONValues:
	default:
		return dst[:start], fmt.Errorf("capture: value format %q (want json or raw)", format)
	}
	if rec.Value == nil {
		return fail(errors.New("null (a tombstone); --value-format raw keeps it as a null value column"))
	}
	if err := checkObject(rec.Value); err != nil {
		return fail(err)
	}
	var c bytes.Buffer
	if err := json.Compact(&c, rec.Value); err != nil {
		return fail(err)
	}
	body := c.Bytes()[1:] // after '{'
	if len(body) > 1 {
		dst = append(dst, ',')
	}
	return append(dst, body...), nil
}

// checkObject accepts a JSON object whose top-level field names are
// distinct and none of the reserved columns, in valid UTF-8.
func checkObject(v []byte) error {
	if !utf8.Valid(v) {
		return errors.New("invalid UTF-8; --value-format raw does not help, the value is not text")
	}
	if !json.Valid(v) {
		return errors.New("not JSON; give --value-format raw to keep it as a string column")
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return errors.New("a JSON value that is not an object; give --value-format raw to keep it as a string column")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name := tok.(string)
		switch {
		case name == ColPartition || name == ColOffset || name == ColTimestamp:
			return fmt.Errorf("field %q is a column capture adds; give --value-format raw to keep the value as a string column", name)
		case seen[name]:
			return fmt.Errorf("field %q given twice", name)
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	return nil
}

// position is the place of a captured line, read back from it.
type position struct {
	Partition *int32 `json:"_partition"`
	Offset    *int64 `json:"_offset"`
	Timestamp string `json:"_timestamp"`
}

// readPosition reads the partition, offset and timestamp (Unix ms) of a
// captured line.
func readPosition(line []byte) (p int32, off, tsMs int64, err error) {
	var pos position
	if err := json.Unmarshal(line, &pos); err != nil {
		return 0, 0, 0, err
	}
	if pos.Partition == nil || pos.Offset == nil || *pos.Partition < 0 || *pos.Offset < 0 {
		return 0, 0, 0, errors.New("no _partition and _offset: not a line capture wrote")
	}
	t, err := time.Parse(time.RFC3339Nano, pos.Timestamp)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("_timestamp: %v", err)
	}
	return *pos.Partition, *pos.Offset, t.UnixMilli(), nil
}
