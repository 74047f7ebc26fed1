package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/reports"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/dedupsim/dedupsim/sim/check"
	"github.com/dedupsim/dedupsim/sim/history"
	"github.com/spf13/cobra"
)

func newCheckCmd() *cobra.Command {
	var asJSON, strict bool
	var scenario string
	cmd := &cobra.Command{
		Use:   "check [--strict] HISTORY",
		Short: "Re-check a saved history (history.json or history.json.gz from run, sweep or replay)",
		Long: `check runs the checker over a history saved by an earlier run (plain or gzip-compressed), so
that old runs can be re-judged when the checker improves. It prints what reached the table
first (events once, more than once, never: dropped as late, filtered or lost), then whether the
API kept its contract, the margin, the checks it could not run, and the findings.

Exit status: 0 when the API contract was kept, 1 when it was broken (with --strict, also when the
table holds an event more than once or misses one that was not dropped as late or filtered,
whatever the API promises), 2 when the file is not a history or contradicts itself
(malformed-history).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			f, err := os.Open(path)
			if err != nil {
				return exitcode.Bad(err)
			}
			defer f.Close()
			h, err := history.Read(f)
			if err != nil {
				if hint := reports.NotAHistory(path); hint != "" {
					return exitcode.Bad(fmt.Errorf("%s: %s", path, hint))
				}
				return exitcode.Bad(fmt.Errorf("%s: %w", path, err))
			}
			opts := check.DefaultOptions()
			if scenario != "" {
				s, err := scenarios.Load(scenario)
				if err != nil {
					return exitcode.Bad(err)
				}
				opts = s.Check // the thresholds the scenario was judged with
			}
			rep := check.Check(h, opts)
			w := cmd.OutOrStdout()
			if asJSON {
				b, _ := json.MarshalIndent(rep, "", "  ")
				fmt.Fprintln(w, string(b))
			} else {
				reports.PrintCheck(w, &result.Run{Report: rep, History: h})
			}
			if f := rep.Find(check.MalformedHistory); f != nil {
				return exitcode.Bad(fmt.Errorf("%s: malformed-history: %d contradictions, e.g. %s", path, f.Count, f.Examples[0].Detail))
			}
			if !rep.Verdict.ExactlyOnce {
				var kinds []string
				for _, f := range rep.Findings {
					if f.Severity == check.Violation {
						kinds = append(kinds, fmt.Sprintf("%s (%d)", f.Kind, f.Count))
					}
				}
				return &exitcode.Error{Code: 1, Err: fmt.Errorf("%s: API contract broken: %s", path, strings.Join(kinds, ", "))}
			}
			if strict && !rep.Table.Clean() {
				return &exitcode.Error{Code: 1, Err: fmt.Errorf("%s: --strict: the %s holds %d events more than once and lost %d (%s)", path, rep.Table.Name(), rep.Table.MoreThanOnce, rep.Table.NeverLost, rep.Table.Line())}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the full report as JSON")
	cmd.Flags().BoolVar(&strict, "strict", false, "also exit 1 when the table holds an event more than once or misses one not dropped as late or filtered, whatever the API promises")
	cmd.Flags().StringVar(&scenario, "scenario", "", "judge with this scenario's check thresholds (state margin, stall span)")
	return cmd
}

func newListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the scenario catalogue",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			all, err := scenariosCatalogue()
			if err != nil {
				return err
			}
			for _, s := range all {
				fmt.Fprintf(cmd.OutOrStdout(), "%-44s %s\n", s.Name, firstLine(s.Description))
			}
			return nil
		},
	}
}
