package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// build is what the binary knows of the source it was built from (Go's
// build information: the module version go install stamps, and the commit
// go build stamps in a git checkout).
type build struct {
	module, version, revision, goVersion string
	modified, known                      bool
}

func readBuild() build {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return build{version: "unknown"}
	}
	b := build{module: info.Main.Path, version: info.Main.Version, goVersion: info.GoVersion, known: true}
	if b.version == "" {
		b.version = "(devel)"
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.revision = s.Value
		case "vcs.modified":
			b.modified = s.Value == "true"
		}
	}
	return b
}

// String is the one-line version every report carries: the module version,
// then the commit when the build recorded one (and "modified" when the
// working tree had uncommitted changes).
func (b build) String() string {
	s := b.version
	if b.revision != "" {
		rev := b.revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += " commit " + rev
		if b.modified {
			s += " modified"
		}
	}
	return s
}

// pin is the go install reference that installs this very build again, as
// a CI recipe pins it (docs/ci.md), and why there is none: the module
// version go install recorded (a release tag, or the pseudo-version of a
// commit), else the commit go build recorded in a clean checkout. A build
// with uncommitted changes, or one that recorded neither, has no pin.
func (b build) pin() (ref, why string) {
	switch {
	case b.modified || strings.HasSuffix(b.version, "+dirty"):
		return "", "the working tree had uncommitted changes: no version installs this build; commit, or install a release"
	case strings.HasPrefix(b.version, "v"):
		return b.version, ""
	case b.revision != "":
		return b.revision, ""
	}
	return "", "no version recorded: install with go install ...@<tag or commit>, or build in a git checkout"
}

// buildVersion is the version line of this binary.
var buildVersion = readBuild().String()

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the module version and commit this binary was built from",
		Long: `version prints the module version (what go install ...@VERSION installed, or (devel) for a
local build), the commit and whether the working tree was modified (recorded by go build in a git
checkout), the Go version, and the pin: the go install line that installs this very build again,
to put in a CI recipe (docs/ci.md). Every report carries the same version line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			b := readBuild()
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "dedupsim %s\n", b)
			fmt.Fprintf(w, "module   %s %s\n", orUnknown(b.module), b.version)
			switch {
			case b.revision != "":
				fmt.Fprintf(w, "commit   %s%s\n", b.revision, map[bool]string{true: " (modified: uncommitted changes)", false: ""}[b.modified])
			case strings.HasPrefix(b.version, "v"):
				fmt.Fprintln(w, "commit   not recorded (go install records the module version only)")
			default:
				fmt.Fprintln(w, "commit   not recorded (not built in a git checkout)")
			}
			fmt.Fprintf(w, "go       %s\n", orUnknown(b.goVersion))
			if ref, why := b.pin(); ref != "" {
				fmt.Fprintf(w, "pin      go install %s/cmd/dedupsim@%s\n", orDefault(b.module, "github.com/dedupsim/dedupsim"), ref)
			} else {
				fmt.Fprintf(w, "pin      none: %s\n", why)
			}
			return nil
		},
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
