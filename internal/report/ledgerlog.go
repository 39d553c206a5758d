package report

import (
	"cmp"
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

// benchLog is a ledger.Log in a bbolt file or a PostgreSQL database,
// with fresh keys.
type benchLog struct {
	*ledger.Log
	keys     *ledger.AgentKeys // the agents enrolled in it
	verifier note.Verifier
	vkey     string // the verifier key, as text
}

// openLog opens a new log with a fresh note key: in lb.Dir/name.db, or
// in a new database of lb.Postgres if set.
func (lb *LedgerBench) openLog(name string, maxBatch int) (*benchLog, error) {
	ls, err := lb.openLogs(name, maxBatch, 1)
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// openLogs opens n Logs of one new log, as n ledger servers on one
// database would (see openLog): they share the note key and the
// enrolled agents. More than one needs lb.Postgres.
func (lb *LedgerBench) openLogs(name string, maxBatch, n int) ([]*benchLog, error) {
	keys := &ledger.AgentKeys{}
	opts := ledger.Options{Origin: reportOrigin, Agents: keys, MaxBatch: maxBatch}
	path := filepath.Join(lb.Dir, name+".db")
	if lb.Postgres != nil {
		db, err := lb.Postgres()
		if err != nil {
			return nil, fmt.Errorf("a PostgreSQL database for the report's ledger %s: %w", name, err)
		}
		path, opts.DBPassword = db.URL, db.Password
	} else if n != 1 {
		return nil, fmt.Errorf("the report's ledger %s: %d ledger servers on one bbolt file; several need PostgreSQL", name, n)
	}
	var first *scratchlog.Log
	ls := make([]*benchLog, 0, n)
	for range n {
		var l *scratchlog.Log
		var err error
		if first == nil {
			l, err = scratchlog.Open(path, opts)
		} else {
			l, err = first.Replica(path, opts)
		}
		if err != nil {
			closeLogs(ls)
			return nil, fmt.Errorf("opening the report's ledger %s: %w", name, err)
		}
		first = cmp.Or(first, l)
		ls = append(ls, &benchLog{Log: l.Log, keys: keys, verifier: l.Verifier, vkey: l.VKey})
	}
	return ls, nil
}

func closeLogs(ls []*benchLog) {
	for _, l := range ls {
		l.Close()
	}
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

// appendConcurrently appends work[i] from goroutine i to ls[i mod
// len(ls)], one receipt per Append call, and returns the time it took.
func appendConcurrently(ctx context.Context, ls []*benchLog, work [][][]byte) (time.Duration, error) {
	errs := make(chan error, len(work))
	start := time.Now()
	var wg sync.WaitGroup
	for i, rs := range work {
		l := ls[i%len(ls)]
		wg.Go(func() {
			for _, r := range rs {
				if _, err := l.Append(ctx, [][]byte{r}); err != nil {
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
