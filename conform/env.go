package conform

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/dedupsim/dedupsim/conform/sparkrunner"
	"github.com/dedupsim/dedupsim/internal/atomicfile"
)

// EnsureEnv makes sure cacheDir/venv-<version> holds pyspark==version and
// returns its python: conform/sparkrunner/env.sh (embedded) run with the
// machine's own pip configuration. A complete venv is reused as it is.
// Progress goes to log.
func EnsureEnv(ctx context.Context, version, cacheDir string, log io.Writer) (string, error) {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", err
	}
	script := filepath.Join(cacheDir, "env.sh")
	if err := atomicfile.WriteFile(script, sparkrunner.EnvScript); err != nil {
		return "", err
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", script, version)
	ownGroup(cmd)
	cmd.Env = append(os.Environ(), "DEDUPSIM_SPARK_CACHE="+cacheDir)
	cmd.Stdout = &out
	if log != nil {
		cmd.Stderr = log
	} else {
		cmd.Stderr = io.Discard
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("install pyspark %s into %s: %w", version, cacheDir, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	return lines[len(lines)-1], nil
}
