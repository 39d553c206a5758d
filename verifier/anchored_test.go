package verifier_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/verifier"
	"github.com/bankdoor/bankdoor/verifier/bundle"
	"github.com/bankdoor/bankdoor/verifier/tlogproof"
)

// sharedLog is a ledger holding two agents' receipts, interleaved, and
// a, the audited agent, has n receipts. Other receipts follow a's last.
func sharedLog(t *testing.T, n int) (*anchorWorld, *agent) {
	t.Helper()
	a, b := newAgent(t), newAgent(t)
	w := newAnchorWorld(t, a, b)
	for i := range n {
		w.append(b.next(t, i%3))
		w.append(a.next(t, 1))
	}
	w.append(b.next(t, 4))
	return w, a
}

func anchored(t *testing.T, w *anchorWorld, a *agent, dir string, cp []byte) (*verifier.AnchoredReport, error) {
	t.Helper()
	return verifier.VerifyAnchored(dir, a.Public(), verifier.Options{}, w.policy(2), cp)
}

func removeSeqs(t *testing.T, dir string, seqs ...uint64) {
	t.Helper()
	for _, s := range seqs {
		if err := os.Remove(filepath.Join(dir, receipt.FileName(s))); err != nil {
			t.Fatal(err)
		}
	}
}

func wantMissing(t *testing.T, err error, want []uint64) {
	t.Helper()
	var m *verifier.MissingError
	if !errors.As(err, &m) {
		t.Fatalf("err = %v; want a *MissingError naming seqs %v", err, want)
	}
	if diff := cmp.Diff(want, m.Seqs); diff != "" {
		t.Errorf("missing seqs (-want +got):\n%s\nerror: %v", diff, err)
	}
}

func wantFailure(t *testing.T, err error, substr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("verification passed; want a failure saying %q", substr)
	}
	if !strings.Contains(err.Error(), substr) {
		t.Errorf("err = %v\nwant it to say %q", err, substr)
	}
}

func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func TestBundleIntactVerifies(t *testing.T) {
	t.Parallel()
	w, a := sharedLog(t, 7)
	dir, cp := w.export(a)
	rep, err := anchored(t, w, a, dir, cp)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Bundle || rep.Covered != 7 || rep.LastSeq != 7 || len(rep.Checkpoint.Cosigners) != 2 {
		t.Errorf("report: bundle %v, covered %d, last seq %d, %d cosigners; want true, 7, 7, 2", rep.Bundle, rep.Covered, rep.LastSeq, len(rep.Checkpoint.Cosigners))
	}
}

func TestBundleTruncation(t *testing.T) {
	t.Parallel()
	w, a := sharedLog(t, 6)
	for _, tc := range []struct {
		name    string
		removed []uint64
	}{
		{"newest", []uint64{6}},
		{"newest two", []uint64{5, 6}},
		{"all but one", seqRange(2, 6)},
		{"all", seqRange(1, 6)},
		{"middle and newest", []uint64{3, 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, cp := w.export(a)
			removeSeqs(t, filepath.Join(dir, bundle.ReceiptsDir), tc.removed...)
			_, err := anchored(t, w, a, dir, cp)
			wantMissing(t, err, tc.removed)
		})
	}
}

// An attacker who removes the newest receipts and rewrites the bundle to
// end at the last one kept: the tail evidence must still decide.
func TestBundleTruncationWithEditedBundle(t *testing.T) {
	t.Parallel()
	w, a := sharedLog(t, 5)
	t.Run("head seq lowered", func(t *testing.T) {
		dir, cp := w.export(a)
		removeSeqs(t, filepath.Join(dir, bundle.ReceiptsDir), 5)
		editFile(t, dir, bundle.ManifestFile, "head 5 ", "head 4 ")
		dropLines(t, dir, bundle.ProofsFile, func(l string) bool { return strings.HasPrefix(l, "5 ") })
		_, err := anchored(t, w, a, dir, cp)
		wantFailure(t, err, "the tail, which the checkpoint commits to, starts with seq 5")
	})
	// The attacker rebuilds the tail evidence to end the agent at seq 4,
	// with the log's own entries and proofs: seq 5 is still in the tail.
	t.Run("tail rebuilt from seq 4", func(t *testing.T) {
		dir, cp := w.export(a)
		forged := rebuildAtSeq(t, w, dir, 4, false)
		_, err := anchored(t, w, a, writeBundle(t, forged, a.files[:4]), cp)
		wantMissing(t, err, []uint64{5})
	})
	t.Run("tail rebuilt from seq 4, seq 5 kept", func(t *testing.T) {
		dir, cp := w.export(a)
		forged := writeBundle(t, rebuildAtSeq(t, w, dir, 4, false), a.files[:4])
		overwrite(t, filepath.Join(forged, bundle.ReceiptsDir, "000005.json"), a.files[4])
		_, err := anchored(t, w, a, forged, cp)
		wantFailure(t, err, "holds the agent's seq 5 after the head, seq 4")
	})
	t.Run("tail rebuilt from seq 4 without seq 5", func(t *testing.T) {
		dir, cp := w.export(a)
		forged := rebuildAtSeq(t, w, dir, 4, true)
		_, err := anchored(t, w, a, writeBundle(t, forged, a.files[:4]), cp)
		wantFailure(t, err, "does not hash to the checkpoint's root")
	})
}

