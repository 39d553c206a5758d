package main

import (
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/anchor/tlogpolicy"
	"github.com/bankdoor/bankdoor/verifier"
)

// maxCheckpointFile bounds a --checkpoint file: a note of three lines
// and some hundred signature lines.
const maxCheckpointFile = 64 << 10

// policyFlags are the keys a checkpoint must be signed with: the log's,
// and a quorum of witnesses'.
type policyFlags struct {
	fs        *flag.FlagSet
	logKey    string
	witnesses repeated
	quorum    int
}

func (f *policyFlags) register(fs *flag.FlagSet, logKeyHelp string) {
	f.fs = fs
	fs.StringVar(&f.logKey, "log-key", "", logKeyHelp)
	fs.Var(&f.witnesses, "witness-key", "a trusted witness's verifier key (cosignature/v1 or Ed25519 vkey); repeat for each witness")
	fs.IntVar(&f.quorum, "witness-quorum", 0, "how many of the --witness-key witnesses must have cosigned the checkpoint (default 1 when any --witness-key is given)")
}

// policy returns the trust policy the flags give.
func (f *policyFlags) policy() (*cosignature.Policy, error) {
	if f.logKey == "" {
		return nil, hint(errors.New("--log-key VKEY is required"), "give the ledger's verifier key, the line of its .vkey file (bankdoor ledger keygen prints it)")
	}
	q := f.quorum
	if !flagSet(f.fs, "witness-quorum") && len(f.witnesses) > 0 {
		q = 1
	}
	p, err := cosignature.NewPolicy(f.logKey, f.witnesses, q)
	if err != nil {
		return nil, fmt.Errorf("--log-key, --witness-key, --witness-quorum: %w", err)
	}
	return p, nil
}

// trust returns what --policy-file says, or else the --log-key,
// --witness-key and --witness-quorum flags.
func (f *policyFlags) trust(policyFile string) (cosignature.Trust, error) {
	if policyFile == "" {
		return f.policy()
	}
	if f.logKey != "" || len(f.witnesses) > 0 || flagSet(f.fs, "witness-quorum") {
		return nil, hint(errors.New("--policy-file and --log-key, --witness-key, --witness-quorum do not go together"),
			"the policy file names the logs, the witnesses and the quorum: give it or the flags")
	}
	data, err := readLimited(policyFile, tlogpolicy.MaxSize)
	if err != nil {
		return nil, fmt.Errorf("--policy-file: %w", err)
	}
	p, err := tlogpolicy.Parse(data)
	if err != nil {
		return nil, hint(fmt.Errorf("--policy-file %s: %w", policyFile, err), "the format is c2sp.org/tlog-policy: log, witness, group and quorum lines")
	}
	return p, nil
}

// verifyAnchored is bankdoor verify --checkpoint: fully offline.
func verifyAnchored(e *env, dir string, pub ed25519.PublicKey, policyPath, cpPath, policyFile string, pf *policyFlags) int {
	if cpPath == "" {
		return exitErr(e, exitUsage, hint(errors.New("--witness-key, --witness-quorum and --policy-file need --checkpoint"),
			"give the checkpoint they check with --checkpoint FILE (a bundle's checkpoint file)"))
	}
	p, err := pf.trust(policyFile)
	if err != nil {
		return exitErr(e, exitUsage, err)
	}
	opts, err := verifyOptions(policyPath)
	if err != nil {
		return exitErr(e, exitUsage, err)
	}
	cp, err := readCheckpoint(cpPath)
	if err != nil {
		return fail(e, exitUsage, "--checkpoint: %w", err)
	}
	rep, err := verifier.VerifyAnchored(dir, pub, opts, p, cp)
	if errors.Is(err, cosignature.ErrLogSignature) {
		return exitErr(e, exitFailure, hint(verifyError(err), "check that %s the verifier key of the ledger that wrote the checkpoint", map[bool]string{true: "--log-key is", false: "a log line of --policy-file has"}[policyFile == ""]))
	} else if err != nil {
		return exitErr(e, exitFailure, verifyError(err))
	}
	fmt.Fprintf(e.stdout, "%s: ok: %d receipts, seq %d..%d, key_id %s, head %x\n",
		dir, len(rep.Receipts), rep.FirstSeq, rep.LastSeq, rep.KeyID, rep.Head)
	fmt.Fprintf(e.stdout, "%s: ok: none missing: the checkpoint of %s at size %d, root %x, cosigned by %s, covers seq 1..%d: %s\n",
		dir, rep.Checkpoint.Origin, rep.Checkpoint.Size, rep.Checkpoint.Hash, cosigners(rep.Checkpoint), rep.Covered, proofKind(rep))
	if n := len(rep.Checkpoint.Ignored); n > 0 {
		fmt.Fprintf(e.stdout, "%s: note: ignored %d cosignature(s) by keys not given with --witness-key:%s\n", dir, n, ignored(rep.Checkpoint))
	}
	if rep.LastSeq > rep.Covered {
		fmt.Fprintf(e.stdout, "%s: note: seq %d..%d are newer than the checkpoint, which says nothing about them\n", dir, rep.Covered+1, rep.LastSeq)
	}
	return exitOK
}

func proofKind(rep *verifier.AnchoredReport) string {
	if rep.Bundle {
		return "every receipt's inclusion proof verifies, and the tail holds no later receipt of the agent"
	}
	return "the RFC 6962 root of the receipts is the checkpoint's (a log of this agent's receipts only)"
}

func cosigners(v *cosignature.Verified) string {
	if len(v.Cosigners) == 0 {
		return "no witness (--witness-quorum 0)"
	}
	var s []string
	for _, c := range v.Cosigners {
		s = append(s, c.String())
	}
	return strings.Join(s, ", ")
}

func ignored(v *cosignature.Verified) string {
	var s string
	for _, sig := range v.Ignored {
		s += fmt.Sprintf(" %s+%08x", sig.Name, sig.Hash)
	}
	return s
}

func readCheckpoint(path string) ([]byte, error) { return readLimited(path, maxCheckpointFile) }

// readLimited reads the file at path, refusing one of more than limit
// bytes.
func readLimited(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, nil
}
