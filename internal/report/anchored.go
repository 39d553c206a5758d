package report

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bankdoor/bankdoor/internal/agentchain"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/verifier"
	"github.com/bankdoor/bankdoor/verifier/bundle"
)

// truncated is how many of the bundle's newest receipts the truncation
// check deletes.
const truncated = 3

// The rows of the anchored verification.
const (
	anchoredID   = "verify-anchored"
	anchoredWhat = "offline verification of an export bundle against its checkpoint: signatures, chain, an inclusion proof per receipt, the tail (bankdoor export, then verify --checkpoint)"
	truncationID = "verify-truncation"
	// The truncation row's note quotes verify, the copy's directory
	// written COPY.
	truncationWhat = "verify of a copy of the bundle (COPY) with its newest receipts deleted: names exactly the missing seqs"
)

// VerifyAnchored measures offline verification of an export bundle. Into
// the anchoring log it appends n receipts of a new agent, in requests of
// 1,024 with a receipt of a second agent after each and ten more at the
// end (a shared ledger: the agent's head is not the log's last entry);
// it has the witness cosign the log's latest checkpoint and exports the
// agent's receipts into dir with bundle.Export and bundle.Write, as
// `bankdoor export` does. It then times verifier.VerifyAnchored over the
// bundle, what `bankdoor verify DIR --checkpoint FILE --log-key VKEY
// --witness-key VKEY` runs, and checks a copy of the bundle whose newest
// receipts (truncated of them) are deleted: verify must name exactly
// their seqs. It returns the rows anchoredID and truncationID.
func (lb *LedgerBench) VerifyAnchored(ctx context.Context, al *anchorLog, dir string, n int) []Measurement {
	lb.progress("verify: export bundle of %d receipts, checked against the checkpoint", n)
	a, cp, err := exportBundle(ctx, al, dir, n)
	if err != nil {
		return []Measurement{rowOrFailure(Measurement{}, err, anchoredID, "verify", anchoredWhat), rowOrFailure(Measurement{}, err, truncationID, "verify", truncationWhat)}
	}
	m1, err1 := timeAnchored(al, a, dir, cp, n)
	m2, err2 := truncationCheck(al, a, dir, cp, n)
	return []Measurement{rowOrFailure(m1, err1, anchoredID, "verify", anchoredWhat), rowOrFailure(m2, err2, truncationID, "verify", truncationWhat)}
}

// exportBundle fills the log, has its checkpoint cosigned and writes the
// new agent's bundle into dir; it returns the agent and the checkpoint.
func exportBundle(ctx context.Context, al *anchorLog, dir string, n int) (*agentchain.Agent, []byte, error) {
	if n <= truncated {
		return nil, nil, fmt.Errorf("a bundle of %d receipts is too small: the truncation check deletes %d and keeps one", n, truncated)
	}
	as, err := al.agents(2)
	if err != nil {
		return nil, nil, err
	}
	a, other := as[0], as[1]
	for sent := 0; sent < n; sent += bundlePage {
		rs, err := a.Chain(min(bundlePage, n-sent))
		if err == nil {
			_, err = al.Append(ctx, rs)
		}
		if err == nil {
			rs, err = other.Chain(1)
		}
		if err == nil {
			_, err = al.Append(ctx, rs)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("filling the anchoring log: %w", err)
		}
	}
	rs, err := other.Chain(10)
	if err == nil {
		_, err = al.Append(ctx, rs)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("filling the anchoring log: %w", err)
	}
	cp, _, err := al.cosign(ctx)
	if err != nil {
		return nil, nil, err
	}
	// What bankdoor export does with --log-key and --witness-key: check
	// the checkpoint, collect, write.
	v, err := al.policy.Verify(cp)
	if err != nil {
		return nil, nil, fmt.Errorf("the anchoring log's checkpoint: %w", err)
	}
	b, files, err := bundle.Export(ctx, al.Log.Source(), a.KeyID, cp, v.Size)
	if err != nil {
		return nil, nil, err
	}
	b.LogKey = al.vkey
	if al.witness != nil {
		b.Witnesses = []string{al.witness.VKey}
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, nil, err
	}
	return a, cp, bundle.Write(dir, b, files)
}

