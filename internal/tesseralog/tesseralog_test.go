package tesseralog_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/transparency-dev/formats/log"

	"github.com/bankdoor/bankdoor/internal/tesseralog"
)

// TestVersionIsToolsGoMod: Version and Pkg say what tools/tessera/go.mod
// pins, so the package doc does not drift from the log really built.
func TestVersionIsToolsGoMod(t *testing.T) {
	version, err := tesseralog.Tool.Pinned(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if version != tesseralog.Version {
		t.Errorf("%s pins the tessera module at %q, Version is %q: update Version and the package doc", tesseralog.ModFile, version, tesseralog.Version)
	}
}

// TestBuildAndStart builds the real log, appends two entries with POST
// /add, waits for a signed checkpoint that covers both, and checks the log
// is gone after Stop.
func TestBuildAndStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the tessera log; skipped in -short mode")
	}
	bin := filepath.Join(t.TempDir(), "tessera-posix")
	if err := tesseralog.Build(t.Context(), "", bin); err != nil {
		t.Fatal(err)
	}
	l, err := tesseralog.Start(bin, t.TempDir(), "tesseralog.test/log")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	if !strings.HasPrefix(l.URL, "http://127.0.0.1:") {
		t.Errorf("URL %q, want a loopback URL", l.URL)
	}
	for i, entry := range []string{"first entry", "second entry"} {
		body := post(t, l.URL+"/add", entry)
		if idx, err := strconv.ParseUint(body, 10, 64); err != nil || idx != uint64(i) {
			t.Errorf("POST /add %q = %q, want index %d", entry, body, i)
		}
	}
	// The log publishes a checkpoint at most once a second: poll it.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(10 * time.Second)
	for {
		cp, _, _, err := log.ParseCheckpoint([]byte(get(t, l.URL+"/checkpoint")), l.Origin, l.Verifier)
		if err != nil {
			t.Fatalf("GET /checkpoint: %v\n%s", err, l.Output())
		}
		if cp.Size == 2 {
			break
		}
		select {
		case <-timeout:
			t.Fatalf("checkpoint size %d 10 s after two appends, want 2\n%s", cp.Size, l.Output())
		case <-tick.C:
		}
	}
	l.Stop()
	if _, err := http.Get(l.URL + "/checkpoint"); err == nil {
		t.Errorf("the log still answers on %s after Stop", l.URL)
	}
}

func post(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/octet-stream", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return read(t, resp)
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	return read(t, resp)
}

func read(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s, %v: %s", resp.Request.Method, resp.Request.URL, resp.Status, err, b)
	}
	return string(b)
}

// TestStartNamesMissingBinary: a binary that is not there is named.
func TestStartNamesMissingBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "no-such-tessera")
	if _, err := tesseralog.Start(bin, t.TempDir(), "tesseralog.test/log"); err == nil || !strings.Contains(err.Error(), bin) {
		t.Errorf("Start with a missing binary = %v, want an error naming %s", err, bin)
	}
}

// TestBuildOutsideTheModule: Build from a directory outside any module
// says that it needs the bankdoor module, before running go build.
func TestBuildOutsideTheModule(t *testing.T) {
	err := tesseralog.Build(t.Context(), t.TempDir(), filepath.Join(t.TempDir(), "tessera-posix"))
	if err == nil || !strings.Contains(err.Error(), "not inside the bankdoor module") {
		t.Errorf("Build outside a module = %v, want an error saying it needs the bankdoor module", err)
	}
}