// rebuildAtSeq returns the bundle in dir rewritten so that its head is
// the agent's receipt seq, with the log's real entries and proofs, and
// with any later receipt of the agent replaced by another entry if
// dropLater.
func rebuildAtSeq(t *testing.T, w *anchorWorld, dir string, seq uint64, dropLater bool) *bundle.Bundle {
	t.Helper()
	b, err := bundle.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	index := b.Proofs[seq-1].Index
	entries, err := w.log.Entries(index, b.Size-index)
	if err != nil {
		t.Fatal(err)
	}
	if b.HeadRange, err = w.log.InclusionProof(index, index+1); err != nil {
		t.Fatal(err)
	}
	b.Head = bundle.Head{Seq: seq, Index: index}
	b.Proofs = b.Proofs[:seq]
	b.Tail = entries
	if dropLater { // put another entry of the log in seq 5's place
		for i, e := range entries[1:] {
			if strings.Contains(string(e), `"key_id":"`+b.KeyID+`"`) {
				b.Tail[i+1] = entries[len(entries)-1]
			}
		}
	}
	return b
}

func writeBundle(t *testing.T, b *bundle.Bundle, files [][]byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "forged")
	if err := bundle.Write(dir, b, files); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestBundleTampering(t *testing.T) {
	t.Parallel()
	w, a := sharedLog(t, 5)
	for _, tc := range []struct {
		name, want string
		edit       func(t *testing.T, dir string)
	}{
		{"edited proof", "inclusion proof", func(t *testing.T, dir string) {
			p := string(readFile(t, filepath.Join(dir, bundle.ProofsFile)))
			i := strings.Index(p, "\n3 ") + 1
			line := p[i : i+strings.Index(p[i:], "\n")]
			f := strings.Fields(line)
			f[2] = strings.Repeat("A", 43) + "="
			editFile(t, dir, bundle.ProofsFile, line, strings.Join(f, " "))
		}},
		{"removed proof", "000003.json: has no inclusion proof", func(t *testing.T, dir string) {
			dropLines(t, dir, bundle.ProofsFile, func(l string) bool { return strings.HasPrefix(l, "3 ") })
		}},
		{"proof moved to another leaf", "not before the head's leaf", func(t *testing.T, dir string) {
			p := string(readFile(t, filepath.Join(dir, bundle.ProofsFile)))
			f := strings.Fields(strings.Split(p, "\n")[1])
			editFile(t, dir, bundle.ProofsFile, "2 "+f[1]+" ", "2 "+f[1]+"0 ")
		}},
		{"edited head index", "tail holds", func(t *testing.T, dir string) {
			m := string(readFile(t, filepath.Join(dir, bundle.ManifestFile)))
			f := strings.Fields(strings.Split(m, "\n")[3])
			i, _ := strconv.Atoi(f[2])
			editFile(t, dir, bundle.ManifestFile, "head 5 "+f[2], "head 5 "+strconv.Itoa(i-1))
		}},
		{"edited size", "tail holds", func(t *testing.T, dir string) {
			editFile(t, dir, bundle.ManifestFile, "\nsize ", "\nsize 1")
		}},
		{"other agent's bundle", "not the public key's", func(t *testing.T, dir string) {
			editFile(t, dir, bundle.ManifestFile, "key_id "+a.KeyID, "key_id 0123456789abcdef")
		}},
		{"changed receipt", "signature does not verify", func(t *testing.T, dir string) {
			editFile(t, filepath.Join(dir, bundle.ReceiptsDir), "000002.json", "payment/write word", "payment/read word")
		}},
		{"extra receipt", "after seq 5", func(t *testing.T, dir string) {
			overwrite(t, filepath.Join(dir, bundle.ReceiptsDir, "000006.json"), a.next(t, 1)[0])
		}},
		{"edited tlog-proof hash", "tlog-proofs/000003.tlog-proof: tlog-proof: the inclusion proof", func(t *testing.T, dir string) {
			editTLogProof(t, dir, 3, func(p *tlogproof.Proof) { p.Hashes[0][0] ^= 1 })
		}},
		{"tlog-proof of another leaf", "000003.tlog-proof: proves leaf", func(t *testing.T, dir string) {
			editTLogProof(t, dir, 3, func(p *tlogproof.Proof) { p.Index++ })
		}},
		{"tlog-proof with another checkpoint", "000004.tlog-proof: holds another checkpoint", func(t *testing.T, dir string) {
			editTLogProof(t, dir, 4, func(p *tlogproof.Proof) {
				p.Checkpoint = bytes.Replace(p.Checkpoint, []byte("\n\n"), []byte("\n\n— x.test AAAA\n"), 1)
			})
		}},
		{"malformed tlog-proof", "000001.tlog-proof: tlog-proof: the first line", func(t *testing.T, dir string) {
			editFile(t, filepath.Join(dir, bundle.TLogProofsDir), "000001.tlog-proof", "tlog-proof@v1", "tlog-proof@v2")
		}},
		{"removed tlog-proof", "000002.tlog-proof: is missing", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, bundle.TLogProofsDir, "000002.tlog-proof")); err != nil {
				t.Fatal(err)
			}
		}},
		{"stray tlog-proof", "000009.tlog-proof: is not the tlog-proof of one of the bundle's receipts 1..5", func(t *testing.T, dir string) {
			overwrite(t, filepath.Join(dir, bundle.TLogProofsDir, "000009.tlog-proof"), readFile(t, filepath.Join(dir, bundle.TLogProofsDir, "000001.tlog-proof")))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, cp := w.export(a)
			tc.edit(t, dir)
			_, err := anchored(t, w, a, dir, cp)
			wantFailure(t, err, tc.want)
		})
	}
}

