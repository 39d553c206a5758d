package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"connectrpc.com/connect"
	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/internal/pgtest"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// pg is the test binary's PostgreSQL, started by the first test that
// needs it and stopped by runMain.
var pg pgtest.Shared

// newPostgresLedgerWorld is a ledgerWorld whose --db is a new database
// of pg, its password in a --db-password-file.
func newPostgresLedgerWorld(t *testing.T) *ledgerWorld {
	t.Helper()
	return newPostgresLedgerWorldOn(t, pg.Server(t))
}

// newPostgresLedgerWorldOn is newPostgresLedgerWorld on server srv.
func newPostgresLedgerWorldOn(t *testing.T, srv *pgtest.Server) *ledgerWorld {
	t.Helper()
	w := newLedgerWorld(t)
	db := srv.NewDB(t)
	pw := filepath.Join(w.dir, "db-password")
	if err := os.WriteFile(pw, []byte(db.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.db, w.dbArgs = db.URL, []string{"--db-password-file", pw}
	return w
}

// TestLedgerServePostgres: bankdoor ledger serve --db postgres://...
// takes a burst of appends from several agents, is killed in the middle
// of it, passes fsck, and after a restart holds every acknowledged
// receipt at its index and takes the rest exactly once; inclusion and
// consistency proofs across the restart verify against the signed
// checkpoints.
func TestLedgerServePostgres(t *testing.T) {
	t.Parallel()
	w := newPostgresLedgerWorld(t)
	b := newBurst(t, w, 4, 60, 3)
	if out := killMidBurst(t, w, b); strings.Contains(out, pgPassword(w)) {
		t.Fatalf("fsck after the crash shows the database password: %s", out)
	}

	s := w.serve()
	c := s.client()
	before := checkpoint(t, w, c)
	b.checkAcked(t, c)
	b.finish(t, c)
	b.checkExactlyOnce(t, c)
	after := checkpoint(t, w, c)
	checkProofs(t, c, before, after)
	w.fsck() // while the server runs: one snapshot
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("bankdoor ledger serve exited %d on SIGTERM, want 0:\n%s", code, s.output())
	}
	if strings.Contains(s.output(), pgPassword(w)) {
		t.Errorf("the server's output shows the database password:\n%s", s.output())
	}
}

func pgPassword(w *ledgerWorld) string {
	b, err := os.ReadFile(w.dbArgs[1])
	if err != nil {
		w.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// checkpoint returns the server's checkpoint, verified with the log key.
func checkpoint(t *testing.T, w *ledgerWorld, c ledgerv1connect.LedgerServiceClient) *log.Checkpoint {
	t.Helper()
	resp, err := c.GetCheckpoint(t.Context(), connect.NewRequest(&ledgerv1.GetCheckpointRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(w.logVKey())
	if err != nil {
		t.Fatal(err)
	}
	cp, _, _, err := log.ParseCheckpoint(resp.Msg.Checkpoint, ledgerOrigin, v)
	if err != nil {
		t.Fatalf("checkpoint %q: %v", resp.Msg.Checkpoint, err)
	}
	return cp
}

// checkProofs verifies the consistency of the two checkpoints and the
// inclusion of every entry of the newer one.
func checkProofs(t *testing.T, c ledgerv1connect.LedgerServiceClient, older, newer *log.Checkpoint) {
	t.Helper()
	h := rfc6962.DefaultHasher
	cons, err := c.GetConsistencyProof(t.Context(), connect.NewRequest(&ledgerv1.GetConsistencyProofRequest{FromSize: older.Size, ToSize: newer.Size}))
	if err != nil {
		t.Fatal(err)
	}
	if err := proof.VerifyConsistency(h, older.Size, newer.Size, cons.Msg.Hashes, older.Hash, newer.Hash); err != nil {
		t.Fatalf("consistency proof %d -> %d: %v", older.Size, newer.Size, err)
	}
	for i := uint64(0); i < newer.Size; {
		resp, err := c.GetEntries(t.Context(), connect.NewRequest(&ledgerv1.GetEntriesRequest{Start: i, Count: newer.Size - i}))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.Msg.Entries {
			p, err := c.GetInclusionProof(t.Context(), connect.NewRequest(&ledgerv1.GetInclusionProofRequest{
				Leaf: &ledgerv1.GetInclusionProofRequest_LeafHash{LeafHash: h.HashLeaf(e)}, TreeSize: newer.Size}))
			if err != nil {
				t.Fatalf("inclusion proof of entry %d: %v", i, err)
			}
			if p.Msg.Index != i {
				t.Fatalf("entry %d's inclusion proof is for index %d", i, p.Msg.Index)
			}
			if err := proof.VerifyInclusion(h, i, newer.Size, h.HashLeaf(e), p.Msg.Hashes, newer.Hash); err != nil {
				t.Fatalf("inclusion proof of entry %d at size %d: %v", i, newer.Size, err)
			}
			i++
		}
	}
}

// TestLedgerServePostgresPassword: a password in the --db URL is refused
// before anything is opened, and so is a password file others can read.
func TestLedgerServePostgresPassword(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	base := []string{"ledger", "serve", "--addr", "127.0.0.1:0", "--log-key", w.key, "--origin", ledgerOrigin, "--agents", w.agents}
	code, out := runBankdoor(t, w.dir, append(base, "--db", "postgres://u:secret@127.0.0.1:1/db")...)
	if code != 2 || !strings.Contains(out, "--db holds a password") || !strings.Contains(out, "--db-password-file") {
		t.Errorf("--db with a password: exit %d\n%s\nwant 2 and a hint naming --db-password-file", code, out)
	}
	pw := filepath.Join(w.dir, "pw")
	if err := os.WriteFile(pw, []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = runBankdoor(t, w.dir, append(base, "--db", "postgres://u@127.0.0.1:1/db", "--db-password-file", pw)...)
	if code != 2 || !strings.Contains(out, "chmod 600") {
		t.Errorf("--db-password-file of mode 0644: exit %d\n%s\nwant 2 and a chmod hint", code, out)
	}
}
