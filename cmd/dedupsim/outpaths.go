package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/internal/pathcheck"
	"github.com/dedupsim/dedupsim/scenarios"
)

// The lists of what each verb reads and writes, for the rule that no verb
// writes over a file it reads in the same run, nor one of its outputs over
// another (docs/exit-codes.md); the comparison itself is
// internal/pathcheck's RefuseOverlap, called before anything is read or
// written.

// diagnoseOverlap: diagnose's outputs (--emit-scenario, --out's
// report.html, report.json and junit.xml) against the logs it reads (a
// rolling event log is a folder), --query and --checkpoint.
func diagnoseOverlap(logs []string, o diagnoseOptions) error {
	inputs := []pathcheck.Path{pathcheck.ReadsFile("--query", o.queryFile), pathcheck.ReadsDir("--checkpoint", o.checkpoint)}
	for _, l := range logs {
		if fi, err := os.Stat(l); err == nil && fi.IsDir() {
			inputs = append(inputs, pathcheck.ReadsDir("the log", l))
		} else {
			inputs = append(inputs, pathcheck.ReadsFile("the log", l))
		}
	}
	outputs := append([]pathcheck.Path{pathcheck.WritesFile("--emit-scenario", o.emit)}, pathcheck.WritesInFolder("--out", o.out, "report.html", "report.json", "junit.xml")...)
	return pathcheck.RefuseOverlap("diagnose", inputs, outputs)
}

// scenarioArgs are run's and sweep's scenario arguments as inputs (files;
// a folder argument is no folder input: the default --out may well lie
// inside the folder of scenarios given).
func scenarioArgs(args []string) []pathcheck.Path {
	var ps []pathcheck.Path
	for _, a := range args {
		ps = append(ps, pathcheck.ReadsFile("the scenario", a))
	}
	return ps
}

// batchOutputs are what run and sweep write at the top of --out.
func batchOutputs(dir string) []pathcheck.Path {
	return pathcheck.WritesInFolder("--out", dir, "index.html", "summary.md", "junit.xml", "shard.json")
}

// refuseRunFolders refuses a scenario file that lies inside a report
// folder the run writes: <out>/<scenario>-<seed>/ of any scenario of list
// and any seed the run may give (seedIn), whose reports are replaced, whose
// history is removed and whose live/ is emptied (sweep.RunDir, sweep.WriteRun,
// freshLiveDir). batchOutputs covers the files at the top of --out; a
// folder of scenarios inside --out stays allowed.
func refuseRunFolders(verb, out string, list []*scenarios.Scenario, seedIn func(uint64) bool) error {
	for _, s := range list {
		if s.File == "" || strings.HasPrefix(s.File, "catalogue:") {
			continue
		}
		first, nested, ok := pathcheck.FirstFolderUnder(out, s.File)
		if !ok || !nested {
			continue
		}
		for _, t := range list {
			tail, ok := strings.CutPrefix(first, t.Name+"-")
			if !ok {
				continue
			}
			if seed, err := strconv.ParseUint(tail, 10, 64); err == nil && strconv.FormatUint(seed, 10) == tail && seedIn(seed) {
				return fmt.Errorf("%s: the scenario %s lies inside %s, the report folder of %s seed %d that this run writes: refusing to write there", verb, s.File, filepath.Join(out, first), t.Name, seed)
			}
		}
	}
	return nil
}

// refuseExportFolders refuses a path that is, or lies inside, an entry
// checkpoint-K (K >= 1) of replay's --export folder: an export writes the
// pairs of later checkpoints there and removes those an earlier export left
// (reports.ExportRun), so whatever is there is replaced or deleted.
func refuseExportFolders(exportDir string, paths ...pathcheck.Path) error {
	if exportDir == "" {
		return nil
	}
	for _, p := range paths {
		if p.Path == "" {
			continue
		}
		first, _, ok := pathcheck.FirstFolderUnder(exportDir, p.Path)
		if !ok {
			continue
		}
		if k, ok := strings.CutPrefix(first, "checkpoint-"); ok {
			if n, err := strconv.ParseUint(k, 10, 64); err == nil && n >= 1 {
				return fmt.Errorf("replay: %s %s lies inside %s, which --export writes or removes: refusing", p.What, p.Path, filepath.Join(exportDir, first))
			}
		}
	}
	return nil
}
