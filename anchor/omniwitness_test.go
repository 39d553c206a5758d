package anchor_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/anchor/internal/testlog"
)

// omniwitnessPkg is built at the version go.mod pins with its tool directive.
const omniwitnessPkg = "github.com/transparency-dev/witness/cmd/omniwitness"

// builtOmniwitness is the omniwitness binary, built once per test binary
// into a temporary directory that TestMain removes.
var builtOmniwitness struct {
	once     sync.Once
	dir, bin string
	err      error
}

func omniwitnessBuild() (string, error) {
	b := &builtOmniwitness
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "bankdoor-omniwitness-"); b.err != nil {
			return
		}
		b.bin = filepath.Join(b.dir, "omniwitness")
		cmd := exec.Command("go", "build", "-o", b.bin, omniwitnessPkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // its SQLite is modernc.org/sqlite, pure Go
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", omniwitnessPkg, err, out)
		}
	})
	return b.bin, b.err
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtOmniwitness.dir != "" {
		os.RemoveAll(builtOmniwitness.dir)
	}
	os.Exit(code)
}

// omniwitness is a running omniwitness process.
type omniwitness struct {
	URL    string
	Name   string // its key name
	VKey   string // its cosignature/v1 verifier key
	stderr *syncBuffer
}

// startOmniwitness runs the real omniwitness on 127.0.0.1 with a new key,
// a SQLite database in a temporary directory, and one extra log to witness:
// logVKey's, whose origin is its key name.
func startOmniwitness(tb testing.TB, logVKey string) *omniwitness {
	tb.Helper()
	if testing.Short() {
		tb.Skip("builds and runs omniwitness; skipped in -short mode")
	}
	bin, err := omniwitnessBuild()
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	w := &omniwitness{Name: "witness.test", stderr: &syncBuffer{}}
	skey, vkey := testlog.NewWitnessKey(tb, w.Name)
	w.VKey = vkey
	origin, _, _ := bytes.Cut([]byte(logVKey), []byte("+"))
	logs := fmt.Sprintf("Logs:\n  - Origin: %q\n    PublicKey: %q\n", origin, logVKey)
	writeFile(tb, filepath.Join(dir, "witness.key"), skey)
	writeFile(tb, filepath.Join(dir, "logs.yaml"), logs)
	addr := freeAddr(tb)
	w.URL = "http://" + addr
	cmd := exec.Command(bin,
		"--listen", addr,
		"--metrics_listen", "", // no metrics server
		"--private_key_path", filepath.Join(dir, "witness.key"),
		"--additional_logs", filepath.Join(dir, "logs.yaml"),
		"--db_file", filepath.Join(dir, "witness.db"))
	cmd.Stdout, cmd.Stderr = w.stderr, w.stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if tb.Failed() {
			tb.Logf("omniwitness output:\n%s", w.stderr)
		}
	})
	waitListening(tb, addr, w)
	return w
}

// freeAddr returns a 127.0.0.1 address with a port that was free just now.
func freeAddr(tb testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitListening(tb testing.TB, addr string, w *omniwitness) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("omniwitness did not listen on %s within 20s; output:\n%s", addr, w.stderr)
}

func writeFile(tb testing.TB, path, content string) {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for the process's writes and our reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// countingTransport counts the requests sent to witnesses.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// take returns the count so far and resets it.
func (c *countingTransport) take() int64 { return c.n.Swap(0) }
