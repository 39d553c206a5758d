package ledger

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const crashEnv = "BANKDOOR_LEDGER_CRASH_CHILD"

// TestCrashKeepsAcknowledged kills (SIGKILL) a process in the middle of
// appending and checks that every receipt whose Append had returned is in
// the log after reopening, and that Fsck finds the file consistent.
func TestCrashKeepsAcknowledged(t *testing.T) {
	t.Parallel()
	if path := os.Getenv(crashEnv); path != "" {
		crashChild(t, path)
		return
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashKeepsAcknowledged$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[uint64]string{} // index -> hex SHA-256 of the receipt
	sc := bufio.NewScanner(out)
	for len(acked) < 300 && sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "ack" {
			continue
		}
		idx, _ := strconv.ParseUint(f[1], 10, 64)
		acked[idx] = f[2]
	}
	cmd.Process.Kill()
	cmd.Wait()
	if len(acked) < 300 {
		t.Fatalf("child acknowledged only %d receipts before it stopped", len(acked))
	}
	rep, err := Fsck(context.Background(), path)
	if err != nil {
		t.Fatalf("fsck after the crash: %v", err)
	}
	tl := openTestLog(t, 0)
	tl.Close()
	tl.path = path
	for i := range 4 {
		tl.agents.Enroll(newAgent(i).Public())
	}
	tl.reopen(t)
	for idx, who := range acked {
		e, err := tl.Entries(idx, 1)
		if err != nil || hexHash(e[0]) != who {
			t.Fatalf("acknowledged receipt %s at index %d is not in the log after the crash: %v", who, idx, err)
		}
	}
	t.Logf("%d acknowledged before SIGKILL; the log holds %d", len(acked), rep.Size)
}

// crashChild appends from four agents until it is killed, printing
// "ack INDEX RECEIPT-SHA256" after each Append returns.
func crashChild(t *testing.T, path string) {
	tl := openTestLog(t, 0)
	tl.Close()
	tl.path = path
	var as []*agent
	for i := range 4 {
		as = append(as, newAgent(i))
		tl.agents.Enroll(as[i].Public())
	}
	tl.reopen(t)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, a := range as {
		wg.Go(func() {
			for {
				r := a.Next(t)
				idx, err := tl.Append(context.Background(), [][]byte{r})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				fmt.Printf("ack %d %s\n", idx[0], hexHash(r))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