// editTLogProof rewrites the tlog-proof of seq in the bundle in dir.
func editTLogProof(t *testing.T, dir string, seq uint64, edit func(p *tlogproof.Proof)) {
	t.Helper()
	p, err := bundle.ReadTLogProof(dir, seq)
	if err != nil {
		t.Fatal(err)
	}
	edit(p)
	overwrite(t, filepath.Join(dir, bundle.TLogProofsDir, bundle.TLogProofName(seq)), p.Marshal())
}

// TestBundleTLogProofs: each receipt of a bundle and its tlog-proof verify
// on their own, with package tlogproof and the policy alone (what any
// tlog-proof verifier does); a bundle without tlog-proofs/ (written
// before it) still verifies, with its proofs file.
func TestBundleTLogProofs(t *testing.T) {
	t.Parallel()
	w, a := sharedLog(t, 6)
	dir, cp := w.export(a)
	for seq := uint64(1); seq <= 6; seq++ {
		p, err := bundle.ReadTLogProof(dir, seq)
		if err != nil {
			t.Fatal(err)
		}
		r := readFile(t, filepath.Join(dir, bundle.ReceiptsDir, receipt.FileName(seq)))
		v, err := p.Verify(r, w.policy(2))
		if err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		if len(v.Cosigners) != 2 {
			t.Errorf("seq %d: %d cosigners, want 2", seq, len(v.Cosigners))
		}
		if _, err := p.Verify(readFile(t, filepath.Join(dir, bundle.ReceiptsDir, receipt.FileName(seq%6+1))), w.policy(2)); err == nil {
			t.Errorf("seq %d: the tlog-proof verifies another receipt", seq)
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, bundle.TLogProofsDir)); err != nil {
		t.Fatal(err)
	}
	if _, err := anchored(t, w, a, dir, cp); err != nil {
		t.Fatalf("a bundle without tlog-proofs: %v", err)
	}
}

