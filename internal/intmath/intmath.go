// Package intmath holds the integer arithmetic that Spark does with Java's
// Math helpers and Go has no operator for. It imports nothing of the
// project.
package intmath

// FloorDiv is Java's Math.floorDiv: a / b rounded toward negative infinity
// (Go's / truncates toward zero). Spark turns an event time in microseconds
// into milliseconds with it (DateTimeUtils.microsToMillis), so that
// -1µs is -1ms, not 0. b must not be 0.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
