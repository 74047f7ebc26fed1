package sparkrunner

import (
	"bytes"
	"os"
	"testing"
)

// TestEmbedded: the binary carries every file of this folder whole, the
// bytes the scripts and the Makefile run from the checkout.
func TestEmbedded(t *testing.T) {
	for name, got := range map[string][]byte{"runner.py": Runner, "env.sh": EnvScript, "delta-fetch.sh": DeltaFetch,
		"delta.tsv": DeltaReleases, "delta-pom.xml": DeltaPom} {
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || !bytes.Equal(got, want) {
			t.Errorf("embedded %s: %d bytes, the file has %d", name, len(got), len(want))
		}
	}
	if !bytes.Contains(Runner, []byte("pyspark")) || !bytes.HasPrefix(EnvScript, []byte("#!/usr/bin/env bash\n")) {
		t.Errorf("runner.py or env.sh is not the runner or its environment script")
	}
}