// The bundle's proofs are in one tree: a --checkpoint of another tree,
// or a bundle whose checkpoint was swapped, fails.
func TestBundleSwappedCheckpoint(t *testing.T) {
	t.Parallel()
	w, a := sharedLog(t, 3)
	dir, _ := w.export(a)
	w.append(a.next(t, 1))
	later := w.cosigned(w.witnesses...)
	_, err := anchored(t, w, a, dir, later)
	wantFailure(t, err, "checkpoint: is the tree of size")

	overwrite(t, filepath.Join(dir, bundle.CheckpointFile), later)
	_, err = anchored(t, w, a, dir, later)
	wantFailure(t, err, "says size 10")
}

func TestPlainDirectory(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	w := newAnchorWorld(t, a)
	w.append(a.next(t, 6))
	cp := w.cosigned(w.witnesses...)
	rep, err := anchored(t, w, a, a.writeDir(t), cp)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Bundle || rep.Covered != 6 {
		t.Errorf("report: bundle %v, covered %d; want false, 6", rep.Bundle, rep.Covered)
	}
	for _, removed := range [][]uint64{{6}, {5, 6}, seqRange(2, 6), {2}} {
		dir := a.writeDir(t)
		removeSeqs(t, dir, removed...)
		_, err := anchored(t, w, a, dir, cp)
		wantMissing(t, err, removed)
	}
	// Receipts made after the checkpoint are not covered, and not a failure.
	a.next(t, 2)
	if rep, err := anchored(t, w, a, a.writeDir(t), cp); err != nil || rep.Covered != 6 || rep.LastSeq != 8 {
		t.Errorf("with two receipts after the checkpoint: covered %v, err %v; want 6, nil", rep, err)
	}
}

// A plain directory checked against a shared log's checkpoint: the root
// does not match, and verify says to use a bundle.
func TestPlainDirectoryOfSharedLog(t *testing.T) {
	t.Parallel()
	w, a := sharedLog(t, 3)
	a.next(t, 40) // enough seqs for the log's size
	_, err := anchored(t, w, a, a.writeDir(t), w.cosigned(w.witnesses...))
	wantFailure(t, err, "the log holds other receipts too")
}

func TestCheckpointPolicy(t *testing.T) {
	t.Parallel()
	w, a := sharedLog(t, 2)
	dir, _ := w.export(a)
	old := w.cosigned(w.witnesses...)
	w.append(a.next(t, 1)) // the bundle is now stale, but the checkpoint is checked first
	stranger, _ := newWitness(t, "stranger.test")
	cp := w.log.Checkpoint()
	lastLine := func(n []byte) string {
		ls := strings.Split(strings.TrimSuffix(string(n), "\n"), "\n")
		return ls[len(ls)-1] + "\n"
	}
	forged := func() []byte {
		l := lastLine(cosign(t, cp, w.logVKey, w.witnesses[0]))
		i := strings.LastIndex(l, " ") + 10
		b := []byte(l)
		b[i] ^= 'A' ^ 'B'
		if b[i] == '\n' || b[i] == '=' {
			b[i+1] ^= 1
		}
		return append(cosign(t, cp, w.logVKey, w.witnesses[1]), b...)
	}
	for _, tc := range []struct {
		name    string
		note    []byte
		quorum  int
		wantErr error
		want    string
	}{
		{"forged cosignature", forged(), 1, cosignature.ErrBadCosignature, "witness-a.test"},
		{"cosignature of another checkpoint", append(cosign(t, cp, w.logVKey, w.witnesses[0]), lastLine(old)...), 1, cosignature.ErrBadCosignature, "a cosignature of a different checkpoint"},
		{"quorum not met", cosign(t, cp, w.logVKey, w.witnesses[0]), 2, cosignature.ErrQuorum, "1 of the 2 trusted witnesses"},
		{"unknown witness key only", cosign(t, cp, w.logVKey, stranger), 1, cosignature.ErrQuorum, "stranger.test"},
		{"no cosignature", cp, 1, cosignature.ErrQuorum, "0 of the 2"},
		{"bad log signature", flipSig(cp), 1, cosignature.ErrLogSignature, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := cosignature.NewPolicy(w.logVKey, w.wVKeys, tc.quorum)
			if err != nil {
				t.Fatal(err)
			}
			_, err = verifier.VerifyAnchored(dir, a.Public(), verifier.Options{}, p, tc.note)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v; want %v", err, tc.wantErr)
			}
			wantFailure(t, err, tc.want)
		})
	}
	t.Run("unknown witness key ignored", func(t *testing.T) {
		dir, _ := w.export(a)
		note := cosign(t, w.log.Checkpoint(), w.logVKey, stranger, w.witnesses[0])
		rep, err := verifier.VerifyAnchored(dir, a.Public(), verifier.Options{}, w.policy(1), note)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Checkpoint.Ignored) != 1 || rep.Checkpoint.Ignored[0].Name != "stranger.test" {
			t.Errorf("ignored = %v; want the line by stranger.test", rep.Checkpoint.Ignored)
		}
	})
}

