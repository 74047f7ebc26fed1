// Package nondet is the fixture of TestNondeterminismFinds: each line
// marked "want" must be reported, and no other.
package nondet

import (
	"context"
	crand "crypto/rand" // want crypto/rand
	"math/rand"
	mrand "math/rand/v2"
	"time"
)

type config struct{ clock func() time.Time }

func Forbidden(ctx context.Context) {
	_ = time.Now()                               // want time.Now
	_ = config{clock: time.Now}                  // want time.Now
	_ = time.Since(time.Time{})                  // want time.Since
	<-time.After(time.Second)                    // want time.After
	time.Sleep(time.Millisecond)                 // want time.Sleep
	_ = time.NewTimer(time.Second)               // want time.NewTimer
	_, _ = context.WithTimeout(ctx, time.Second) // want context.WithTimeout
	_ = mrand.IntN(3)                            // want math/rand/v2.IntN
	_ = rand.Intn(3)                             // want math/rand.Intn
	mrand.Shuffle(2, func(i, j int) {})          // want math/rand/v2.Shuffle
	go func() {}()                               // want go statement
	_, _ = crand.Read(nil)
}

func Allowed(time int, now func() int64) int64 {
	r := mrand.New(mrand.NewPCG(1, 2))
	old := rand.New(rand.NewSource(1))
	_ = r.IntN(3) + old.Intn(3) + time
	var d = 5 * 1e9
	_ = d
	return now()
}
