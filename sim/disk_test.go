package sim

import (
	"errors"
	"slices"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
)

func TestDiskFailsNthOperationAndEverythingAfter(t *testing.T) {
	d := newDisk()
	d.failOp = 3 // MkdirAll, Create, then the Write fails
	err := fsys.WriteAtomic(d, "offsets/0", []byte("v1\n{}"))
	if !errors.Is(err, ErrInjected) || !d.dead {
		t.Fatalf("err %v dead %v, want the injected crash", err, d.dead)
	}
	if _, err := d.ReadDir("offsets"); !errors.Is(err, ErrInjected) {
		t.Fatalf("an operation after the crash: %v, want ErrInjected", err)
	}
	d.processDeath()
	if d.dead {
		t.Fatal("still dead after the restart")
	}
	// The process died; the page cache kept the (empty) temp file.
	if ok, _ := d.Exists("offsets/.0.tmp"); !ok {
		t.Fatal("the temp file created before the crash is gone after a process death")
	}
}

func TestDiskFailsNthSync(t *testing.T) {
	d := newDisk()
	must(fsys.WriteAtomic(d, "a", []byte("first")))
	d.reset()
	d.failSync = 2
	must(fsys.WriteAtomic(d, "b", []byte("second")))
	if err := fsys.WriteAtomic(d, "c", []byte("third")); !errors.Is(err, ErrInjected) {
		t.Fatalf("second fsync: %v, want ErrInjected", err)
	}
	if d.ops != 11 || d.syncs != 2 {
		t.Fatalf("counted %d ops and %d syncs, want 11 and 2", d.ops, d.syncs)
	}
}

// TestDiskPowerLoss: a power loss drops what was not durable and reports
// exactly those paths; synced files survive.
func TestDiskPowerLoss(t *testing.T) {
	d := newDisk()
	must(fsys.WriteAtomic(d, "commits/0", []byte("v1\n{}")))
	must(fsys.WriteAtomic(d, "commits/1", []byte("v1\n{}")))
	must(d.Remove("commits/0")) // a purge: not dir-synced
	f, err := d.Create("commits/.2.tmp")
	must(err)
	_, err = f.Write([]byte("v1\n{\"nextBatchWatermarkMs\":0}"))
	must(err)
	lost, torn := d.powerLoss(false, nil)
	if want := []string{"commits/.2.tmp", "commits/0"}; !slices.Equal(lost, want) {
		t.Fatalf("lost %v, want %v", lost, want)
	}
	if torn != "" {
		t.Fatalf("torn %q without a tear", torn)
	}
	names, _ := d.ReadDir("commits")
	if want := []string{"0", "1"}; !slices.Equal(names, want) {
		t.Fatalf("after the power loss: %v, want %v (the removal comes back, the temp file goes)", names, want)
	}
	if lost, _ := d.powerLoss(false, nil); len(lost) != 0 {
		t.Fatalf("a second power loss lost %v", lost)
	}
}

// TestDiskTornWrite: a tear keeps a prefix of the unsynced write, durably,
// under its (temp) name; the file WriteAtomic was replacing is untouched.
func TestDiskTornWrite(t *testing.T) {
	d := newDisk()
	must(fsys.WriteAtomic(d, "offsets/0", []byte("old")))
	d.reset()
	d.failSync = 1
	data := []byte("v1\n{\"batchWatermarkMs\":0}")
	if err := fsys.WriteAtomic(d, "offsets/1", data); !errors.Is(err, ErrInjected) {
		t.Fatal(err)
	}
	lost, torn := d.powerLoss(true, func(n int) int {
		if n != len(data) {
			t.Fatalf("tearing a write of %d bytes, want %d", n, len(data))
		}
		return 5
	})
	if torn != "offsets/.1.tmp" || !slices.Equal(lost, []string{"offsets/.1.tmp"}) {
		t.Fatalf("torn %q lost %v", torn, lost)
	}
	got, err := d.ReadFile("offsets/.1.tmp")
	if err != nil || string(got) != string(data[:5]) {
		t.Fatalf("torn file %q (%v), want %q", got, err, data[:5])
	}
	if old, _ := d.ReadFile("offsets/0"); string(old) != "old" {
		t.Fatalf("offsets/0 = %q", old)
	}
	if _, err := d.ReadFile("offsets/1"); !fsys.IsNotExist(err) {
		t.Fatalf("offsets/1 exists after the crash: %v", err)
	}
	// The tear is durable: a second power loss keeps it.
	d.powerLoss(false, nil)
	if got, _ := d.ReadFile("offsets/.1.tmp"); string(got) != string(data[:5]) {
		t.Fatalf("the torn file did not survive a second power loss: %q", got)
	}
}