// bundlePage is how many of the agent's receipts exportBundle appends
// before one of the other agent's.
const bundlePage = 1024

// anchoredRuns is how many times timeAnchored verifies the bundle; the
// row is the median run, as one run of a fraction of a second swings
// with the load of a shared machine.
const anchoredRuns = 3

// timeAnchored times verifier.VerifyAnchored of the bundle in dir,
// anchoredRuns times, and reports the median run.
func timeAnchored(al *anchorLog, a *agentchain.Agent, dir string, cp []byte, n int) (Measurement, error) {
	runs := make([]time.Duration, anchoredRuns)
	for i := range runs {
		start := time.Now()
		rep, err := verifier.VerifyAnchored(dir, a.Public(), verifier.Options{}, al.policy, cp)
		runs[i] = time.Since(start)
		if err != nil {
			return Measurement{}, fmt.Errorf("verifying the report's export bundle %s: %w", dir, err)
		}
		if !rep.Bundle || rep.Covered != uint64(n) || len(rep.Receipts) != n {
			return Measurement{}, fmt.Errorf("verify of the bundle %s covered %d receipts (%d checked, bundle %v), want %d", dir, rep.Covered, len(rep.Receipts), rep.Bundle, n)
		}
	}
	slices.Sort(runs)
	return Measurement{ID: anchoredID, Section: "verify", What: anchoredWhat, Status: StatusMeasured, Unit: "receipts/s", N: n,
		Value: float64(n) / runs[len(runs)/2].Seconds(), Note: fmt.Sprintf("median of %d runs; %s", anchoredRuns, al.checkpointKind())}, nil
}

// checkpointKind says who signed the checkpoints of the log.
func (al *anchorLog) checkpointKind() string {
	if al.witness == nil {
		return "checkpoint signed by the log only, not cosigned: " + al.skipped
	}
	return "checkpoint cosigned by the real omniwitness; log key and witness key, quorum 1"
}

// truncationCheck copies the bundle in dir, deletes the newest receipts
// of the copy and times verify of it, which must fail with a
// *verifier.MissingError naming exactly the deleted seqs. The row's note
// is verify's message, the copy's directory written COPY.
func truncationCheck(al *anchorLog, a *agentchain.Agent, dir string, cp []byte, n int) (Measurement, error) {
	cut := dir + "-truncated"
	if err := os.RemoveAll(cut); err != nil {
		return Measurement{}, err
	}
	if err := os.CopyFS(cut, os.DirFS(dir)); err != nil {
		return Measurement{}, fmt.Errorf("copying the bundle %s: %w", dir, err)
	}
	var deleted []uint64
	for seq := uint64(n - truncated + 1); seq <= uint64(n); seq++ {
		if err := os.Remove(filepath.Join(cut, bundle.ReceiptsDir, receipt.FileName(seq))); err != nil {
			return Measurement{}, err
		}
		deleted = append(deleted, seq)
	}
	start := time.Now()
	_, err := verifier.VerifyAnchored(cut, a.Public(), verifier.Options{}, al.policy, cp)
	d := time.Since(start)
	var missing *verifier.MissingError
	if !errors.As(err, &missing) || !slices.Equal(missing.Seqs, deleted) {
		return Measurement{}, fmt.Errorf("verify of the bundle without seq %v said %v; want the missing seqs named, exactly those", deleted, err)
	}
	return Measurement{ID: truncationID, Section: "verify",
		What:   truncationWhat,
		Status: StatusMeasured, Unit: "ms", N: n, Value: float64(d) / float64(time.Millisecond),
		Note: "verify: " + strings.ReplaceAll(err.Error(), cut, "COPY")}, nil
}
