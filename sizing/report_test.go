package sizing

import "testing"

func TestGroup(t *testing.T) {
	if Group(1234567) != "1,234,567" || Group(-1000) != "-1,000" || Group(12) != "12" {
		t.Error("Group")
	}
}
