package kafkasource

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The default wait between offset attempts ends with its context: a call
// whose Kafka timeout is spent does not sleep on.
func TestSleepEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("sleep on an ended context = %v, want context.Canceled", err)
	}
	if err := sleep(t.Context(), 0); err != nil {
		t.Fatalf("sleep 0 = %v", err)
	}
}
