package report

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// reportOrigin is the origin of the logs the report builds.
const reportOrigin = "report.bankdoor.invalid/ledger"

// agentKeys is a ledger.Agents backed by a map.
type agentKeys struct {
	mu   sync.Mutex
	keys map[string]ed25519.PublicKey
}

func (a *agentKeys) Lookup(keyID string) (ed25519.PublicKey, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k, ok := a.keys[keyID]
	return k, ok
}

// agent signs a chain of real receipts with a fresh key.
type agent struct {
	priv ed25519.PrivateKey
	seq  uint64
	prev string
}

// newAgent makes a fresh agent and enrolls it in keys.
func newAgent(keys *agentKeys) (*agent, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	keys.mu.Lock()
	defer keys.mu.Unlock()
	if keys.keys == nil {
		keys.keys = map[string]ed25519.PublicKey{}
	}
	keys.keys[agentkey.KeyID(pub)] = pub
	return &agent{priv: priv, prev: receipt.FirstPrev}, nil
}

// next signs the agent's next receipt, a deny like the proxy writes.
func (a *agent) next() ([]byte, error) {
	r := &receipt.Receipt{
		Seq: a.seq + 1, Time: time.Now(), Decision: receipt.Deny, Server: "bank", Tool: "transfer",
		Rule: "name.write_word", Reason: `tool name token "transfer" is a payment/write word`,
		ArgNames: []string{"amount_cents", "from_account", "to_account"}, ArgsSHA256: hex.EncodeToString(make([]byte, 32)),
		PolicyID: "bankdoor-fixture-readonly", PolicySHA256: hex.EncodeToString(make([]byte, 32)), Prev: a.prev,
	}
	b, err := receipt.Sign(r, a.priv)
	if err != nil {
		return nil, err
	}
	h := receipt.Hash(b)
	a.seq, a.prev = a.seq+1, hex.EncodeToString(h[:])
	return b, nil
}

// chain returns the agent's next n receipts.
func (a *agent) chain(n int) ([][]byte, error) {
	out := make([][]byte, n)
	for i := range out {
		var err error
		if out[i], err = a.next(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// benchLog is a ledger.Log in a bbolt file with fresh keys.
type benchLog struct {
	*ledger.Log
	keys     *agentKeys
	verifier note.Verifier
	vkey     string // the verifier key, as text
}

// openLog opens a new log in dir/name.db with a fresh note key.
func openLog(dir, name string, maxBatch int) (*benchLog, error) {
	skey, vkey, err := ledger.GenerateKey(reportOrigin)
	if err != nil {
		return nil, err
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, err
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, err
	}
	bl := &benchLog{keys: &agentKeys{}, verifier: v, vkey: vkey}
	bl.Log, err = ledger.Open(filepath.Join(dir, name+".db"), ledger.Options{Origin: reportOrigin, Signer: s, Agents: bl.keys, MaxBatch: maxBatch})
	if err != nil {
		return nil, fmt.Errorf("opening the report's ledger %s: %w", name, err)
	}
	return bl, nil
}

// checkpoint returns the log's latest checkpoint, verified.
func (bl *benchLog) checkpoint() (*log.Checkpoint, error) {
	cp, _, _, err := log.ParseCheckpoint(bl.Checkpoint(), reportOrigin, bl.verifier)
	return cp, err
}

// agents makes n fresh agents enrolled in the log.
func (bl *benchLog) agents(n int) ([]*agent, error) {
	as := make([]*agent, n)
	for i := range as {
		var err error
		if as[i], err = newAgent(bl.keys); err != nil {
			return nil, err
		}
	}
	return as, nil
}

// appendConcurrently appends work[i] from goroutine i, one receipt per
// Append call, and returns the time it took.
func (bl *benchLog) appendConcurrently(ctx context.Context, work [][][]byte) (time.Duration, error) {
	errs := make(chan error, len(work))
	start := time.Now()
	var wg sync.WaitGroup
	for _, rs := range work {
		wg.Go(func() {
			for _, r := range rs {
				if _, err := bl.Append(ctx, [][]byte{r}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	close(errs)
	return d, <-errs
}
