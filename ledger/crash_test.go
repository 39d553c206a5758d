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
		crashChild(t, path, 0)
		return
	}
	path, acked, rep := crash(t, "TestCrashKeepsAcknowledged")
	tl := reopenCrashed(t, path, 0)
	for idx, who := range acked {
		e, err := tl.Entries(idx, 1)
		if err != nil || hexHash(e[0]) != who {
			t.Fatalf("acknowledged receipt %s at index %d is not in the log after the crash: %v", who, idx, err)
		}
	}
	t.Logf("%d acknowledged before SIGKILL; the log holds %d", len(acked), rep.Size)
}

// TestCrashMidIndexFlush kills a process appending with a leaf index of
// lag 8, so that nearly every commit writes part of the index and moves
// "leaves_from": after reopening, Fsck finds the file consistent, every
// leaf is found by its hash at its index, and appends go on.
func TestCrashMidIndexFlush(t *testing.T) {
	t.Parallel()
	const lag = 8
	if path := os.Getenv(crashEnv); path != "" {
		crashChild(t, path, lag)
		return
	}
	path, acked, rep := crash(t, "TestCrashMidIndexFlush")
	tl := reopenCrashed(t, path, lag)
	size := tl.Size()
	if size != rep.Size {
		t.Fatalf("reopened log has size %d, Fsck saw %d", size, rep.Size)
	}
	byLeaf := func(t *testing.T) {
		t.Helper()
		for start := uint64(0); start < tl.Size(); start += MaxEntries {
			es, err := tl.Entries(start, MaxEntries)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range es {
				if got, err := tl.LeafIndex(hasher.HashLeaf(e)); err != nil || got != start+uint64(i) {
					t.Fatalf("LeafIndex of entry %d = %d, %v", start+uint64(i), got, err)
				}
			}
		}
	}
	if from := tl.leavesFrom(t); from == 0 || tl.indexedLeaves(t) == 0 {
		t.Fatalf("the child never wrote the leaf index: leaves_from %d", from)
	}
	byLeaf(t)
	for idx, who := range acked {
		if e, err := tl.Entries(idx, 1); err != nil || hexHash(e[0]) != who {
			t.Fatalf("acknowledged receipt %s at index %d is not in the log after the crash: %v", who, idx, err)
		}
	}
	a := newAgent(7) // a fresh agent
	tl.agents.Enroll(a.Public())
	for range 20 {
		tl.mustAppend(t, a.Next(t))
	}
	byLeaf(t)
	tl.Close()
	if _, err := Fsck(context.Background(), path, testVerifier(t)); err != nil {
		t.Fatalf("fsck after appending to the crashed log: %v", err)
	}
}

// crash runs the test named in a child process that appends (crashChild)
// and kills it after 300 acknowledgements. It returns the file, the
// acknowledged receipts (index -> hex SHA-256) and Fsck's report, which
// must be clean.
func crash(t *testing.T, name string) (string, map[uint64]string, *FsckReport) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$")
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
	rep, err := Fsck(context.Background(), path, testVerifier(t))
	if err != nil {
		t.Fatalf("fsck after the crash: %v", err)
	}
	return path, acked, rep
}

// reopenCrashed opens the file crashChild wrote, with its agents
// enrolled and the leaf index's lag (0: Open's).
func reopenCrashed(t *testing.T, path string, lag int) *testLog {
	tl := openTestLog(t, 0)
	tl.Close()
	tl.path, tl.indexLag = path, lag
	for i := range 4 {
		tl.agents.Enroll(newAgent(i).Public())
	}
	tl.reopen(t)
	return tl
}

// crashChild appends from four agents until it is killed, printing
// "ack INDEX RECEIPT-SHA256" after each Append returns. lag is the leaf
// index's (0: Open's).
func crashChild(t *testing.T, path string, lag int) {
	tl := openTestLog(t, 0)
	tl.Close()
	tl.path, tl.indexLag = path, lag
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
