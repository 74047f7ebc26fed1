package reports

import (
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestReportRendersInChromium renders report.html in headless Chromium
// (Debian's chromium package), takes a screenshot and checks that it is
// not blank: the charts and tables are drawn. Without Chromium the test
// skips, except under CI=true, where .ci/run installs it.
func TestReportRendersInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is missing under CI=true (.ci/run installs Debian's chromium)")
		}
		t.Skip("chromium not installed (apt-get install chromium); CI=true makes this a failure")
	}
	dir := t.TempDir()
	if err := WriteRun(dir, sample()); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=900,1800",
		"--screenshot="+shot, "file://"+filepath.Join(dir, "report.html"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	dark, colored := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r < 0x8000 && g < 0x8000 && bl < 0x8000 {
				dark++ // text
			}
			if max(r, g, bl)-min(r, g, bl) > 0x3000 {
				colored++ // chart lines, verdict colours
			}
		}
	}
	if dark < 500 || colored < 200 {
		t.Fatalf("screenshot looks blank: %d dark and %d coloured sampled pixels", dark, colored)
	}
}
