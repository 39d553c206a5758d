package receipt_test

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/verifier"
)

// The helper process: TestHelperWriter run by a re-executed test binary.
const (
	envDir   = "BANKDOOR_TEST_WRITER_DIR"   // the receipts directory
	envCount = "BANKDOOR_TEST_WRITER_COUNT" // receipts to write; 0: until killed
)

const (
	helperWriters    = 2 // Writers per helper process
	helperGoroutines = 4 // goroutines per helper process, sharing its Writers
)

// TestHelperWriter is not a test: run by startHelper in a child process,
// it opens helperWriters Writers on $BANKDOOR_TEST_WRITER_DIR, prints
// "ready", waits for a line on stdin, then writes receipts from
// helperGoroutines goroutines, printing "wrote NAME HASH" after each, and
// exits. Any error is printed as "error: ..." with exit status 1.
func TestHelperWriter(t *testing.T) {
	dir := os.Getenv(envDir)
	if dir == "" {
		t.Skip("a helper process of TestWritersInManyProcesses and TestWritersKilled")
	}
	count, err := strconv.Atoi(os.Getenv(envCount))
	if err != nil || count%helperGoroutines != 0 {
		helperFail(fmt.Errorf("%s=%q: want a multiple of %d", envCount, os.Getenv(envCount), helperGoroutines))
	}
	var ws [helperWriters]*receipt.Writer
	for i := range ws {
		if ws[i], err = receipt.OpenWriter(dir, receipt.TestKey()); err != nil {
			helperFail(err)
		}
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		helperFail(fmt.Errorf("read the start line: %w", err))
	}
	var wg sync.WaitGroup
	for g := range helperGoroutines {
		w := ws[g%helperWriters]
		wg.Go(func() {
			for i := 0; count == 0 || i < count/helperGoroutines; i++ {
				name, sum, err := w.Write(denyReceipt(g, i))
				if err != nil {
					helperFail(err)
				}
				fmt.Printf("wrote %s %x\n", name, sum) // one write(2) of a short line: atomic on a pipe
			}
		})
	}
	wg.Wait()
	for _, w := range ws {
		if err := w.Close(); err != nil {
			helperFail(err)
		}
	}
}

func helperFail(err error) {
	fmt.Println("error:", err)
	os.Exit(1)
}

func denyReceipt(g, i int) *receipt.Receipt {
	return &receipt.Receipt{
		Decision: receipt.Deny, Server: "bank", Tool: "transfer", Rule: "name.write_word",
		Reason:   fmt.Sprintf("goroutine %d call %d", g, i),
		ArgNames: []string{}, ArgsSHA256: strings.Repeat("a", 64),
		PolicyID: "p", PolicySHA256: strings.Repeat("b", 64),
	}
}

// A helper is a running helper process.
type helper struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *lines
	stderr bytes.Buffer
	exited chan struct{} // closed when Wait returned, with err set
	err    error
}

// startHelper starts TestHelperWriter in a new process writing count
// receipts (0: until killed) to dir.
func startHelper(t *testing.T, dir string, count int) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), envDir+"="+dir, envCount+"="+strconv.Itoa(count))
	h := &helper{t: t, cmd: cmd, out: newLines(), exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = h.out, &h.stderr
	var err error
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.err = cmd.Wait(); close(h.exited) }()
	t.Cleanup(func() { h.cmd.Process.Kill(); <-h.exited })
	return h
}

// waitLines waits until the helper has printed n lines starting with
// prefix, and fails the test if it exits first.
func (h *helper) waitLines(prefix string, n int) {
	h.t.Helper()
	timeout := time.After(2 * time.Minute) // a hung helper, not a race
	for h.out.count(prefix) < n {
		select {
		case <-h.out.more:
		case <-h.exited:
			if h.out.count(prefix) < n {
				h.t.Fatalf("helper exited (%v) after %d %q lines:\n%s%s", h.err, h.out.count(prefix), prefix, h.out.text(), &h.stderr)
			}
		case <-timeout:
			h.t.Fatalf("helper printed %d %q lines in 2 minutes, want %d", h.out.count(prefix), prefix, n)
		}
	}
}

// start sends the start line.
func (h *helper) start() {
	h.t.Helper()
	if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
		h.t.Fatal(err)
	}
}

