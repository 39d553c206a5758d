// Package omniwitness builds and runs the real third-party witness,
// github.com/transparency-dev/witness/cmd/omniwitness, at the version this
// module's go.mod pins with its tool directive (Version,
// v0.0.0-20260720115447-2e1c6971d19e). The anchor's interop tests, the
// end-to-end tests of bankdoor anchor and export, and the anchoring
// figures of cmd/bankdoor-report all run this one witness, so a
// cosignature they accept is one that witness really made (C2SP
// tlog-witness and tlog-cosignature).
//
// Build compiles the witness from the module cache, offline (GOPROXY=off)
// and without cgo (its SQLite is modernc.org/sqlite, pure Go). Start runs
// a built binary on 127.0.0.1, on a port that was free, with a new witness
// key and one log to witness, all in a directory of its own:
//
//	DIR/witness.key  the witness's note signer key, PRIVATE+KEY+NAME+HASH+DATA
//	DIR/logs.yaml    the log, as omniwitness --additional_logs reads it:
//	                 Logs:
//	                   - Origin: "ORIGIN"
//	                     PublicKey: "ORIGIN+HASH+KEY"
//	DIR/witness.db   its SQLite database of the latest checkpoint per log
//	DIR/output.log   what it writes to stdout and stderr
//
// The log's origin is the name of its verifier key, as for the ledger's
// checkpoints. The witness serves no metrics and no other logs' feeders.
package omniwitness

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// Pkg is the witness's main package, named in go.mod's tool directive.
const Pkg = "github.com/transparency-dev/witness/cmd/omniwitness"

// Version is the version of Pkg's module that go.mod requires; a test
// holds the two equal.
const Version = "v0.0.0-20260720115447-2e1c6971d19e"

// listenTimeout bounds how long Start waits for the witness to listen.
const listenTimeout = 20 * time.Second

// Build compiles Pkg into the file out, with the go command run in
// moduleDir (a directory of this module; "" is the current directory).
// The build is offline: it uses the module cache or fails, saying so.
func Build(ctx context.Context, moduleDir, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, Pkg)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOPROXY=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s (offline, from the module cache; run go mod download to fill it): %v: %s",
			Pkg, err, bytes.TrimSpace(msg))
	}
	return nil
}

// Witness is a running omniwitness.
type Witness struct {
	URL  string // http://127.0.0.1:PORT
	Name string // its key name
	VKey string // its cosignature/v1 verifier key
	cmd  *exec.Cmd
	out  string // DIR/output.log
}

// Start runs the omniwitness binary bin with a new key named name, its
// files in dir (which must exist), witnessing the log whose note verifier
// key is logVKey. It returns once the witness accepts connections; Stop
// ends it.
func Start(bin, dir, name, logVKey string) (*Witness, error) {
	w := &Witness{Name: name, out: filepath.Join(dir, "output.log")}
	addr, err := w.configure(dir, logVKey)
	if err != nil {
		return nil, err
	}
	out, err := os.Create(w.out)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own copy of the descriptor
	w.URL = "http://" + addr
	w.cmd = exec.Command(bin,
		"--listen", addr,
		"--metrics_listen", "", // no metrics server
		"--private_key_path", filepath.Join(dir, "witness.key"),
		"--additional_logs", filepath.Join(dir, "logs.yaml"),
		"--db_file", filepath.Join(dir, "witness.db"))
	w.cmd.Stdout, w.cmd.Stderr = out, out
	if err := w.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting omniwitness %s: %w", bin, err)
	}
	if err := waitListening(addr); err != nil {
		w.Stop()
		return nil, fmt.Errorf("omniwitness: %w; its output:\n%s", err, w.Output())
	}
	return w, nil
}

// configure writes the witness's key and its log list into dir, and
// returns the address it is to listen on.
func (w *Witness) configure(dir, logVKey string) (string, error) {
	skey, vkey, err := note.GenerateKey(rand.Reader, w.Name)
	if err != nil {
		return "", err
	}
	if w.VKey, err = fnote.VKeyToCosignatureV1(vkey); err != nil {
		return "", err
	}
	origin, _, _ := bytes.Cut([]byte(logVKey), []byte("+"))
	logs := fmt.Sprintf("Logs:\n  - Origin: %q\n    PublicKey: %q\n", origin, logVKey)
	addr, err := freeAddr()
	if err != nil {
		return "", err
	}
	return addr, errors.Join(
		os.WriteFile(filepath.Join(dir, "witness.key"), []byte(skey), 0o600),
		os.WriteFile(filepath.Join(dir, "logs.yaml"), []byte(logs), 0o600))
}

// Stop kills the witness and waits for it to exit.
func (w *Witness) Stop() {
	_ = w.cmd.Process.Kill()
	_ = w.cmd.Wait()
}

// Output returns what the witness has written to stdout and stderr so far.
func (w *Witness) Output() string {
	b, err := os.ReadFile(w.out)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", w.out, err)
	}
	return string(b)
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

// waitListening dials addr until it answers or listenTimeout passes.
func waitListening(addr string) error {
	deadline := time.Now().Add(listenTimeout)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("not listening on %s within %v", addr, listenTimeout)
}
