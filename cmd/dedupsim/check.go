package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/sim/check"
	"github.com/dedupsim/dedupsim/sim/history"
	"github.com/spf13/cobra"
)

func newCheckCmd() *cobra.Command {
	var asJSON bool
	var scenario string
	cmd := &cobra.Command{
		Use:   "check HISTORY",
		Short: "Re-check a saved history (history.json from run, sweep or replay)",
		Long: `check runs the checker over a history saved by an earlier run, so that old runs can be
re-judged when the checker improves. Exit status: 0 when the history is exactly-once, 1 when it
has a violation, 2 when the file is not a history.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return badInput(err)
			}
			defer f.Close()
			h, err := history.Read(f)
			if err != nil {
				return badInput(fmt.Errorf("%s: %w", args[0], err))
			}
			opts := check.DefaultOptions()
			if scenario != "" {
				s, err := scenarios.Load(scenario)
				if err != nil {
					return badInput(err)
				}
				opts = s.Check // the thresholds the scenario was judged with
			}
			rep := check.Check(h, opts)
			w := cmd.OutOrStdout()
			if asJSON {
				b, _ := json.MarshalIndent(rep, "", "  ")
				fmt.Fprintln(w, string(b))
			} else {
				fmt.Fprintln(w, rep.Verdict.Summary)
				for _, fd := range rep.Findings {
					fmt.Fprintf(w, "  %s (%s, %d): %s\n", fd.Kind, fd.Severity, fd.Count, fd.Message)
					for _, ex := range fd.Examples {
						fmt.Fprintf(w, "    event %s copies %v batches %v: %s\n", ex.Event, ex.Copies, ex.Batches, ex.Detail)
					}
				}
			}
			if !rep.Verdict.ExactlyOnce {
				return &exitError{code: 1, err: fmt.Errorf("%s: not exactly-once", args[0])}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the full report as JSON")
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
