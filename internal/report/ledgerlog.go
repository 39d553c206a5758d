package report

import (
	"context"
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

// benchLog is a ledger.Log in a bbolt file with fresh keys.
type benchLog struct {
	*ledger.Log
	keys     *agentchain.Keys // the agents enrolled in it
	verifier note.Verifier
	vkey     string // the verifier key, as text
}

// openLog opens a new log in dir/name.db with a fresh note key.
func openLog(dir, name string, maxBatch int) (*benchLog, error) {
	keys := &agentchain.Keys{}
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

// agents makes n agents with fresh keys (package agentchain, receipts
// stamped with the current time) enrolled in the log.
func (bl *benchLog) agents(n int) ([]*agentchain.Agent, error) {
	as := make([]*agentchain.Agent, n)
	for i := range as {
		var err error
		if as[i], err = agentchain.Generate(); err != nil {
			return nil, err
		}
		bl.keys.Enroll(as[i].Public())
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
