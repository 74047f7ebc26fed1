/*
Package check is the checker: a pure function from a recorded run
(sim/history.History) to typed findings, in the manner of Jepsen and Elle.
It reads the history and nothing else, never mutates it, and returns the same
report for the same history and options, so a saved run can be re-checked
whenever the checker improves:

	r := check.Check(h, check.DefaultOptions())
	if !r.Table.Clean() { ... the table holds duplicates or lost events ... }
	if !r.Verdict.ExactlyOnce { ... the API contract was broken: r.Findings ... }

Each finding has a stable kind, a fixed severity (violation, counted,
warning), a count and a few examples (event, copies, batches, detail);
findings come in the order of Kinds, examples by event id (natural order).

# What is authoritative

A batch id can run more than once: a driver that dies after the sink write
but before the commit re-runs the batch on restart with the same offsets and
watermark (spark-semantics.md §9.3). The operator's result is the LAST
execution (in History.Batches order) of each batch id of a checkpoint: the one
whose state was committed and whose offsets the next batch starts from.
Earlier executions count only through what they did to the sink
(History.Writes, History.Table).

A restart on a fresh checkpoint (Restart.FreshCheckpoint, a shape change)
opens a new checkpoint "epoch": batch ids, dedup state and the watermark start
again, and no dedup guarantee spans two epochs. The first batch 0 at or after
a fresh restart's time opens the next epoch; a sink write belongs to the epoch
of the latest execution of its batch id at or before the write's time.

Each checkpoint is judged by the query it ran: the last by the history's
fields (API, DelayMs, EventTimeInKey: the final query), an earlier one by the
query YAML it started with (History.InitialQuery for the first, the opening
fresh restart's Restart.Query for later ones), parsed with engine/query.

The dedup key is the event id (Copy.Event, the "id" column), plus the event
time when the event time is in the key.

# Rules (kind, severity: rule)

malformed-history, violation: an input or table or sink row that is not a copy
index, len(Outcomes) != len(Input), an outcome other than
emitted/duplicate/late/filtered, kept < 0 or > rows, a table with hasTable
false, a sink that keeps a table (table, merge, append) with hasTable false,
a sink write for a batch id that never ran or delivering a copy no execution
of its batch emitted, a table with rows but no sink write that kept any, a
copy held in the table more often than sink writes that kept rows delivered
it, two copies at one (source, partition, offset), an unknown api, or
dropDuplicatesWithinWatermark without a watermark. Bad rows are ignored by
the other rules. Count: contradictions. (history.Read refuses values out of
their domain before the checker sees them; `dedupsim check` exits 2 on
this finding.)

lost, violation: conservation. Every copy must be read by exactly one
authoritative batch of a checkpoint, with one outcome, so that
copies = emitted + duplicates dropped + late dropped (Counts.Conservation).
A copy is lost when (a) no authoritative batch read it although a later
offset of its (source, partition) was read, or (b) it was dropped as a
duplicate while no copy of its key had been emitted in the same dedup scope
(checkpoint; the batch for batchDropDuplicates) at the same or an earlier
batch id. Count: copies; the message says how many events were never
emitted.

double-read, violation: a copy in the input of two authoritative batches of
one checkpoint (or twice in one). Count: copies.

duplicate-emitted, violation, and duplicate-emitted-outside-guarantee,
counted: an event emitted by more than one authoritative row. Within one
checkpoint, it breaks the API's guarantee when
  - batchDropDuplicates: two emitted copies in the same batch;
  - event time in the key (dropDuplicates with watermark): two emitted copies
    with the same event time (re-stamped retries are different keys: outside);
  - dropDuplicatesWithinWatermark: two emitted copies whose event times differ
    by less than the delay (|t1 - t2| < delayMs; >= delay: outside, §4.5);
  - dropDuplicates without a watermark or without the event time in the key:
    any two (state is never evicted).

Emissions in different checkpoints are outside. Each event is in exactly one
of the two findings. Count: events.

late-filter-mismatch, violation: with a streaming watermark, a row is late
iff eventTimeUs <= LateWatermarkMs*1000 (§1.5, inclusive); a late row not
dropped as late, or a non-late row dropped as late, is a mismatch. Without a
watermark, or for batchDropDuplicates, any late row is. Count: rows.

sink-replay-duplicate, violation: with a final table, an event held more
often than it was emitted, or a copy held more often than it was emitted;
and a batch id (per checkpoint) delivered more than once with Kept > 0 on
more than one delivery (the only evidence without a table, e.g.
foreachBatch). Count: such events, plus such batches whose rows are not
already counted through an event.

sink-lost, violation: with a final table, an event emitted by an
authoritative batch and absent from the table (e.g. a table sink whose
txnAppId survived a fresh checkpoint skips the new batch 0). Count: events.

watermark-regressed, violation: within a checkpoint, an execution whose
WatermarkMs or LateWatermarkMs is below that of an execution of a smaller
batch id, or whose NextWatermarkMs is below its WatermarkMs. Count:
executions.

not-converged, violation: a copy no authoritative batch read and no later
offset of its partition was read either (the run ended before consuming
it); and, when HealAtMs > 0, an honest healed-phase event (every copy
appended at or after HealAtMs, no Fault, no event time more than the delay
ahead of its append time) that was not emitted exactly once although no copy
was late. Events with a faulted copy are judged by the API's guarantee only:
a retry decided in the fault phase may land in the healed one. Count: copies
plus events.

reread-fresh-checkpoint, counted: a copy read by authoritative batches of two
checkpoints. Count: copies.

late-dropped, counted: an event never emitted with a copy dropped as late, or
an emitted event whose original copy (lowest CopyNo) was dropped as late. The
message counts honest events (no Fault and no future event time on any copy),
those of the healed phase, and, when some copy's event time is ahead of its
append time by more than the delay (only such a copy can push the watermark
past on-time events) or a fault name or coverage mark says "clock", "future"
or "skew", reports a future-clock producer. Count: events.

state-unbounded, warning (stateful APIs): points (AtMs, NumRowsTotal) of the
authoritative batches; the window is the second half of [first, last batch
time], minus a warm-up of one retention period from the start of each
checkpoint for the evicting APIs. Needs >= 4 points spanning >= a quarter of
the run. Fires when the least-squares growth over the window (slope x window
width) exceeds GrowthFraction (0.2) x the window's mean, and the max over the
last quarter exceeds the max over the second quarter (or over the first half
when the second quarter is empty). Count: 1.

state-over-bound, warning (evicting APIs only: dropDuplicates with the event
time in the key and a watermark, dropDuplicatesWithinWatermark): retention
= delay + trigger, or 2 x delay + trigger for WithinWatermark; bound =
ArrivalRatePerSec x retention/1000 x (1 + StateMargin). Batches after the
warm-up whose NumRowsTotal exceeds the bound. The trigger is
TriggerIntervalMs, or the median gap between authoritative batches that read
data. A last batch still over the bound makes Verdict.Converged false. APIs
that never evict get a note instead. Count: batches.

watermark-stalled, warning (streaming APIs with a watermark): the run is cut
at each watermark advance (NextWatermarkMs above its running max in time
order, or the first batch of a checkpoint); data flows while appends follow
each other within StallSpanMs/3; a stall is the overlap of a no-advance
interval and a flow lasting >= StallSpanMs (default 3 x max(delay, trigger,
1 s)) once the driver's downtime (each crash to its restart) is taken out.
Count: stalls.

metrics-mismatch, warning: per authoritative batch, for stateful APIs
NumRowsUpdated = rows emitted; and when Progress parses, numInputRows = rows
read, stateOperators[0].numRowsDroppedByWatermark = late rows,
customMetrics.numDroppedDuplicateRows = duplicate rows, numRowsUpdated = rows
emitted, numRowsTotal = Batch.NumRowsTotal. Count: batches.

# The table (Report.Table)

What reached the sink, per logical event: in the final table once, more
than once (with the extra rows), or never; never splits into dropped as
late (never emitted, a copy dropped by the late filter), filtered (never
emitted, removed by drop_future_events) and lost (everything else: never
read, dropped as a duplicate of nothing, not consumed by the end of the
run, or emitted and missing from the table). Without a final table
(foreachBatch) "the table" is what the sink received: every row of every
delivery, replays counted again. Table.Clean (no event more than once,
none lost) is what --strict tests, whatever the API promises.

# The margin (Report.Margin)

For a streaming query with a watermark: the later copies of each event
(read after its first emitted copy, same checkpoint) by fate (caught by
state, caught as late, escaped), the largest gap still caught, the
retention (2 x delay of event time for dropDuplicatesWithinWatermark, the
delay with the event time in the key, forever otherwise), and the delays
from which every larger delay catches every copy: over the events this run
caught (KeptDelayMs: the delay could have come down to it) and over all of
them (NeededDelayMs: the delay that would have caught the escaped ones; -1
when none would). They come from replaying each event's reads with another
delay d, the run's arrivals and batches held, every recorded watermark
shifted by (delay - d) (margin.go says the rules). A watermark still at 0
is taken to stay 0, so copies read before the watermark first moved are
judged as if it had not moved under a smaller delay either.

# Verdict

ExactlyOnce: no finding of severity violation: the API contract was kept
(reports say "API contract kept"; the field keeps its name for
compatibility). It says nothing about the table: re-stamped retries under
dropDuplicates on (id, event time) keep the contract and fill the table
with duplicates. Converged: no not-converged
and no malformed-history finding, and the state back under its bound at the
last batch (when a bound applies). Summary: one line, the table first
("table: 12017 of 12119 events once, 102 more than once (102 extra rows),
0 never; API contract kept; counted: ...").
*/
package check
