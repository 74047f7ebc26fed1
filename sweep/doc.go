// Package sweep runs batches of scenario runs and the sweeps made of them:
// scenario x seed jobs on parallel workers with results in job order
// (RunBatch), each run's report folder and the reports over all runs
// (WriteRun, WriteOutputs), a sweep split into shards (ParseShard, New,
// Sweep) with its manifest shard.json (Manifest, ReadManifest), and the
// merge of the shards into one result (LoadShards, Merge).
//
// The command-line tool (cmd/dedupsim: run, sweep, merge, replay) parses
// the flags and calls this package. A failure that has an exit status of
// its own is an *exitcode.Error (docs/exit-codes.md): 2 for bad input, 1 for any
// other failure.
package sweep
