package ids

import (
	"regexp"
	"testing"
)

func TestSeededIsDeterministicAndUUIDShaped(t *testing.T) {
	shape := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b, c := Seeded(1), Seeded(1), Seeded(2)
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		x, y, z := a(), b(), c()
		if x != y {
			t.Fatalf("same seed, different ids: %s %s", x, y)
		}
		if x == z {
			t.Fatalf("different seeds gave %s", x)
		}
		if !shape.MatchString(x) {
			t.Fatalf("not a v4 UUID: %s", x)
		}
		if seen[x] {
			t.Fatalf("repeated id %s", x)
		}
		seen[x] = true
	}
}
