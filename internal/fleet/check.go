package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/verifier"
)

// Check checks a fleet after Close: the receipts directory verifies as one
// chain under the key in $BANKDOOR_HOME (verifier.VerifyDir, what `bankdoor
// verify` runs) with exactly one receipt per deny answered; no two denies
// were answered with the same receipt; and the embedded ledger holds that
// chain, every receipt once, in order. It returns the chain's length.
func (f *Fleet) Check() (int, error) {
	if !f.closed {
		return 0, errors.New("fleet: Check before Close: the ledger is still held")
	}
	dir, home := f.cfg.Proxy.Receipts, f.cfg.Proxy.Home
	pub, err := agentkey.LoadPublic(filepath.Join(home, agentkey.PublicFile))
	if err != nil {
		return 0, err
	}
	rep, err := verifier.VerifyDir(dir, pub, verifier.Options{})
	if err != nil {
		return 0, fmt.Errorf("the receipts directory does not verify: %w", err)
	}
	n := len(rep.Receipts)
	if n != len(f.receipts) {
		return n, fmt.Errorf("the receipts directory holds a chain of %d, for %d denies answered", n, len(f.receipts))
	}
	seen := make(map[string]bool, n)
	for _, name := range f.receipts {
		if seen[name] {
			return n, fmt.Errorf("two denies were answered with receipt %s", name)
		}
		seen[name] = true
	}
	return n, checkLedger(filepath.Join(dir, LedgerFile), filepath.Join(home, LogKeyFile), dir, n, pub)
}

// checkLedger opens the embedded ledger db with the log key in keyFile
// and checks that it holds exactly receipts 1..n of dir, in order.
func checkLedger(db, keyFile, dir string, n int, pub []byte) error {
	signer, err := ledger.LoadSigner(keyFile)
	if err != nil {
		return fmt.Errorf("the embedded ledger's key: %w", err)
	}
	if _, err := os.Stat(db); err != nil {
		return fmt.Errorf("the embedded ledger: %w", err)
	}
	var keys ledger.AgentKeys
	keys.Enroll(pub)
	l, err := ledger.Open(db, ledger.Options{Origin: signer.Name(), Signer: signer, Agents: &keys})
	if err != nil {
		return fmt.Errorf("the embedded ledger after every proxy stopped: %w", err)
	}
	defer l.Close()
	if size := l.Size(); size != uint64(n) {
		return fmt.Errorf("the embedded ledger holds %d receipts, the directory %d", size, n)
	}
	for start := uint64(0); start < uint64(n); start += ledger.MaxEntries {
		entries, err := l.Entries(start, min(ledger.MaxEntries, uint64(n)-start))
		if err != nil {
			return fmt.Errorf("the embedded ledger's entries from %d: %w", start, err)
		}
		for i, e := range entries {
			seq := start + uint64(i) + 1
			file, err := os.ReadFile(filepath.Join(dir, receipt.FileName(seq)))
			if err != nil {
				return err
			}
			if !bytes.Equal(e, file) {
				return fmt.Errorf("the embedded ledger's entry %d is not receipt %s of the directory", seq-1, receipt.FileName(seq))
			}
		}
	}
	return nil
}

// A Clock is a benchmark's timer (*testing.B): Rate runs it around the
// timed denies only.
type Clock interface {
	StartTimer()
	StopTimer()
}

// Rate starts procs members, sends one untimed deny through each, then
// times n denies spread over all of them at once (see Deny); it stops
// them and checks the fleet (see Check). It returns the wall time of the
// n denies and the chain's length. clock, if not nil, is stopped on entry
// and runs around the n denies only.
func Rate(ctx context.Context, cfg Config, procs, n int, clock Clock) (wall time.Duration, chain int, err error) {
	if clock != nil {
		clock.StopTimer()
	}
	f, err := Start(ctx, cfg, procs)
	if err != nil {
		return 0, 0, err
	}
	if _, err := f.Deny(ctx, procs); err != nil {
		return 0, 0, errors.Join(err, f.Close())
	}
	if clock != nil {
		clock.StartTimer()
	}
	wall, err = f.Deny(ctx, n)
	if clock != nil {
		clock.StopTimer()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return wall, 0, err
	}
	chain, err = f.Check()
	return wall, chain, err
}