// wait waits for the helper to exit and fails the test unless it exited
// with status 0.
func (h *helper) wait() {
	h.t.Helper()
	<-h.exited
	if h.err != nil {
		h.t.Fatalf("helper: %v\n%s%s", h.err, h.out.text(), &h.stderr)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (h *helper) kill() {
	h.t.Helper()
	if err := h.cmd.Process.Kill(); err != nil {
		h.t.Fatal(err)
	}
	<-h.exited
}

// wrote returns what the helper reported writing: receipt hash by name.
func (h *helper) wrote() map[string]string {
	h.t.Helper()
	m := make(map[string]string)
	for _, l := range strings.Split(h.out.text(), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "wrote" {
			m[f[1]] = f[2]
		}
	}
	return m
}

// lines collects a process's output and signals on more after each write.
type lines struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	more chan struct{}
}

func newLines() *lines { return &lines{more: make(chan struct{}, 1)} }

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	select {
	case l.more <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (l *lines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *lines) count(prefix string) int {
	n := 0
	for _, line := range strings.SplitAfter(l.text(), "\n") {
		if strings.HasPrefix(line, prefix) && strings.HasSuffix(line, "\n") {
			n++
		}
	}
	return n
}

func testPub() ed25519.PublicKey { return receipt.TestKey().Public().(ed25519.PublicKey) }

// verifyDir checks that dir is one valid chain (bankdoor verify accepts
// it) holding every receipt in wrote with the hash reported, and that
// every other name in dir starts with ".". It returns the last seq.
func verifyDir(t *testing.T, dir string, wrote map[string]string) uint64 {
	t.Helper()
	rep, err := verifier.VerifyDir(dir, testPub(), verifier.Options{})
	if err != nil {
		t.Fatalf("verify %s: %v", dir, err)
	}
	onDisk := make(map[string]string)
	for _, c := range rep.Receipts {
		onDisk[c.File] = hex.EncodeToString(c.SHA256[:])
	}
	for name, sum := range wrote {
		if onDisk[name] != sum {
			t.Fatalf("a helper wrote %s with hash %s; the directory has %q", name, sum, onDisk[name])
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := onDisk[e.Name()]; !ok && !strings.HasPrefix(e.Name(), ".") {
			t.Fatalf("%s: neither a verified receipt nor a dot file", e.Name())
		}
	}
	return rep.LastSeq
}

// tempFiles returns the names in dir that are temporary files.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var tmp []string
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			tmp = append(tmp, e.Name())
		}
	}
	return tmp
}

// TestWritersInManyProcesses: 8 processes with 2 Writers and 4
// goroutines each write 200 receipts apiece into one directory with one
// key; half of them open their Writers while the other half are writing.
// The result is one chain of 1600, each receipt reported written exactly
// once, and no temporary file.
func TestWritersInManyProcesses(t *testing.T) {
	const procs, each = 8, 200
	dir := filepath.Join(t.TempDir(), "receipts")
	var hs []*helper
	for group := range 2 {
		batch := make([]*helper, procs/2)
		for i := range batch {
			batch[i] = startHelper(t, dir, each)
		}
		for _, h := range batch {
			h.waitLines("ready", 1)
		}
		for _, h := range batch {
			h.start()
		}
		if group == 0 {
			batch[0].waitLines("wrote ", 1) // the first group is writing when the second opens
		}
		hs = append(hs, batch...)
	}
	wrote := make(map[string]string)
	for _, h := range hs {
		h.wait()
		w := h.wrote()
		if len(w) != each {
			t.Fatalf("a helper reported %d distinct receipts, want %d", len(w), each)
		}
		for name, sum := range w {
			if _, dup := wrote[name]; dup {
				t.Fatalf("two helpers reported writing %s", name)
			}
			wrote[name] = sum
		}
	}
	if last := verifyDir(t, dir, wrote); last != procs*each || len(wrote) != procs*each {
		t.Fatalf("the chain ends at seq %d with %d receipts reported, want %d", last, len(wrote), procs*each)
	}
	if tmp := tempFiles(t, dir); len(tmp) != 0 {
		t.Fatalf("temporary files left: %v", tmp)
	}
}

// TestWritersKilled: in each round, helper processes writing without end
// are SIGKILLed one by one, each after a random number of its receipts
// (so at a random point of a later Write). The directory is then a valid
// chain holding every receipt a helper reported, with no receipt file
// that is partial; temporary files all start with "."; and a new Writer
// removes them and continues the chain.
func TestWritersKilled(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	var last uint64
	for round := range 5 {
		hs := make([]*helper, 3)
		for i := range hs {
			hs[i] = startHelper(t, dir, 0)
		}
		for _, h := range hs {
			h.waitLines("ready", 1)
			h.start()
		}
		wrote := make(map[string]string)
		for _, i := range rng.Perm(len(hs)) {
			hs[i].waitLines("wrote ", rng.IntN(25))
			hs[i].kill()
			for name, sum := range hs[i].wrote() {
				wrote[name] = sum
			}
		}
		got := verifyDir(t, dir, wrote)
		if got < last+uint64(len(wrote)) {
			t.Fatalf("round %d: the chain ends at seq %d, want at least %d", round, got, last+uint64(len(wrote)))
		}
		t.Logf("round %d: chain at seq %d, temporary files %v", round, got, tempFiles(t, dir))
		w, err := receipt.OpenWriter(dir, receipt.TestKey())
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if tmp := tempFiles(t, dir); len(tmp) != 0 {
			t.Fatalf("round %d: OpenWriter left temporary files %v", round, tmp)
		}
		name, _, err := w.Write(denyReceipt(0, round))
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		if name != receipt.FileName(got+1) {
			t.Fatalf("round %d: a new Writer wrote %s after seq %d", round, name, got)
		}
		last = verifyDir(t, dir, nil)
	}
}
