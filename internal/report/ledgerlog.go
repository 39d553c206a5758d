package report

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/internal/agentchain"
	"github.com/bankdoor/bankdoor/internal/scratchlog"
	"github.com/bankdoor/bankdoor/ledger"
)

// reportOrigin is the origin of the logs the report builds.
const reportOrigin = "report.bankdoor.invalid/ledger"

// agentKeys are the agents enrolled in a benchLog.
type agentKeys = agentchain.Keys

// agent signs a chain of real receipts (package agentchain) with a fresh
// key, stamped with the current time. priv and seq mirror the chain's key
// and last seq, by the names the report's other files use.
type agent struct {
	c    *agentchain.Agent
	priv ed25519.PrivateKey
	seq  uint64
}

// newAgent makes a fresh agent and enrolls it in keys.
func newAgent(keys *agentKeys) (*agent, error) {
	c, err := agentchain.Generate()
	if err != nil {
		return nil, err
	}
	keys.Enroll(c.Public())
	return &agent{c: c, priv: c.Key}, nil
}

// next signs the agent's next receipt, a deny like the proxy writes.
func (a *agent) next() ([]byte, error) {
	b, err := a.c.Next()
	a.seq = a.c.Seq
	return b, err
}

// chain returns the agent's next n receipts.
func (a *agent) chain(n int) ([][]byte, error) {
	rs, err := a.c.Chain(n)
	a.seq = a.c.Seq
	return rs, err
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
	keys := &agentKeys{}
	l, err := scratchlog.Open(filepath.Join(dir, name+".db"), ledger.Options{Origin: reportOrigin, Agents: keys, MaxBatch: maxBatch})
	if err != nil {
		return nil, fmt.Errorf("opening the report's ledger %s: %w", name, err)
	}
	return &benchLog{Log: l.Log, keys: keys, verifier: l.Verifier, vkey: l.VKey}, nil
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
