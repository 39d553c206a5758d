package main_test

// End to end, through the built binaries: the embedded ledger of a proxy
// serving agents over streamable HTTP (one ledger, one chain per agent,
// across restarts), and the embedded ledger anchored with proxy --witness
// to the real omniwitness, then exported and verified offline.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bankdoor/bankdoor/anchor/anchortest"
	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
	"github.com/bankdoor/bankdoor/internal/agentchain"
	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/proxy"
)

// TestE2EListenEmbeddedLedger: two agents through proxy --listen with no
// --ledger; each one's receipts are in the gateway's one embedded ledger,
// exported and verified offline per agent against its checkpoint. After
// a restart the agents' chains continue in the same ledger: a receipt an
// agent's directory got but the ledger did not (a crash between the two)
// is shipped at start although that agent does not come back, and the
// agent that does carries on from its head. Nothing is refused.
func TestE2EListenEmbeddedLedger(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tokens, toks := agentTokens(t)
	clients := func(p *mcptest.Server, agents ...string) map[string]*http.Client {
		m := map[string]*http.Client{}
		for _, agent := range agents {
			m[agent] = (&proxy.HTTPServer{URL: p.URL, Header: http.Header{"Authorization": {"Bearer " + toks[agent]}}}).Client()
		}
		return m
	}
	f := w.fixture()
	p := startListening(t, w, f, "--agent-tokens", tokens)
	readAndBeDenied(t, p, f, clients(p, "alice", "bob"))
	checkNoLedgerTrouble(t, p.Stderr())
	if !strings.Contains(p.Stderr(), "created log key "+filepath.Join(w.home, "ledger.key")+" for the embedded ledger (origin bankdoor.local/embedded/gateway-") {
		t.Errorf("the proxy did not say it made the embedded ledger's log key:\n%s", p.Stderr())
	}
	for agent, n := range map[string]uint64{"alice": 2, "bob": 2} {
		w.exportAndVerify(agent, n, "")
	}

	// alice's receipt seq 3 reaches her directory but not the ledger.
	aliceDir := filepath.Join(w.receipts, "alice")
	key, err := agentkey.LoadPrivate(filepath.Join(w.home, "agents", "alice"))
	if err != nil {
		t.Fatal(err)
	}
	a := agentchain.New(key)
	prev := sha256.Sum256(receiptFiles(t, aliceDir, 2)[1])
	a.Seq, a.Prev = 2, hex.EncodeToString(prev[:])
	third, err := a.Next()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(aliceDir, receipt.FileName(3)), third, 0o600); err != nil {
		t.Fatal(err)
	}

	// This time the gateway anchors its ledger to the real omniwitness.
	wit := anchortest.NewOmniwitness(t, readLine(t, filepath.Join(w.home, "ledger.key.vkey")))
	f = w.fixture()
	p = startListening(t, w, f, "--agent-tokens", tokens, "--witness", wit.URL, "--witness-key", wit.VKey, "--witness-interval", "0")
	readAndBeDenied(t, p, f, clients(p, "bob"))
	checkNoLedgerTrouble(t, p.Stderr())
	w.exportAndVerify("alice", 3, wit.VKey)
	w.exportAndVerify("bob", 4, wit.VKey)
}

// checkNoLedgerTrouble fails the test if the proxy's stderr has a
// warning or error about the ledger (a refusal, an unshipped receipt).
// A witness that pushed back (HTTP 429 or 5xx, tried again, and the
// checkpoint tried again at the next round once those tries ran out) is
// not one: on a loaded machine the omniwitness answers 429 while its
// SQLite database is busy, and the caller checks that the checkpoint was
// cosigned in the end. A witness that refused a checkpoint still fails.
func checkNoLedgerTrouble(t *testing.T, stderr string) {
	t.Helper()
	for line := range strings.Lines(stderr) {
		if strings.Contains(line, `msg="witness unavailable, will retry"`) ||
			strings.Contains(line, `msg="anchoring failed; will retry"`) && strings.Contains(line, tlogwitness.ErrUnavailable.Error()) {
			continue
		}
		if strings.Contains(line, "ledger") && (strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") || strings.Contains(line, "refused")) {
			t.Errorf("the proxy logged a ledger problem: %s", line)
		}
	}
}

// exportAndVerify exports agent's receipts from the embedded ledger
// beside the receipts directory (bankdoor export --ledger-db, with the
// log key in the key directory) and checks that bankdoor verify passes
// on the bundle with the agent's key and the log's verifier key, covering
// seq 1..n, the receipts being those of the agent's directory. With a
// witness key, both require the checkpoint cosigned by that witness.
func (w *world) exportAndVerify(agent string, n uint64, witnessVKey string) {
	w.t.Helper()
	w.exportAndVerifyChain(filepath.Join(w.receipts, agent), filepath.Join(w.home, "agents", agent, agentkey.PublicFile), n, witnessVKey)
}

