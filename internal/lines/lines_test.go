package lines

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader("ab\n\n"+strings.Repeat("x", 40)+"\nlast"), 16)
	for _, want := range []string{"ab", "", strings.Repeat("x", 40), "last"} {
		got, err := Read(br, 64, "")
		if err != nil || string(got) != want {
			t.Fatalf("%q %v, want %q", got, err, want)
		}
	}
	if _, err := Read(br, 64, ""); err != io.EOF {
		t.Fatalf("after the last line: %v", err)
	}
	long := bufio.NewReaderSize(strings.NewReader(strings.Repeat("y", 100)+"\n"), 16)
	if _, err := Read(long, 64, " (64 B)"); err == nil || err.Error() != "line longer than 64 bytes (64 B)" {
		t.Fatalf("a long line: %v", err)
	}
}
