package shrink

// budget counts the candidate runs left; every run of the simulator or the
// engine costs one, so a shrink is bounded and, its order being fixed,
// deterministic.
type budget struct {
	left, used int
}

// take spends one run; false when none is left.
func (b *budget) take() bool {
	if b.left <= 0 {
		return false
	}
	b.left--
	b.used++
	return true
}

// ddmin is Zeller and Hildebrandt's delta debugging over n items: it
// removes chunks of the items kept while test still holds for what is left,
// first halves, then finer chunks, and returns which items are kept (a
// 1-minimal set when the budget lasts: removing any one kept item makes
// test fail). test is never called with the full set, which the caller
// knows holds.
func ddmin(n int, test func(keep []bool) bool, b *budget) []bool {
	keep := make([]bool, n)
	for i := range keep {
		keep[i] = true
	}
	gran := 2
	for {
		idx := kept(keep)
		if len(idx) < 2 && gran > 2 {
			break
		}
		if len(idx) == 0 {
			break
		}
		gran = min(gran, len(idx))
		removed := false
		for c := 0; c < gran; c++ {
			lo, hi := c*len(idx)/gran, (c+1)*len(idx)/gran
			if lo == hi {
				continue
			}
			if !b.take() {
				return keep
			}
			cand := append([]bool{}, keep...)
			for _, i := range idx[lo:hi] {
				cand[i] = false
			}
			if test(cand) {
				keep = cand
				removed = true
				gran = max(gran-1, 2)
				break
			}
		}
		if removed {
			continue
		}
		if gran >= len(idx) {
			break
		}
		gran = min(2*gran, len(idx))
	}
	return keep
}

func kept(keep []bool) []int {
	var out []int
	for i, k := range keep {
		if k {
			out = append(out, i)
		}
	}
	return out
}
