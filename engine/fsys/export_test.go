package fsys

// Spilled reports whether name's current content lives in a spill file.
func Spilled(m *Mem, name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ino := m.lookupFile(cleanPath(name))
	return ino != nil && ino.data.f != nil
}

// SetMaxOpenSpills sets the cap on open spill files and returns the old one.
func SetMaxOpenSpills(n int64) int64 { return maxOpenSpills.Swap(n) }
