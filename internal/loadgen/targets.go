package loadgen

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
	"google.golang.org/protobuf/proto"

	"github.com/bankdoor/bankdoor/internal/agentchain"
	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/proclisten"
	"github.com/bankdoor/bankdoor/internal/tesseralog"
	"github.com/bankdoor/bankdoor/ledger"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// listenTimeout bounds how long StartBankdoor waits for the server to
// listen.
const listenTimeout = 30 * time.Second

// httpClient is the client of both targets: HTTP/1.1, a kept-alive
// connection per writer plus one for the checkpoint poller.
func httpClient(writers int) *http.Client {
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: writers + 1}}
}

// ReceiptSize returns the length of a receipt as the bankdoor writers
// sign them (package agentchain), the entry size to give Tessera.
func ReceiptSize() (int, error) {
	a, err := agentchain.Generate()
	if err != nil {
		return 0, err
	}
	r, err := a.Next()
	return len(r), err
}

// Bankdoor is `bankdoor ledger serve` on a new ledger, with an enrolled
// agent per writer, as a Target. Its files are in a directory of its own:
//
//	DIR/log.key, log.key.vkey  the log's note key (ledger keygen's files)
//	DIR/agents/KEYID.pem       each writer's public key (--agents)
//	DIR/ledger.db              the bbolt ledger (--db)
//	DIR/output.log             what the server writes to stdout and stderr
type Bankdoor struct {
	URL      string
	origin   string
	verifier note.Verifier
	agents   []*agentchain.Agent
	// presigned[i] is writer i's receipts signed by Presign and not yet
	// sent, in chain order.
	presigned [][][]byte
	live      atomic.Int64 // receipts the writers had to sign while the clock ran
	hc        *http.Client
	client    ledgerv1connect.LedgerServiceClient
	child     *proclisten.Child
	out       string
}

// StartBankdoor runs the bankdoor binary bin as `ledger serve` on
// 127.0.0.1 (a port the kernel picks, found with package proclisten) with
// origin and writers enrolled agents, its files in dir (which must
// exist). Stop ends it.
func StartBankdoor(bin, dir, origin string, writers int) (*Bankdoor, error) {
	skey, vkey, err := ledger.GenerateKey(origin)
	if err != nil {
		return nil, err
	}
	b := &Bankdoor{origin: origin, hc: httpClient(writers), out: filepath.Join(dir, "output.log")}
	if b.verifier, err = note.NewVerifier(vkey); err != nil {
		return nil, err
	}
	key, agents := filepath.Join(dir, "log.key"), filepath.Join(dir, "agents")
	if err := ledger.WriteKey(key, skey, false); err != nil {
		return nil, err
	}
	if b.agents, err = enroll(agents, writers); err != nil {
		return nil, err
	}
	out, err := os.Create(b.out)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own copy of the descriptor
	cmd := exec.Command(bin, "ledger", "serve", "--db", filepath.Join(dir, "ledger.db"), "--addr", "127.0.0.1:0",
		"--log-key", key, "--origin", origin, "--agents", agents)
	cmd.Stdout, cmd.Stderr = out, out
	if b.child, err = proclisten.Start(cmd, listenTimeout); err != nil {
		b.hc.CloseIdleConnections()
		return nil, fmt.Errorf("bankdoor ledger serve %s: %w; its output:\n%s", bin, err, b.Output())
	}
	b.URL = "http://" + b.child.Addr.String()
	b.client = ledgerv1connect.NewLedgerServiceClient(b.hc, b.URL)
	return b, nil
}

// enroll makes n agents with new keys and writes their public keys into
// dir, as `ledger serve --agents` reads them.
func enroll(dir string, n int) ([]*agentchain.Agent, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	as := make([]*agentchain.Agent, n)
	for i := range as {
		a, err := agentchain.Generate()
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalPKIXPublicKey(a.Public())
		if err != nil {
			return nil, err
		}
		p := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		if err := os.WriteFile(filepath.Join(dir, agentkey.KeyID(a.Public())+".pem"), p, 0o644); err != nil {
			return nil, err
		}
		as[i] = a
	}
	return as, nil
}

// Name is "bankdoor ledger serve".
func (b *Bankdoor) Name() string { return "bankdoor ledger serve" }

// PID is the server's process id.
func (b *Bankdoor) PID() int { return b.child.PID() }

