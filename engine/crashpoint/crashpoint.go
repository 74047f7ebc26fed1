// Package crashpoint is the one list of the places in a micro-batch where a
// driver may die: the engine asks its crash hook at each, a steps file arms
// one by name ({"crash": "after-sink-write"}), the fault catalogue derives a
// crash-after-* fault from each, and `dedupsim engine --crash-at` kills the
// process at one. It imports nothing of the project, so that all of them can
// share it and no list has to be checked against another at run time.
//
// The names are part of the steps format, of scenario files (as fault
// names), of saved histories (history.Crash.Point, history.Batch.Crashed)
// and of the simulator's random streams ("fault/crash-" + name): never
// rename or reorder one, only add.
package crashpoint

import "strings"

// Point names a place in a batch where a driver may die.
type Point string

// The points, in the order a batch passes them. What each leaves behind is
// what the restart rules of spark-semantics.md §9 then read.
const (
	// AfterOffsetsWrite: offsets/N is written; nothing else.
	AfterOffsetsWrite Point = "after-offsets-write"
	// AfterStateCommit: state version N+1 is committed; the sink is not
	// called.
	AfterStateCommit Point = "after-state-commit"
	// AfterSinkWrite: the sink holds batch N; commits/N is not written, so
	// the batch is replayed.
	AfterSinkWrite Point = "after-sink-write"
	// AfterCommit: commits/N is written; the next batch is not planned.
	AfterCommit Point = "after-commit"
)

// Info describes a point.
type Info struct {
	Point Point
	// Leaves is what the checkpoint holds when the driver dies there, as the
	// fault catalogue's documentation gives it.
	Leaves string
}

var points = []Info{
	{AfterOffsetsWrite, "offsets/N written; nothing else"},
	{AfterStateCommit, "offsets/N and state version N+1 written; sink not called"},
	{AfterSinkWrite, "the sink holds batch N; commits/N not written: the batch is replayed"},
	{AfterCommit, "commits/N written; the next batch not planned"},
}

// All lists the points in the order a batch passes them. The result is a
// copy.
func All() []Point {
	out := make([]Point, len(points))
	for i, p := range points {
		out[i] = p.Point
	}
	return out
}

// Infos lists the points with their descriptions, in order. The result is a
// copy.
func Infos() []Info { return append([]Info(nil), points...) }

// Names lists the point names in order.
func Names() []string {
	out := make([]string, len(points))
	for i, p := range points {
		out[i] = string(p.Point)
	}
	return out
}

// Parse finds a point by its exact name.
func Parse(name string) (Point, bool) {
	if i := Index(Point(name)); i >= 0 {
		return points[i].Point, true
	}
	return "", false
}

// Index is p's position in the order a batch passes the points, -1 for a
// name that is not a point.
func Index(p Point) int {
	for i := range points {
		if points[i].Point == p {
			return i
		}
	}
	return -1
}

// List writes the names as messages give the choices: "a, b, c, d".
func List() string { return strings.Join(Names(), ", ") }
