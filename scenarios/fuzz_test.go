package scenarios

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/internal/yamlstrict"
)

// FuzzLoadScenario fuzzes the scenario loader (Parse, which Load calls on
// a file's bytes), seeded with every catalogue, incident and live file and
// the refused cases. Whatever the bytes, it never panics; it either refuses
// them with one *yamlstrict.Error naming the file on one line, or returns a scenario
// whose name is a safe file name, whose configuration validates and whose
// memory can be predicted.
func FuzzLoadScenario(f *testing.F) {
	entries, err := fs.ReadDir(catalogueFS, "catalogue")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		data, err := fs.ReadFile(catalogueFS, "catalogue/"+e.Name())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, dir := range []string{"incidents", "live"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, p := range files {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	for _, tc := range refusedCases {
		if len(tc.text) < 4096 {
			f.Add([]byte(refuseBase + tc.text))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f.yaml", data)
		if err != nil {
			var e *yamlstrict.Error
			if !errors.As(err, &e) || e.File != "f.yaml" {
				t.Fatalf("error %v (%T): want a *yamlstrict.Error naming f.yaml", err, err)
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("a multi-line message: %q", err.Error())
			}
			return
		}
		if !safeName(s.Name) {
			t.Fatalf("loaded a scenario named %q", s.Name)
		}
		if err := s.Config.Validate(); err != nil {
			t.Fatalf("loaded a scenario whose config does not validate: %v", err)
		}
		if _, err := s.Config.Predict(); err != nil {
			t.Fatalf("loaded a scenario whose memory cannot be predicted: %v", err)
		}
	})
}