// exportAndVerifyChain is exportAndVerify for the chain in the directory
// dir signed by the key whose public key file is pubFile: the receipts
// directory itself and $BANKDOOR_HOME's key for a stdio proxy's chain.
func (w *world) exportAndVerifyChain(dir, pubFile string, n uint64, witnessVKey string) {
	t := w.t
	t.Helper()
	pub, err := agentkey.LoadPublic(pubFile)
	if err != nil {
		t.Fatal(err)
	}
	agent := filepath.Base(dir)
	out := filepath.Join(t.TempDir(), "export-"+agent)
	db := filepath.Join(w.receipts, ".ledger.db")
	var quorum []string
	if witnessVKey != "" {
		quorum = []string{"--witness-key", witnessVKey, "--witness-quorum", "1"}
	}
	vkey := readLine(t, filepath.Join(w.home, "ledger.key.vkey"))
	w.bankdoor(0, append([]string{"export", "--ledger-db", db, "--key-id", agentkey.KeyID(pub), "--out", out, "--log-key", vkey}, quorum...)...)
	exported := receiptFiles(t, filepath.Join(out, "receipts"), int(n))
	for i, want := range receiptFiles(t, dir, int(n)) {
		if string(exported[i]) != string(want) {
			t.Errorf("%s: exported receipt seq %d differs from the directory's", agent, i+1)
		}
	}
	code, msg := runBankdoor(t, w.home, append([]string{"verify", out, "--pub", pubFile, "--checkpoint", filepath.Join(out, "checkpoint"), "--log-key", vkey}, quorum...)...)
	want := fmt.Sprintf("covers seq 1..%d", n)
	if code != 0 || !strings.Contains(msg, want) || witnessVKey != "" && !strings.Contains(msg, "cosigned by witness.test+") {
		t.Errorf("verify %s's export: exit %d, want 0 and %q (cosigned by the witness if one is given):\n%s", agent, code, want, msg)
	}
}

// TestE2EEmbeddedLedgerWitness: a stdio proxy with --witness gets the
// embedded ledger's checkpoints cosigned by the real omniwitness and
// stores the cosignatures in the ledger's file; export --ledger-db puts
// the cosigned checkpoint in the bundle, which verifies offline with the
// witness's key and a quorum of 1. With the newest receipt deleted from
// the bundle, verify fails naming its seq.
func TestE2EEmbeddedLedgerWitness(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	keyFile, vkey := w.ledgerKey("bankdoor.test/embedded-witnessed")
	wit := anchortest.NewOmniwitness(t, vkey)
	p := w.proxy(w.fixture())
	p.Flags = []string{"--ledger-key", keyFile, "--witness", wit.URL, "--witness-key", wit.VKey, "--witness-interval", "0", "-v"}
	s := start(t, p.Command(), nil)
	for seq := range uint64(3) {
		deny(t, s, seq+1)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("proxy: %v\n%s", err, s.Stderr())
	}
	checkNoLedgerTrouble(t, s.Stderr())
	if !regexp.MustCompile(`msg="checkpoint cosigned" .*witness=witness.test origin=bankdoor.test/embedded-witnessed size=3 `).MatchString(s.Stderr()) {
		t.Errorf("the proxy did not log the witness cosigning size 3:\n%s", s.Stderr())
	}

	out := filepath.Join(t.TempDir(), "export")
	db := filepath.Join(w.receipts, ".ledger.db")
	w.bankdoor(0, "export", "--ledger-db", db, "--ledger-key", keyFile, "--key-id", w.keyID(), "--out", out,
		"--log-key", vkey, "--witness-key", wit.VKey, "--witness-quorum", "1")
	verify := func(dir string) (int, string) {
		return w.verify(dir, "--checkpoint", filepath.Join(out, "checkpoint"), "--log-key", vkey, "--witness-key", wit.VKey, "--witness-quorum", "1")
	}
	if code, msg := verify(out); code != 0 || !strings.Contains(msg, "cosigned by witness.test") || !strings.Contains(msg, "covers seq 1..3") {
		t.Fatalf("verify of the export: exit %d, want 0, cosigned by witness.test, covering seq 1..3:\n%s", code, msg)
	}
	cut := copyDir(t, out)
	if err := os.Remove(filepath.Join(cut, "receipts", receipt.FileName(3))); err != nil {
		t.Fatal(err)
	}
	want := "lacks 1 receipt(s) of key_id " + w.keyID()
	if code, msg := verify(cut); code != 1 || !strings.Contains(msg, want) || !strings.Contains(msg, "seq 3;") {
		t.Errorf("verify with the newest receipt deleted: exit %d, want 1 and %q naming seq 3:\n%s", code, want, msg)
	}
}
