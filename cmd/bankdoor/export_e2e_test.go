package main_test

// End to end: bankdoor ledger serve --witness with the real omniwitness
// cosigning, two agents' receipts interleaved in the log, then
// bankdoor export --ledger and bankdoor verify --checkpoint, fully
// offline, through the built binary.

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankdoor/bankdoor/anchor/anchortest"
	"github.com/bankdoor/bankdoor/ledger/receipt"
)

func TestExportVerifyWithOmniwitness(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	wit := anchortest.NewOmniwitness(t, w.logVKey())
	policy := newPolicy(t, w.logVKey(), wit.VKey)
	a, b := newChainAgent(t, w), newChainAgent(t, w)
	ra, rb := a.receipts(t, 5), b.receipts(t, 6)
	srv := w.serve("--witness", wit.URL, "--witness-key", wit.VKey, "--witness-interval", "0")
	for i := range 5 { // a1 b1 a2 b2 ... a5 b5, then b6 after a's last
		if _, err := srv.client().Append(t.Context(), appendRequest(ra[i], rb[i])); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := srv.client().Append(t.Context(), appendRequest(rb[5])); err != nil {
		t.Fatal(err)
	}
	waitCosigned(t, srv.client(), policy, 11, srv.output)

	out := filepath.Join(t.TempDir(), "export")
	code, msg := runBankdoor(t, w.dir, "export", "--ledger", srv.url, "--log-key", w.logVKey(), "--witness-key", wit.VKey,
		"--key-id", a.keyID, "--out", out)
	if code != 0 {
		t.Fatalf("bankdoor export: exit %d\n%s", code, msg)
	}
	for i, want := range ra {
		got, err := os.ReadFile(filepath.Join(out, "receipts", receipt.FileName(uint64(i)+1)))
		if err != nil || string(got) != string(want) {
			t.Fatalf("exported receipt seq %d differs from the one appended (err %v)", i+1, err)
		}
	}
	pub := writePub(t, a)
	verify := func(dir string) (int, string) {
		return runBankdoor(t, w.dir, "verify", dir, "--pub", pub, "--checkpoint", filepath.Join(out, "checkpoint"),
			"--log-key", w.logVKey(), "--witness-key", wit.VKey)
	}
	if code, msg := verify(out); code != 0 || !strings.Contains(msg, "covers seq 1..5") || !strings.Contains(msg, "cosigned by "+strings.SplitN(wit.VKey, "+", 3)[0]) {
		t.Fatalf("verify of the intact export: exit %d, want 0, covering seq 1..5, cosigned by the witness:\n%s", code, msg)
	}
	// The witness's line is ignored, and named, when its key is not given;
	// a forged one (a bit of its signature flipped) fails.
	code, msg = runBankdoor(t, w.dir, "verify", out, "--pub", pub, "--checkpoint", filepath.Join(out, "checkpoint"), "--log-key", w.logVKey())
	witName := strings.SplitN(wit.VKey, "+", 2)[0]
	if code != 0 || !strings.Contains(msg, "ignored 1 cosignature(s) by keys not given with --witness-key: "+witName+"+") {
		t.Errorf("verify without --witness-key: exit %d, want 0 and the witness's line named as ignored:\n%s", code, msg)
	}
	cp, err := os.ReadFile(filepath.Join(out, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	forged := filepath.Join(t.TempDir(), "forged-checkpoint")
	i := strings.Index(string(cp), "— "+witName+" ") + len("— "+witName+" ") + 20
	if cp[i] == 'A' {
		cp[i] = 'B'
	} else {
		cp[i] = 'A'
	}
	if err := os.WriteFile(forged, cp, 0o644); err != nil {
		t.Fatal(err)
	}
	code, msg = runBankdoor(t, w.dir, "verify", out, "--pub", pub, "--checkpoint", forged, "--log-key", w.logVKey(), "--witness-key", wit.VKey)
	if code != 1 || !strings.Contains(msg, "invalid witness cosignature: the line by witness "+witName) {
		t.Errorf("verify with a forged cosignature: exit %d, want 1 naming the witness's line:\n%s", code, msg)
	}

	// Without --log-key the export is written unchecked, with an empty
	// log.vkey; verify, with the auditor's keys, passes all the same.
	unchecked := filepath.Join(t.TempDir(), "unchecked")
	if code, msg := runBankdoor(t, w.dir, "export", "--ledger", srv.url, "--key-id", a.keyID, "--out", unchecked); code != 0 || !strings.Contains(msg, "exported unchecked") {
		t.Fatalf("bankdoor export without --log-key: exit %d, want 0 and a note:\n%s", code, msg)
	}
	if code, msg := verify(unchecked); code != 0 {
		t.Fatalf("verify of the export made without --log-key: exit %d\n%s", code, msg)
	}
	for _, removed := range [][]uint64{{5}, {4, 5}, {2, 3, 4, 5}} {
		dir := copyDir(t, out)
		for _, s := range removed {
			if err := os.Remove(filepath.Join(dir, "receipts", receipt.FileName(s))); err != nil {
				t.Fatal(err)
			}
		}
		code, msg := verify(dir)
		want := fmt.Sprintf("lacks %d receipt(s) of key_id %s", len(removed), a.keyID)
		if code != 1 || !strings.Contains(msg, want) || !strings.Contains(msg, "seq "+seqWords(removed)+";") {
			t.Errorf("removed seqs %v: exit %d, want 1 and %q naming seq %s:\n%s", removed, code, want, seqWords(removed), msg)
		}
	}
}

// seqWords is how verify lists seqs: runs of three or more as a range.
func seqWords(s []uint64) string {
	if len(s) >= 3 {
		return fmt.Sprintf("%d..%d", s[0], s[len(s)-1])
	}
	var w []string
	for _, n := range s {
		w = append(w, fmt.Sprint(n))
	}
	return strings.Join(w, ", ")
}

func writePub(t *testing.T, a *chainAgent) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(a.priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agent.pub.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}