// Presign signs perWriter receipts of each writer's chain now, on every
// CPU, for the writers to send once the clock runs: signing is the
// agent's work, done on the agent's machine, not the log's, and it would
// otherwise take from the server's share of this machine's CPUs the time
// Tessera's writers, which sign nothing, leave to Tessera. A writer that
// has sent all its presigned receipts signs the next ones as it goes, and
// Live counts those. Call it before Run.
func (b *Bankdoor) Presign(perWriter int) error {
	b.presigned = make([][][]byte, len(b.agents))
	next := atomic.Int64{}
	errs := make(chan error, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(b.agents); i = int(next.Add(1) - 1) {
				rs, err := b.agents[i].Chain(perWriter)
				if err != nil {
					errs <- err
					return
				}
				b.presigned[i] = rs
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// Live is the number of receipts the writers signed while they ran,
// having sent all Presign signed for them.
func (b *Bankdoor) Live() int { return int(b.live.Load()) }

// Writer i appends agent i's next receipt alone: the next presigned one,
// or one it signs now.
func (b *Bankdoor) Writer(i int) (func(context.Context) (uint64, error), error) {
	if i < 0 || i >= len(b.agents) {
		return nil, fmt.Errorf("writer %d of %d enrolled agents", i, len(b.agents))
	}
	a := b.agents[i]
	var queue [][]byte
	if b.presigned != nil {
		queue, b.presigned[i] = b.presigned[i], nil
	}
	return func(ctx context.Context) (uint64, error) {
		var r []byte
		if len(queue) > 0 {
			r, queue = queue[0], queue[1:]
		} else {
			b.live.Add(1)
			var err error
			if r, err = a.Next(); err != nil {
				return 0, err
			}
		}
		body, err := proto.Marshal(&ledgerv1.AppendRequest{Receipts: [][]byte{r}})
		if err != nil {
			return 0, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.URL+ledgerv1connect.LedgerServiceAppendProcedure, bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/proto")
		req.Header.Set("Connect-Protocol-Version", "1")
		answer, err := do(b.hc, req)
		if err != nil {
			return 0, err
		}
		var resp ledgerv1.AppendResponse
		if err := proto.Unmarshal(answer, &resp); err != nil {
			return 0, fmt.Errorf("the answer to Append: %w", err)
		}
		if got := resp.GetIndexes(); len(got) != 1 {
			return 0, fmt.Errorf("an Append of one receipt was answered with %d indexes", len(got))
		}
		return resp.GetIndexes()[0], nil
	}, nil
}

// CheckpointSize asks GetCheckpoint and verifies the note.
func (b *Bankdoor) CheckpointSize(ctx context.Context) (uint64, error) {
	resp, err := b.client.GetCheckpoint(ctx, connect.NewRequest(&ledgerv1.GetCheckpointRequest{}))
	if err != nil {
		return 0, err
	}
	cp, _, _, err := log.ParseCheckpoint(resp.Msg.GetCheckpoint(), b.origin, b.verifier)
	if err != nil {
		return 0, err
	}
	return cp.Size, nil
}

// Stop kills the server and waits for it to exit.
func (b *Bankdoor) Stop() {
	b.child.Stop()
	b.hc.CloseIdleConnections()
}

// Output returns what the server has written so far.
func (b *Bankdoor) Output() string {
	out, err := os.ReadFile(b.out)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", b.out, err)
	}
	return string(out)
}

// Tessera is a running Tessera POSIX log as a Target: each writer POSTs
// distinct entries of EntrySize bytes to /add.
type Tessera struct {
	Log       *tesseralog.Log
	EntrySize int
	run       string // random, so that no two runs send the same entry
	hc        *http.Client
}

// NewTessera returns l as a Target for writers writers sending entries of
// entrySize bytes (at least 64).
func NewTessera(l *tesseralog.Log, entrySize, writers int) (*Tessera, error) {
	if entrySize < 64 {
		return nil, fmt.Errorf("entries of %d bytes: want at least 64, to make each distinct", entrySize)
	}
	nonce := make([]byte, 16)
	rand.Read(nonce) // never fails
	return &Tessera{Log: l, EntrySize: entrySize, run: hex.EncodeToString(nonce), hc: httpClient(writers)}, nil
}

// Name is "Tessera POSIX".
func (t *Tessera) Name() string { return "Tessera POSIX " + tesseralog.Version }

// PID is the log's process id.
func (t *Tessera) PID() int { return t.Log.PID() }

// Writer i sends entries "RUN WRITER SEQ" padded with dots.
func (t *Tessera) Writer(i int) (func(context.Context) (uint64, error), error) {
	seq := 0
	return func(ctx context.Context) (uint64, error) {
		seq++
		e := fmt.Appendf(nil, "%s %d %d ", t.run, i, seq)
		e = append(e, bytes.Repeat([]byte{'.'}, max(0, t.EntrySize-len(e)))...)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.Log.URL+"/add", bytes.NewReader(e))
		if err != nil {
			return 0, err
		}
		body, err := do(t.hc, req)
		if err != nil {
			return 0, err
		}
		return strconv.ParseUint(string(body), 10, 64)
	}, nil
}

// CheckpointSize GETs /checkpoint and verifies the note.
func (t *Tessera) CheckpointSize(ctx context.Context) (uint64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.Log.URL+"/checkpoint", nil)
	if err != nil {
		return 0, err
	}
	body, err := do(t.hc, req)
	if err != nil {
		return 0, err
	}
	cp, _, _, err := log.ParseCheckpoint(body, t.Log.Origin, t.Log.Verifier)
	if err != nil {
		return 0, err
	}
	return cp.Size, nil
}

// do sends req with hc and returns the body of a 200 answer, or an error
// holding the status and body of any other.
func do(hc *http.Client, req *http.Request) ([]byte, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s: %s", req.Method, req.URL.Path, resp.Status, bytes.TrimSpace(body))
	}
	return body, nil
}

// Close closes the client's idle connections.
func (t *Tessera) Close() { t.hc.CloseIdleConnections() }
