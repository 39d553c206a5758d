package main_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/internal/pgtest"

	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// TestLedgerCopyToPostgres: the bbolt ledger a bankdoor ledger serve
// wrote is refused while the server holds it, then copied by bankdoor
// ledger copy into a new PostgreSQL database, which ledger serve --db
// postgres:// then serves as the same log: the same signed checkpoint,
// every receipt at its index, appends that continue the agents' chains,
// and consistency and inclusion proofs from the copied checkpoint that
// verify; ledger fsck passes. A second copy into the same database is
// refused.
func TestLedgerCopyToPostgres(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	chains := [][][]byte{newChainAgent(t, w).receipts(t, 40), newChainAgent(t, w).receipts(t, 40), newChainAgent(t, w).receipts(t, 40)}
	s := w.serve()
	c := s.client()
	for i := 0; i < 30; i += 5 {
		for _, chain := range chains {
			if _, err := c.Append(t.Context(), appendRequest(chain[i:i+5]...)); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := checkpoint(t, w, c)
	beforeNote := rawCheckpoint(t, c)

	pgw := newPostgresLedgerWorld(t)
	copyArgs := append([]string{"ledger", "copy", "--from", "bolt:" + w.db, "--to", pgw.db, "--log-key", w.logKey()}, pgw.dbArgs...)
	code, out := runBankdoor(t, w.dir, copyArgs...)
	if code != 1 || !strings.Contains(out, "stop the ledger server or proxy that has it open") {
		t.Errorf("ledger copy of a file ledger serve holds: exit %d\n%s\nwant 1 and a hint to stop the server", code, out)
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("bankdoor ledger serve exited %d on SIGTERM:\n%s", code, s.output())
	}

	code, out = runBankdoor(t, w.dir, copyArgs...)
	line := regexp.MustCompile(`(?m)^copied 90 entries \(3 agents, 0 cosignatures, \d+ leaves indexed\) from .*ledger\.db to ` +
		`postgres://bankdoor@127\.0\.0\.1:\d+/\w+: size 90, root ` + fmt.Sprintf("%x", before.Hash) + `; roots equal at 1 checkpointed size \(90\); fsck ok; took \S+$`)
	if code != 0 || !line.MatchString(out) {
		t.Fatalf("bankdoor ledger copy: exit %d\n%s\nwant 0 and a line matching %s", code, out, line)
	}
	if strings.Contains(out, pgPassword(pgw)) {
		t.Errorf("ledger copy printed the database password:\n%s", out)
	}
	code, out = runBankdoor(t, w.dir, copyArgs...)
	if code != 1 || !strings.Contains(out, "holds a log (origin \""+ledgerOrigin+"\", size 90)") || !strings.Contains(out, "new, empty database") {
		t.Errorf("a second ledger copy into the same database: exit %d\n%s\nwant 1, the log it holds and a hint", code, out)
	}

	pgw.key, pgw.agents = w.key, w.agents
	pgw.fsck()
	s = pgw.serve()
	c = s.client()
	if got := rawCheckpoint(t, c); !bytes.Equal(got, beforeNote) {
		t.Fatalf("the copy serves checkpoint\n%s\nthe bbolt ledger served\n%s", got, beforeNote)
	}
	for _, chain := range chains {
		if _, err := c.Append(t.Context(), appendRequest(chain[30:]...)); err != nil {
			t.Fatalf("appending the rest of a chain to the copy: %v", err)
		}
	}
	after := checkpoint(t, pgw, c)
	if after.Size != 120 {
		t.Fatalf("the copy has size %d after 30 more receipts; want 120", after.Size)
	}
	checkProofs(t, c, before, after)
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("bankdoor ledger serve --db postgres:// exited %d on SIGTERM:\n%s", code, s.output())
	}
	pgw.fsck()
}

// rawCheckpoint returns the server's checkpoint note as served.
func rawCheckpoint(t *testing.T, c ledgerv1connect.LedgerServiceClient) []byte {
	t.Helper()
	resp, err := c.GetCheckpoint(t.Context(), connect.NewRequest(&ledgerv1.GetCheckpointRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Msg.Checkpoint
}

// TestLedgerCopyUnfinished: a database whose copy did not finish (its
// meta "copy_incomplete" still set, as an interrupted copy leaves it;
// package ledger's TestCopyInterrupted interrupts one) is refused by
// ledger serve, ledger fsck and ledger copy, each naming the cause and
// the fix.
func TestLedgerCopyUnfinished(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	a := newChainAgent(t, w)
	s := w.serve()
	if _, err := s.client().Append(t.Context(), appendRequest(a.receipts(t, 5)...)); err != nil {
		t.Fatal(err)
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("bankdoor ledger serve exited %d on SIGTERM:\n%s", code, s.output())
	}
	pgw := newPostgresLedgerWorld(t)
	pgw.key, pgw.agents = w.key, w.agents
	copyArgs := append([]string{"ledger", "copy", "--from", "bolt:" + w.db, "--to", pgw.db, "--log-key", w.logKey()}, pgw.dbArgs...)
	if code, out := runBankdoor(t, w.dir, copyArgs...); code != 0 {
		t.Fatalf("bankdoor ledger copy: exit %d\n%s", code, out)
	}
	conn, err := pgx.Connect(t.Context(), pgtest.DB{URL: pgw.db, Password: pgPassword(pgw)}.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(t.Context(), "INSERT INTO ledger_meta (key, value) VALUES ('copy_incomplete', 'copy of elsewhere begun at noon')")
	conn.Close(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		args []string
		hint string
	}{
		{append([]string{"ledger", "fsck", "--db", pgw.db, "--log-key", w.logKey()}, pgw.dbArgs...), ""},
		{append(append([]string{"ledger", "serve", "--db", pgw.db}, pgw.dbArgs...),
			"--addr", "127.0.0.1:0", "--log-key", w.key, "--origin", ledgerOrigin, "--agents", w.agents),
			"bankdoor: hint: drop the database and create it anew, then run bankdoor ledger copy again"},
		{copyArgs, "bankdoor: hint: the database holds part of an earlier copy: drop the database"},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a serve that opened it would not exit
		cmd := exec.CommandContext(ctx, built.bankdoor, tc.args...)
		cmd.Env = mcptest.Env("BANKDOOR_HOME=" + w.dir)
		out, _ := cmd.CombinedOutput()
		cancel()
		code := cmd.ProcessState.ExitCode()
		if code != 1 || !strings.Contains(string(out), "copy that did not finish") || !strings.Contains(string(out), "copy of elsewhere begun at noon") ||
			!strings.Contains(string(out), tc.hint) {
			t.Errorf("bankdoor %s of an unfinished copy: exit %d\n%s\nwant 1, the unfinished copy named, and %q", tc.args[1], code, out, tc.hint)
		}
	}
}
