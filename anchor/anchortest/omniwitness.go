package anchortest

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/internal/mcptest"
)

// OmniwitnessPkg is the real third-party witness the interop tests run,
// built at the version go.mod pins with its tool directive.
const OmniwitnessPkg = "github.com/transparency-dev/witness/cmd/omniwitness"

// built is the omniwitness binary, built once per test binary into a
// temporary directory that RemoveOmniwitness deletes.
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

// BuildOmniwitness builds OmniwitnessPkg once per process and returns the
// binary's path. Call RemoveOmniwitness from TestMain after m.Run.
func BuildOmniwitness() (string, error) {
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "bankdoor-omniwitness-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "omniwitness")
		cmd := exec.Command("go", "build", "-o", built.bin, OmniwitnessPkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // its SQLite is modernc.org/sqlite, pure Go
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build %s: %v\n%s", OmniwitnessPkg, err, out)
		}
	})
	return built.bin, built.err
}

// RemoveOmniwitness deletes the binary BuildOmniwitness built, if any.
func RemoveOmniwitness() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// Omniwitness is a running omniwitness process.
type Omniwitness struct {
	URL  string // http://127.0.0.1:PORT
	Name string // its key name
	VKey string // its cosignature/v1 verifier key
	cmd  *exec.Cmd
	out  *mcptest.SyncBuffer
}

// StartOmniwitness runs the real omniwitness on 127.0.0.1 with a new key
// named name, its SQLite database and config in dir, and one extra log to
// witness: logVKey's, whose origin is its key name. It returns once the
// witness listens; Stop ends it.
func StartOmniwitness(dir, name, logVKey string) (*Omniwitness, error) {
	bin, err := BuildOmniwitness()
	if err != nil {
		return nil, err
	}
	return RunOmniwitness(bin, dir, name, logVKey)
}

// RunOmniwitness is StartOmniwitness with an omniwitness binary already
// built (bankdoor report builds its own, offline, or takes --witness).
func RunOmniwitness(bin, dir, name, logVKey string) (*Omniwitness, error) {
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		return nil, err
	}
	w := &Omniwitness{Name: name, out: &mcptest.SyncBuffer{}}
	if w.VKey, err = fnote.VKeyToCosignatureV1(vkey); err != nil {
		return nil, err
	}
	origin, _, _ := bytes.Cut([]byte(logVKey), []byte("+"))
	logs := fmt.Sprintf("Logs:\n  - Origin: %q\n    PublicKey: %q\n", origin, logVKey)
	addr, err := freeAddr()
	if err == nil {
		err = errors.Join(os.WriteFile(filepath.Join(dir, "witness.key"), []byte(skey), 0o600),
			os.WriteFile(filepath.Join(dir, "logs.yaml"), []byte(logs), 0o600))
	}
	if err != nil {
		return nil, err
	}
	w.URL = "http://" + addr
	w.cmd = exec.Command(bin,
		"--listen", addr,
		"--metrics_listen", "", // no metrics server
		"--private_key_path", filepath.Join(dir, "witness.key"),
		"--additional_logs", filepath.Join(dir, "logs.yaml"),
		"--db_file", filepath.Join(dir, "witness.db"))
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
	if err := w.cmd.Start(); err != nil {
		return nil, err
	}
	if err := waitListening(addr); err != nil {
		w.Stop()
		return nil, fmt.Errorf("omniwitness: %w; output:\n%s", err, w.Output())
	}
	return w, nil
}

// Stop kills the witness and waits for it to exit.
func (w *Omniwitness) Stop() {
	_ = w.cmd.Process.Kill()
	_ = w.cmd.Wait()
}

// Output returns what the witness has written to stdout and stderr.
func (w *Omniwitness) Output() string { return w.out.String() }

// NewOmniwitness starts an omniwitness named "witness.test" for logVKey
// in a temporary directory, stopped when tb ends (its output logged if tb
// failed). It skips tb in -short mode.
func NewOmniwitness(tb testing.TB, logVKey string) *Omniwitness {
	tb.Helper()
	if testing.Short() {
		tb.Skip("builds and runs omniwitness; skipped in -short mode")
	}
	w, err := StartOmniwitness(tb.TempDir(), "witness.test", logVKey)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		w.Stop()
		if tb.Failed() {
			tb.Logf("omniwitness output:\n%s", w.Output())
		}
	})
	return w
}

// freeAddr returns a 127.0.0.1 address with a port that was free just now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitListening(addr string) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("not listening on %s within 20s", addr)
}
