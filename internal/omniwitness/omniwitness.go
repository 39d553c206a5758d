// Package omniwitness builds and runs the real third-party witness,
// github.com/transparency-dev/witness/cmd/omniwitness, at the version the
// tools module (tools/go.mod, bankdoor's build tools) pins with its tool
// directive (Version, v0.0.0-20260720115447-2e1c6971d19e). The anchor's
// interop tests, the end-to-end tests of bankdoor anchor and export, and
// the anchoring figures of cmd/bankdoor-report all run this one witness, so a
// cosignature they accept is one that witness really made (C2SP
// tlog-witness and tlog-cosignature).
//
// Build compiles the witness with the tools module, downloading what the
// module cache lacks through the go command's usual GOPROXY, and without
// cgo (its SQLite is modernc.org/sqlite, pure Go). Start runs a built
// binary on 127.0.0.1, on a port the kernel picks (found as package
// proclisten says, so Start works on Linux only), with a new witness key
// (Ed25519, or ML-DSA-44 with StartMLDSA) and one log to witness, all in
// a directory of its own:
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
	"os"
	"os/exec"
	"path/filepath"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/internal/proclisten"
	"github.com/bankdoor/bankdoor/internal/toolmod"
)

// Pkg is the witness's main package, named in tools/go.mod's tool
// directive.
const Pkg = "github.com/transparency-dev/witness/cmd/omniwitness"

// Version is the version of Pkg's module that tools/go.mod requires; a
// test holds the two equal.
const Version = "v0.0.0-20260720115447-2e1c6971d19e"

// ToolsModFile is the tools module's go.mod, relative to the root of the
// bankdoor module.
const ToolsModFile = "tools/go.mod"

// listenTimeout bounds how long Start waits for the witness to listen.
const listenTimeout = 20 * time.Second

// Tool is the witness as package toolmod builds it: pure Go, without cgo
// (its SQLite is modernc.org/sqlite).
var Tool = toolmod.Tool{Pkg: Pkg, ModFile: ToolsModFile}

// Build compiles Pkg into the file out, as
//
//	go build -modfile=ROOT/tools/go.mod -o OUT PKG
//
// run in ROOT, the root of the bankdoor module that holds moduleDir (""
// is the current directory); see toolmod.Tool.Build.
func Build(ctx context.Context, moduleDir, out string) error { return Tool.Build(ctx, moduleDir, out) }

// Witness is a running omniwitness.
type Witness struct {
	URL   string // http://127.0.0.1:PORT
	Name  string // its key name
	VKey  string // its cosignature/v1 verifier key
	child *proclisten.Child
	out   string // DIR/output.log
}

// Start runs the omniwitness binary bin with a new Ed25519 key named
// name, its files in dir (which must exist), witnessing the log whose note
// verifier key is logVKey. It returns once the witness listens (on a port
// of 127.0.0.1 the kernel picked); Stop ends it.
func Start(bin, dir, name, logVKey string) (*Witness, error) {
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err == nil {
		vkey, err = fnote.VKeyToCosignatureV1(vkey)
	}
	if err != nil {
		return nil, err
	}
	return start(bin, dir, name, skey, vkey, logVKey)
}

// StartMLDSA is Start with a new ML-DSA-44 key: the witness cosigns with
// cosignature/v1 type 0x06 (c2sp.org/tlog-cosignature), as its signer
// (formats/note.NewSignerForCosignatureV1) does for such a key.
func StartMLDSA(bin, dir, name, logVKey string) (*Witness, error) {
	skey, vkey, err := fnote.GenerateMLDSAKey(name)
	if err != nil {
		return nil, err
	}
	return start(bin, dir, name, skey, vkey, logVKey)
}

func start(bin, dir, name, skey, vkey, logVKey string) (*Witness, error) {
	w := &Witness{Name: name, VKey: vkey, out: filepath.Join(dir, "output.log")}
	if err := configure(dir, skey, logVKey); err != nil {
		return nil, err
	}
	out, err := os.Create(w.out)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own copy of the descriptor
	cmd := exec.Command(bin,
		"--listen", "127.0.0.1:0",
		"--metrics_listen", "", // no metrics server
		"--private_key_path", filepath.Join(dir, "witness.key"),
		"--additional_logs", filepath.Join(dir, "logs.yaml"),
		"--db_file", filepath.Join(dir, "witness.db"))
	cmd.Stdout, cmd.Stderr = out, out
	if w.child, err = proclisten.Start(cmd, listenTimeout); err != nil {
		return nil, fmt.Errorf("omniwitness %s: %w; its output:\n%s", bin, err, w.Output())
	}
	w.URL = "http://" + w.child.Addr.String()
	return w, nil
}

// configure writes the witness's key and its log list into dir.
func configure(dir, skey, logVKey string) error {
	origin, _, _ := bytes.Cut([]byte(logVKey), []byte("+"))
	logs := fmt.Sprintf("Logs:\n  - Origin: %q\n    PublicKey: %q\n", origin, logVKey)
	return errors.Join(
		os.WriteFile(filepath.Join(dir, "witness.key"), []byte(skey), 0o600),
		os.WriteFile(filepath.Join(dir, "logs.yaml"), []byte(logs), 0o600))
}

// Stop kills the witness and waits for it to exit.
func (w *Witness) Stop() { w.child.Stop() }

// Output returns what the witness has written to stdout and stderr so far.
func (w *Witness) Output() string {
	b, err := os.ReadFile(w.out)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", w.out, err)
	}
	return string(b)
}
