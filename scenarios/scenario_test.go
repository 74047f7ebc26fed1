package scenarios

import (
	"strings"
	"testing"
)

func TestCatalogueLoads(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("empty catalogue")
	}
	for _, s := range all {
		if s.Description == "" || (s.Expect.ExactlyOnce == nil && len(s.Expect.Findings) == 0) {
			t.Errorf("%s: every catalogue scenario states what it reproduces and its expected verdict", s.Name)
		}
	}
}

func TestParseErrorsNameFileLineField(t *testing.T) {
	base := "query:\n  dedup: {api: dropDuplicates, keys: [id]}\n  watermark: {column: ts, delay: 10 seconds}\n"
	tests := []struct{ name, text, want string }{
		{"unknown top-level field", base + "fault_phse: 1m\n", "s.yaml:4: field fault_phse not found"},
		{"bad duration", base + "fault_phase: soon\n", "s.yaml:4"},
		{"bad query api", "query:\n  dedup: {api: dropDup, keys: [id]}\n", "s.yaml:2: query: dedup.api"},
		{"bad query in block", "query: |\n  dedup: {api: dropDuplicates, keys: [id]}\n  shuffle_partitions: zero\n", "s.yaml:3: query: shuffle_partitions"},
		{"unknown finding", base + "expect:\n  findings:\n    duplicates: present\n", "s.yaml:6: expect.findings.duplicates: unknown finding kind"},
		{"bad condition", base + "expect:\n  findings:\n    lost: maybe\n", "s.yaml:6: expect.findings.lost"},
		{"unknown fault", base + "faults:\n  crash-after-lunch: {}\n", "s.yaml"},
		{"not a mapping", "- a\n- b\n", "s.yaml: a scenario is a YAML mapping"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestConditions(t *testing.T) {
	for _, tc := range []struct {
		cond string
		got  int
		ok   bool
	}{{"present", 1, true}, {"present", 0, false}, {"absent", 0, true}, {"absent", 2, false},
		{">= 10", 10, true}, {"> 10", 10, false}, {"< 3", 2, true}, {"<= 3", 4, false}, {"== 2", 2, true}, {"5", 5, true}} {
		op, n, err := parseCond(tc.cond)
		if err != nil || holds(op, n, tc.got) != tc.ok {
			t.Errorf("%q with %d: ok=%v err=%v", tc.cond, tc.got, !tc.ok, err)
		}
	}
	for _, bad := range []string{"many", ">= x", "-1", ""} {
		if _, _, err := parseCond(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
