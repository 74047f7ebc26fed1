package capture

import (
	"context"
	"io"
)

// Stream reads the source's ranges as the JSON Lines a capture writes,
// without a file: `dedupsim analyze --from-kafka`. The lines come through a
// pipe from a goroutine; an error (a bad record is a *RecordError) ends
// the stream with it. Closing the reader stops the goroutine.
func Stream(ctx context.Context, s Source, valueFormat string) io.ReadCloser {
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(stream(ctx, &s, valueFormat, pw))
	}()
	return &streamReader{PipeReader: pr, cancel: cancel}
}

type streamReader struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (r *streamReader) Close() error {
	r.cancel()
	return r.PipeReader.Close()
}

func stream(ctx context.Context, s *Source, valueFormat string, w io.Writer) error {
	ranges, err := s.Plan(ctx, nil)
	if err != nil {
		return err
	}
	r, err := newReader(s, ranges)
	if err != nil {
		return err
	}
	defer r.close()
	var buf []byte
	for !r.done() {
		recs, err := r.poll(ctx)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			if buf, err = AppendLine(buf[:0], rec, valueFormat); err != nil {
				return err
			}
			if _, err := w.Write(append(buf, '\n')); err != nil {
				return err
			}
		}
	}
	return nil
}
