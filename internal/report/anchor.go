package report

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/bankdoor/bankdoor/anchor"
	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
	"github.com/bankdoor/bankdoor/internal/omniwitness"
)

// witnessName is the key name of the report's omniwitness.
const witnessName = "witness.report.bankdoor.invalid"

// anchorLog is the log of the anchoring figures and of the anchored
// verification: a fresh log and, if the report has an omniwitness, the
// real omniwitness (package internal/omniwitness, on 127.0.0.1 with a new
// key and SQLite file) with an anchor.Anchorer that has it cosign the
// log's checkpoints.
type anchorLog struct {
	*benchLog
	witness    *omniwitness.Witness // nil without one
	witnessErr error                // why the witness given did not start
	skipped    string               // why there is no witness, as the report says it
	anchorer   *anchor.Anchorer
	store      *anchor.MemStore
	policy     *cosignature.Policy // the log key and the witness key, quorum 1; the log key only without a witness
}

// openAnchorLog opens the log "anchor" in lb.Dir and starts the witness
// w.Bin, if there is one. A witness that does not start leaves the log
// without one (witnessErr says why); only the log's own errors are
// returned.
func (lb *LedgerBench) openAnchorLog(w Witness) (*anchorLog, error) {
	bl, err := lb.openLog("anchor", 0)
	if err != nil {
		return nil, err
	}
	al := &anchorLog{benchLog: bl, skipped: w.Skipped}
	if w.Bin != "" {
		if err := al.startWitness(filepath.Join(lb.Dir, "witness"), w.Bin, lb.Progress); err != nil {
			if al.witness != nil {
				al.witness.Stop()
			}
			al.witness, al.witnessErr, al.skipped = nil, err, "the omniwitness did not start: "+err.Error()
		}
	}
	if al.witness == nil {
		if al.policy, err = cosignature.NewPolicy(bl.vkey, nil, 0); err != nil {
			bl.Close()
			return nil, err
		}
	}
	return al, nil
}

// startWitness runs the omniwitness bin with its files in dir; warnings
// of the anchorer go to progress.
func (al *anchorLog) startWitness(dir, bin string, progress io.Writer) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var err error
	if al.witness, err = omniwitness.Start(bin, dir, witnessName, al.vkey); err != nil {
		return err
	}
	client, err := tlogwitness.New(al.witness.URL, al.witness.VKey)
	if err != nil {
		return err
	}
	quiet := slog.New(slog.NewTextHandler(progress, &slog.HandlerOptions{Level: slog.LevelWarn}))
	client.Logger = quiet
	al.store = anchor.NewMemStore()
	if al.anchorer, err = anchor.New(anchor.Options{Log: al.Log, LogKey: al.verifier, Store: al.store, Witnesses: []*tlogwitness.Client{client}, Logger: quiet}); err != nil {
		return err
	}
	al.policy, err = cosignature.NewPolicy(al.vkey, []string{al.witness.VKey}, 1)
	return err
}

// Close stops the witness, if it runs, and closes the log.
func (al *anchorLog) Close() {
	if al.witness != nil {
		al.witness.Stop()
	}
	al.benchLog.Close()
}

// cosign has the witness cosign the log's latest checkpoint and returns
// the checkpoint with its cosignature, checked against the policy, and
// the time anchor.Anchorer.Anchor took (consistency proof,
// add-checkpoint, cosignature check and store). Without a witness it
// returns the checkpoint as the log signed it.
func (al *anchorLog) cosign(ctx context.Context) ([]byte, time.Duration, error) {
	cp := al.Checkpoint()
	if al.witness == nil {
		_, err := al.policy.Verify(cp)
		return cp, 0, err
	}
	start := time.Now()
	if err := al.anchorer.Anchor(ctx, cp); err != nil {
		return nil, 0, fmt.Errorf("anchoring checkpoint of size %d: %w", al.Size(), err)
	}
	d := time.Since(start)
	cosigned, err := cosignature.Cosigned(cp, al.verifier, al.store.Cosignatures)
	if err == nil {
		_, err = al.policy.Verify(cosigned)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("cosigned checkpoint of size %d: %w", al.Size(), err)
	}
	return cosigned, d, nil
}

// Anchoring appends one receipt at a time to the anchoring log and,
// after each, times the witness's cosignature of the new checkpoint
// (anchorLog.cosign). Each cosigned checkpoint must satisfy a policy of
// the log key and the witness key with quorum 1.
func (lb *LedgerBench) Anchoring(ctx context.Context, al *anchorLog, n int) (Measurement, error) {
	lb.progress("anchor: %d checkpoints cosigned by a real omniwitness", n)
	if al.witnessErr != nil {
		return Measurement{}, al.witnessErr
	}
	if al.witness == nil {
		return Measurement{}, fmt.Errorf("no omniwitness: %s", al.skipped)
	}
	as, err := al.agents(1)
	if err != nil {
		return Measurement{}, err
	}
	lat := make([]time.Duration, 0, n)
	for range n {
		r, err := as[0].Next()
		if err == nil {
			_, err = al.Append(ctx, [][]byte{r})
		}
		if err != nil {
			return Measurement{}, err
		}
		_, d, err := al.cosign(ctx)
		if err != nil {
			return Measurement{}, err
		}
		lat = append(lat, d)
	}
	return Measurement{ID: "anchor-omniwitness", Section: "anchor", What: "new checkpoint to a verified, stored omniwitness cosignature (tlog-witness over loopback HTTP)",
		Status: StatusMeasured, Unit: "ms", N: len(lat), Dist: Distribution(lat, time.Millisecond)}, nil
}
