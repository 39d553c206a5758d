package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/internal/flock"
	"github.com/bankdoor/bankdoor/internal/mcptest"
)

// TestE2EReceiptsLockHeld: while another process holds the receipts
// directory's lock, a denied call gets, within the writer's bounded wait
// (receipt.LockWait), an error naming the lock file and its holder, and
// no receipt; the proxy then stops, as after any failed receipt write,
// instead of leaving the ping sent behind the call waiting.
func TestE2EReceiptsLockHeld(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := testContext(t, time.Minute)
	s, err := mcptest.Start(ctx, w.proxy(w.fixture()).Command(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if res, err := s.Client().CallTool(ctx, &mcp.CallToolParams{Name: "list_accounts"}); err != nil || res.IsError {
		t.Fatalf("list_accounts: %v %v", res, err)
	}
	lock := filepath.Join(w.receipts, ".lock")
	held, err := flock.TryLock(lock)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := s.RawNoReply([]byte(`{"jsonrpc":"2.0","id":` + s.NextID() + `,"method":"tools/call","params":{"name":"transfer"}}`)); err != nil {
		t.Fatal(err)
	}
	resp, err := s.Raw(ctx, []byte(`{"jsonrpc":"2.0","id":`+s.NextID()+`,"method":"ping"}`))
	if err != nil {
		t.Fatalf("denied call under a held receipts lock: %v\nstderr:\n%s", err, s.Stderr())
	}
	var msg struct{ Error *jsonrpc.Error }
	if json.Unmarshal(resp, &msg) != nil || msg.Error == nil || !strings.Contains(msg.Error.Message, lock) ||
		!strings.Contains(msg.Error.Message, holder()) {
		t.Errorf("denied call under a held receipts lock answered %s; want an error naming %s and its holder, pid %d", resp, lock, os.Getpid())
	}
	if code, err := s.Wait(ctx); err != nil || code != 1 {
		t.Errorf("proxy after a receipt it could not write: exit status %d (%v); want 1\nstderr:\n%s", code, err, s.Stderr())
	}
	if names, err := mcptest.Receipts(w.receipts); err != nil || len(names) != 0 {
		t.Errorf("receipts %v (%v); want none: the deny's receipt could not be written", names, err)
	}
}

// TestE2ELedgerHeldElsewhere: a process that is no proxy (here the test,
// holding the flock bbolt takes) holds the embedded ledger's file when the
// proxy starts: the proxy denies as ever, says once on stderr that nothing
// is shipped, naming the file and the holder's pid, and its metrics show
// the lapse and the receipts written meanwhile.
func TestE2ELedgerHeldElsewhere(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if err := os.MkdirAll(w.receipts, 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(w.receipts, ".ledger.db")
	held, err := flock.TryLock(db)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	p := w.proxy(w.fixture())
	p.Flags = []string{"--metrics-addr", "127.0.0.1:0"}
	s := start(t, p.Command(), nil)
	ctx := testContext(t, time.Minute)
	_, err = s.Client().CallTool(ctx, &mcp.CallToolParams{Name: "transfer"})
	deniedWith(t, w, err, "name.write_word")
	if got := scrape(t, metricsURL(t, s.Stderr()), "bankdoor_ledger_holder_lapse"); len(got) != 1 || got[0] != "bankdoor_ledger_holder_lapse 1" {
		t.Errorf("lapse gauge %q; want bankdoor_ledger_holder_lapse 1", got)
	}
	if got := scrape(t, metricsURL(t, s.Stderr()), "bankdoor_spool_backlog_receipts{"); len(got) != 1 || !strings.HasSuffix(got[0], "} 1") {
		t.Errorf("backlog %q; want one key_id with 1 receipt", got)
	}
	lapse := regexp.MustCompile(`holds the ledger file and ships nothing.*` + regexp.QuoteMeta(db) + `.*` + regexp.QuoteMeta(holder()))
	if n := len(lapse.FindAllString(s.Stderr(), -1)); n != 1 {
		t.Errorf("stderr names the lapse %d times; want once, naming %s and pid %d:\n%s", n, db, os.Getpid(), s.Stderr())
	}
}

// holder is how a lock's error names this process as its holder: by pid
// where the system lists locks (Linux), else not at all.
func holder() string {
	if runtime.GOOS != "linux" {
		return ""
	}
	return fmt.Sprintf("pid %d", os.Getpid())
}
