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

// Anchoring appends one receipt at a time to a fresh log and, after each,
// times anchor.Anchorer.Anchor of the new checkpoint against a real
// omniwitness (the binary bin, run by package internal/omniwitness on
// 127.0.0.1 with a new key and SQLite file): consistency proof, add-checkpoint, cosignature
// check and store. Each cosigned checkpoint must then satisfy a policy
// of the log key and the witness key with quorum 1.
func (lb *LedgerBench) Anchoring(ctx context.Context, bin string, n int) (Measurement, error) {
	lb.progress("anchor: %d checkpoints cosigned by a real omniwitness", n)
	bl, err := openLog(lb.Dir, "anchor", 0)
	if err != nil {
		return Measurement{}, err
	}
	defer bl.Close()
	dir := filepath.Join(lb.Dir, "witness")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Measurement{}, err
	}
	w, err := omniwitness.Start(bin, dir, witnessName, bl.vkey)
	if err != nil {
		return Measurement{}, err
	}
	defer w.Stop()
	lat, err := anchorEach(ctx, bl, w.URL, w.VKey, n, lb.Progress)
	if err != nil {
		return Measurement{}, err
	}
	return Measurement{ID: "anchor-omniwitness", Section: "anchor", What: "new checkpoint to a verified, stored omniwitness cosignature (tlog-witness over loopback HTTP)",
		Status: StatusMeasured, Unit: "ms", N: len(lat), Dist: Distribution(lat, time.Millisecond)}, nil
}

func anchorEach(ctx context.Context, bl *benchLog, url, wvkey string, n int, progress io.Writer) ([]time.Duration, error) {
	client, err := tlogwitness.New(url, wvkey)
	if err != nil {
		return nil, err
	}
	store := anchor.NewMemStore()
	quiet := slog.New(slog.NewTextHandler(progress, &slog.HandlerOptions{Level: slog.LevelWarn}))
	client.Logger = quiet
	a, err := anchor.New(anchor.Options{Log: bl.Log, LogKey: bl.verifier, Store: store, Witnesses: []*tlogwitness.Client{client}, Logger: quiet})
	if err != nil {
		return nil, err
	}
	policy, err := cosignature.NewPolicy(bl.vkey, []string{wvkey}, 1)
	if err != nil {
		return nil, err
	}
	as, err := bl.agents(1)
	if err != nil {
		return nil, err
	}
	lat := make([]time.Duration, 0, n)
	for range n {
		r, err := as[0].Next()
		if err == nil {
			_, err = bl.Append(ctx, [][]byte{r})
		}
		if err != nil {
			return nil, err
		}
		cp := bl.Checkpoint()
		start := time.Now()
		if err := a.Anchor(ctx, cp); err != nil {
			return nil, fmt.Errorf("anchoring checkpoint of size %d: %w", bl.Size(), err)
		}
		lat = append(lat, time.Since(start))
		cosigned, err := anchor.Cosigned(cp, bl.verifier, store)
		if err == nil {
			_, err = policy.Verify(cosigned)
		}
		if err != nil {
			return nil, fmt.Errorf("cosigned checkpoint of size %d: %w", bl.Size(), err)
		}
	}
	return lat, nil
}
