// Package tesseralog builds and runs Tessera's POSIX conformance log,
// github.com/transparency-dev/tessera/cmd/conformance/posix, at the
// version its own tools module, tools/tessera/go.mod, pins with a tool
// directive (Version, v1.0.4). It is the other side of the side-by-side
// of package internal/loadgen: the same load generator drives it and
// `bankdoor ledger serve`. Nothing of Tessera is copied into bankdoor;
// the go command fetches it from the module proxy like any dependency.
// Tessera's dependencies clash with those of bankdoor's other tools, so
// it has a module of its own, as Ory Hydra has (package internal/hydra).
//
// Build compiles the log with that module, without cgo, downloading what
// the module cache lacks through the go command's usual GOPROXY. Start
// runs a built binary on 127.0.0.1, on a port the kernel picks (found as
// package proclisten says, so Start works on Linux only), with a new log
// key, all in a directory of its own:
//
//	DIR/log.key    the log's note signer key, PRIVATE+KEY+ORIGIN+HASH+DATA
//	DIR/storage/   the tlog-tiles log on disk (--storage_dir): checkpoint,
//	               tile/, and .state/ with the integrated tree state
//	DIR/output.log what it writes to stdout and stderr
//
// What the log serves (cmd/conformance/posix/main.go of Tessera v1.0.4):
// POST /add appends the request body as one entry and answers with the
// entry's index in decimal; GET /checkpoint, /tile/ and /entries/ serve
// the files of DIR/storage (c2sp.org/tlog-tiles). Its checkpoint is a
// C2SP tlog-checkpoint signed note whose origin is the key's name.
//
// What an answer to POST /add means, read from Tessera's source: the
// handler waits for the future of tessera.Appender.Add, which resolves
// once the entry's batch is sequenced and integrated (storage/posix
// files.go, sequenceBatch: the entry bundles, the new tiles and the tree
// state are each written to a temporary file opened with O_SYNC, renamed
// into place and their directory fsynced). So an acknowledged entry is
// durable, as an entry `bankdoor ledger serve` acknowledges is; but it is
// not yet covered by a signed checkpoint: the log publishes a checkpoint
// at most once a second (WithCheckpointInterval(time.Second)) and batches
// up to 256 entries or one second (WithBatching(256, time.Second)). Its
// in-memory antispam answers a repeated entry with the index of the
// first, so a load must send distinct entries.
package tesseralog

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/internal/proclisten"
	"github.com/bankdoor/bankdoor/internal/toolmod"
)

// Pkg is the log's main package, named in tools/tessera/go.mod's tool
// directive.
const Pkg = "github.com/transparency-dev/tessera/cmd/conformance/posix"

// Version is the version of Pkg's module that tools/tessera/go.mod
// requires; a test holds the two equal.
const Version = "v1.0.4"

// ModFile is Tessera's tools module, relative to the root of the
// bankdoor module.
const ModFile = "tools/tessera/go.mod"

// listenTimeout bounds how long Start waits for the log to listen.
const listenTimeout = 20 * time.Second

// Tool is the log as package toolmod builds it, without cgo.
var Tool = toolmod.Tool{Pkg: Pkg, ModFile: ModFile}

// Build compiles Pkg into the file out, as
//
//	go build -modfile=ROOT/tools/tessera/go.mod -o OUT PKG
//
// with CGO_ENABLED=0, run in ROOT, the root of the bankdoor module that
// holds moduleDir ("" is the current directory); see toolmod.Tool.Build.
func Build(ctx context.Context, moduleDir, out string) error { return Tool.Build(ctx, moduleDir, out) }

// Log is a running Tessera POSIX conformance log.
type Log struct {
	URL      string        // http://127.0.0.1:PORT
	Origin   string        // its checkpoints' origin, the name of its key
	Verifier note.Verifier // its checkpoints' key
	child    *proclisten.Child
	out      string // DIR/output.log
}

// Start runs the log binary bin with a new key named origin and its
// files in dir (which must exist). It returns once the log listens (on a
// port of 127.0.0.1 the kernel picked); Stop ends it.
func Start(bin, dir, origin string) (*Log, error) {
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		return nil, fmt.Errorf("a key for origin %q: %w", origin, err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, err
	}
	l := &Log{Origin: origin, Verifier: v, out: filepath.Join(dir, "output.log")}
	key, storage := filepath.Join(dir, "log.key"), filepath.Join(dir, "storage")
	if err := os.WriteFile(key, []byte(skey), 0o600); err != nil {
		return nil, err
	}
	if err := os.Mkdir(storage, 0o755); err != nil {
		return nil, err
	}
	out, err := os.Create(l.out)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own copy of the descriptor
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--storage_dir", storage, "--private_key", key)
	cmd.Stdout, cmd.Stderr = out, out
	if l.child, err = proclisten.Start(cmd, listenTimeout); err != nil {
		return nil, fmt.Errorf("tessera log %s: %w; its output:\n%s", bin, err, l.Output())
	}
	l.URL = "http://" + l.child.Addr.String()
	return l, nil
}

// PID is the process id of the running log.
func (l *Log) PID() int { return l.child.PID() }

// Stop kills the log and waits for it to exit.
func (l *Log) Stop() { l.child.Stop() }

// Output returns what the log has written to stdout and stderr so far.
func (l *Log) Output() string {
	b, err := os.ReadFile(l.out)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", l.out, err)
	}
	return string(b)
}
