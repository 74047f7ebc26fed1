// Package arch holds no code: its tests enforce the layering and the
// determinism rules that docs/architecture.md states, so that a change
// that breaks one fails `go test ./...` instead of waiting for a
// reviewer.
//
// The rules (arch_test.go; each failure names the package, the file and
// line or the import chain, and the rule):
//
//  1. Layers: a package of engine/... imports (directly or through others)
//     only engine/... and internal/... of this module. sim, faults,
//     scenarios, reports, live, analyze, sizing, execpipe, sweep and cmd
//     are built on the engine, never under it. Test files are not held to it (the Kafka
//     source's and sink's tests borrow live's kfake cluster).
//  2. Pebble: no package of engine/... depends on
//     github.com/cockroachdb/pebble except its two adapters,
//     engine/state/pebblestore and engine/sink/pebblesink, and the two
//     selectors the drivers call, engine/state/stores (a state store by
//     name) and engine/sink/durable (a durable sink by --sink flag). The
//     engine core defaults to the memory store; a driver (the CLI, the live
//     runners, the simulator) chooses Pebble and passes it in.
//  3. Determinism: the non-test files of the deterministic packages
//     (engine/..., sim/..., faults/..., and analyze/... and sizing/..., which
//     left sim/ but whose figures must still be reproducible, diagnose/...,
//     whose findings must be a function of the log, and reports/...,
//     scenarios/..., inspect/..., shrink/... and execpipe/..., whose
//     output is promised byte for byte, and the shared pieces they are
//     made of, internal/codec/..., internal/svgchart, internal/duration,
//     internal/atomicfile and internal/radix) use no wall
//     clock (time.Now, Since, Until, After, AfterFunc, Tick, NewTimer,
//     NewTicker, Sleep; context.WithTimeout, WithDeadline), no global or
//     entropy-seeded randomness (the top-level functions of math/rand and
//     math/rand/v2, only their constructors and types are allowed; any use
//     of crypto/rand) and no go statements. Time, randomness and
//     concurrency reach them as inputs. The files are parsed with go/ast,
//     so a renamed import or a function value (Clock: time.Now) is caught
//     and a comment is not. The exceptions are listed in one table with
//     the reason for each; an exception that no longer matches anything
//     fails too, so the table cannot rot.
//  4. cmd/ functions are under 80 lines (issue 12's bar; non-test files,
//     from func to the closing brace): a verb's help text is a constant,
//     its RunE a function over its flags. There are no exceptions.
//  5. Floors: every package of the module is in a room (the folder with
//     the longest path that holds it) on a floor of the floors table, and
//     its non-test files import only its own room or rooms on lower
//     floors; inside engine/ every package has an engine floor of its own
//     (engineFloors) and imports only engine packages below it. A package
//     on no floor, or a room or engine package that holds nothing, fails
//     too; docs/architecture.md shows both tables, and a test keeps it in
//     step.
package arch