// flipSig returns the checkpoint with a character of its log signature
// changed to another base64 digit.
func flipSig(cp []byte) []byte {
	b := slices.Clone(cp)
	i := len(b) - 10
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return b
}

func editFile(t *testing.T, dir, name, old, new string) {
	t.Helper()
	path := filepath.Join(dir, name)
	b := string(readFile(t, path))
	if !strings.Contains(b, old) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	overwrite(t, path, []byte(strings.Replace(b, old, new, 1)))
}

func dropLines(t *testing.T, dir, name string, drop func(string) bool) {
	t.Helper()
	path := filepath.Join(dir, name)
	var kept []string
	n := 0
	for _, l := range strings.SplitAfter(string(readFile(t, path)), "\n") {
		if l != "" && drop(l) {
			n++
			continue
		}
		kept = append(kept, l)
	}
	if n == 0 {
		t.Fatalf("no line of %s to drop", path)
	}
	overwrite(t, path, []byte(strings.Join(kept, "")))
}

// The agent's head may be newer than the checkpoint being exported (the
// ledger took more receipts since): the bundle covers what the
// checkpoint covers, and verifies against it.
func TestBundleHeadNewerThanCheckpoint(t *testing.T) {
	t.Parallel()
	w, a := sharedLog(t, 4)
	cp, size := w.cosigned(w.witnesses...), w.log.Size()
	w.append(a.next(t, 3))
	b, files, err := bundle.Export(t.Context(), w.log.Source(), a.KeyID, cp, size)
	if err != nil {
		t.Fatal(err)
	}
	if b.Head.Seq != 4 || len(files) != 4 || b.Size != size {
		t.Fatalf("export at size %d: head seq %d, %d files, size %d; want 4, 4, %d", size, b.Head.Seq, len(files), b.Size, size)
	}
	b.LogKey = w.logVKey
	rep, err := anchored(t, w, a, writeBundle(t, b, files), cp)
	if err != nil || rep.Covered != 4 {
		t.Fatalf("verify: %v, %v; want 4 receipts covered", rep, err)
	}
}

// An agent whose first receipt is newer than the checkpoint: nothing to
// export, and Export says why.
func TestExportBeforeTheAgentsFirstReceipt(t *testing.T) {
	t.Parallel()
	a, b := newAgent(t), newAgent(t)
	w := newAnchorWorld(t, a, b)
	w.append(b.next(t, 2))
	cp, size := w.cosigned(), w.log.Size()
	w.append(a.next(t, 1))
	_, _, err := bundle.Export(t.Context(), w.log.Source(), a.KeyID, cp, size)
	wantFailure(t, err, "holds no receipt of key_id "+a.KeyID+" yet")
}

// A chain spread over more than one GetEntries page (1024 entries).
func TestBundleAcrossPages(t *testing.T) {
	t.Parallel()
	a, b := newAgent(t), newAgent(t)
	w := newAnchorWorld(t, a, b)
	w.append(a.next(t, 3))
	w.append(b.next(t, 1030))
	w.append(a.next(t, 2))
	w.append(b.next(t, 5))
	dir, cp := w.export(a)
	rep, err := anchored(t, w, a, dir, cp)
	if err != nil || rep.Covered != 5 {
		t.Fatalf("verify: %v, %v; want 5 receipts covered", rep, err)
	}
	removeSeqs(t, filepath.Join(dir, bundle.ReceiptsDir), 4, 5)
	_, err = anchored(t, w, a, dir, cp)
	wantMissing(t, err, []uint64{4, 5})
}
