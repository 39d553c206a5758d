package main_test

// End-to-end tests of --events through the built binaries: the proxy's
// and a remote ledger's event streams against the receipts on disk and
// the log, and a sink that stops reading, which must not hold up the gate.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// Argument values of the calls in TestE2EEvents: none may appear in an
// event line.
var eventSecrets = []string{"acc_evt_secret_9d2c", "73519", "acc_savings", "memo-7f3a-confidential"}

// eventCalls are one allowed call and three denied ones (a write word, an
// undeclared argument, an argument outside its pattern), with the values
// of eventSecrets.
func eventCalls() []*mcp.CallToolParams {
	return []*mcp.CallToolParams{
		{Name: "get_balances", Arguments: map[string]any{"account_id": "acc_savings"}},
		{Name: "transfer", Arguments: map[string]any{"from_account": "acc_checking", "to_account": "acc_evt_secret_9d2c", "amount_cents": 73519, "memo": "memo-7f3a-confidential"}},
		{Name: "get_transactions", Arguments: map[string]any{"account_id": "acc_checking", "action": "transfer", "to_account": "acc_evt_secret_9d2c", "amount_cents": 73519}},
		{Name: "get_transactions", Arguments: map[string]any{"account_id": "memo-7f3a-confidential"}},
	}
}

// receiptsAll writes a copy of the world's policy that signs allowed
// calls too (receipts: all) and makes it the world's policy.
func (w *world) receiptsAll() {
	w.t.Helper()
	b, err := os.ReadFile(w.policy)
	if err != nil {
		w.t.Fatal(err)
	}
	all := bytes.Replace(b, []byte("\nreceipts: deny\n"), []byte("\nreceipts: all\n"), 1)
	if bytes.Equal(all, b) {
		w.t.Fatalf("%s has no line receipts: deny", w.policy)
	}
	w.policy = filepath.Join(w.t.TempDir(), "receipts-all.yaml")
	if err := os.WriteFile(w.policy, all, 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// eventFileLines reads an events file: each line one JSON object, split into
// its members with their raw bytes.
func eventFileLines(t *testing.T, path string) ([][]byte, []jsonobj.Object) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("%s ends in half a line: %q", path, b)
	}
	var lines [][]byte
	var objs []jsonobj.Object
	for l := range bytes.Lines(b) {
		obj, err := jsonobj.Parse(l)
		if err != nil {
			t.Fatalf("%s: line %q: %v", path, l, err)
		}
		lines, objs = append(lines, l), append(objs, obj)
	}
	return lines, objs
}

// checkEventLine checks one event line against the receipt file it names
// in dir: the receipt's members byte for byte, then file, index (if
// index >= 0) and receipt_sha256, the hash of the file.
func checkEventLine(t *testing.T, dir string, line []byte, obj jsonobj.Object, index int) {
	t.Helper()
	name, _ := jsonobj.String(obj.Get("file"))
	file, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("line %s names file %q: %v", line, name, err)
	}
	rec, err := jsonobj.Parse(file)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(file)
	want := append(jsonobj.Object{}, rec...)
	want = append(want, jsonobj.Member{Name: "file", Value: []byte(`"` + name + `"`)})
	if index >= 0 {
		want = append(want, jsonobj.Member{Name: "index", Value: []byte(jsonInt(index))})
	}
	want = append(want, jsonobj.Member{Name: "receipt_sha256", Value: []byte(`"` + hex.EncodeToString(sum[:]) + `"`)})
	if got, w := string(obj.Marshal()), string(want.Marshal()); got != w {
		t.Errorf("event line\n%s\nwant the members of %s (index %d):\n%s", got, name, index, w)
	}
	if head, _, _ := bytes.Cut(line, []byte(`,"file":`)); string(head)+"}" != string(file) {
		t.Errorf("event line %s does not start with receipt file %s", line, file)
	}
}

func jsonInt(i int) string { return strconv.Itoa(i) }

// TestE2EEvents runs a proxy with --events in front of the fixture bank,
// shipping to a ledger serve with --events, makes one allowed and three
// denied calls with secret argument values, and checks both streams: one
// line per receipt file, its members and hash, the ledger's indexes, and
// no argument value anywhere.
func TestE2EEvents(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.receiptsAll()
	const origin = "e2e.bankdoor.test/events"
	logKey, _ := w.ledgerKey(origin)
	dir := t.TempDir()
	proxyEvents, ledgerEvents := filepath.Join(dir, "proxy.jsonl"), filepath.Join(dir, "ledger.jsonl")
	url, stopLedger := w.startLedger(filepath.Join(dir, "l.db"), logKey, origin, "", "--events", ledgerEvents)
	p := w.proxy(w.fixture())
	p.Flags = []string{"--ledger", url, "--events", proxyEvents}
	s := start(t, p.Command(), nil)
	ctx := testContext(t, time.Minute)
	for _, c := range eventCalls() {
		res, err := s.Client().CallTool(ctx, c)
		if c.Name == "get_balances" && (err != nil || res.IsError) {
			t.Fatalf("allowed call %s: %v %v\n%s", c.Name, res, err, s.Stderr())
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("proxy: %v\n%s", err, s.Stderr())
	}
	names, err := mcptest.Receipts(w.receipts)
	if err != nil || len(names) != len(eventCalls()) {
		t.Fatalf("receipts %q (%v), want %d", names, err, len(eventCalls()))
	}
	client := ledgerv1connect.NewLedgerServiceClient(http.DefaultClient, url)
	waitHead(t, client, w.keyID(), uint64(len(names)), s.Stderr)
	resp, err := client.GetEntries(context.Background(), connect.NewRequest(&ledgerv1.GetEntriesRequest{Start: 0, Count: 0}))
	if err != nil {
		t.Fatal(err)
	}
	entries := resp.Msg.GetEntries()
	stopLedger() // the ledger's stream is written when it has stopped

	lines, objs := eventFileLines(t, proxyEvents)
	if len(lines) != len(names) {
		t.Fatalf("%d proxy event lines, want one per receipt (%d):\n%s", len(lines), len(names), bytes.Join(lines, nil))
	}
	decisions := map[string]int{}
	for i, obj := range objs {
		if got, _ := jsonobj.String(obj.Get("file")); got != names[i] {
			t.Errorf("proxy event %d is of %s, want %s (in seq order)", i, got, names[i])
		}
		checkEventLine(t, w.receipts, lines[i], obj, -1)
		d, _ := jsonobj.String(obj.Get("decision"))
		decisions[d]++
	}
	if decisions["allow"] != 1 || decisions["deny"] != 3 {
		t.Errorf("decisions %v, want 1 allow and 3 deny", decisions)
	}

	llines, lobjs := eventFileLines(t, ledgerEvents)
	if len(llines) != len(names) {
		t.Fatalf("%d ledger event lines, want %d:\n%s", len(llines), len(names), bytes.Join(llines, nil))
	}
	for i, obj := range lobjs {
		checkEventLine(t, w.receipts, llines[i], obj, i)
		if i >= len(entries) || !bytes.HasPrefix(llines[i], entries[i][:len(entries[i])-1]) {
			t.Errorf("the ledger's event of index %d is not of the log's entry %d", i, i)
		}
	}
	for _, secret := range eventSecrets {
		for _, l := range append(lines, llines...) {
			if bytes.Contains(l, []byte(secret)) {
				t.Errorf("argument value %q in event line %s", secret, l)
			}
		}
	}
}

// TestE2EEventsStuckSink gives the proxy an --events FIFO whose reader
// holds it open but does not read, its pipe buffer cut to one page: a
// few lines fill it and the stream's write blocks. The gate must go on
// answering every deny at once (a proxy writing events in line would hang
// at the first full buffer); once the reader reads, every line arrives.
func TestE2EEventsStuckSink(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	fifo := filepath.Join(t.TempDir(), "events.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := unix.FcntlInt(r.Fd(), unix.F_SETPIPE_SZ, os.Getpagesize()); err != nil {
		t.Fatal(err)
	}
	p := w.proxy(w.fixture())
	p.Flags = []string{"--events", fifo}
	s := start(t, p.Command(), nil)
	const n = 40 // lines of about 900 bytes: many pages
	for seq := range uint64(n) {
		deny(t, s, seq+1)
	}

	// The reader reads now: the queued lines, then the end of the file
	// once the proxy has exited.
	if err := syscall.SetNonblock(int(r.Fd()), false); err != nil {
		t.Fatal(err)
	}
	read := make(chan []string, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		read <- lines
	}()
	if err := s.Close(); err != nil {
		t.Fatalf("proxy: %v\n%s", err, s.Stderr())
	}
	lines := <-read
	if len(lines) != n {
		t.Fatalf("read %d event lines, want %d\nproxy stderr:\n%s", len(lines), n, s.Stderr())
	}
	for i, l := range lines {
		if want := `"file":"` + receipt.FileName(uint64(i+1)) + `"`; !strings.Contains(l, want) {
			t.Fatalf("line %d = %s, want %s", i, l, want)
		}
	}
}

// TestE2EEventsReaderGone runs ledger serve --events - with its standard
// output a pipe whose reader has closed: the first line's write fails
// (EPIPE, not a SIGPIPE that would kill the server), the server warns
// and goes on committing receipts.
func TestE2EEventsReaderGone(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const origin = "e2e.bankdoor.test/events-gone"
	logKey, _ := w.ledgerKey(origin)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr.Close()
	cmd := exec.Command(built.bankdoor, "ledger", "serve", "--db", filepath.Join(t.TempDir(), "l.db"), "--addr", "127.0.0.1:0",
		"--log-key", logKey, "--origin", origin, "--agents", w.agentsDir(), "--events", "-")
	cmd.Env = mcptest.Env("BANKDOOR_HOME=" + w.home)
	cmd.Stdout = pw
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	var log syncBuf
	urls := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		listening := regexp.MustCompile(`listening on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.write(sc.Text() + "\n")
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	defer func() {
		cmd.Process.Kill()
		<-scanned
		cmd.Wait()
	}()
	var url string
	select {
	case url = <-urls:
	case <-time.After(30 * time.Second):
		t.Fatalf("ledger serve did not start:\n%s", log.String())
	}

	p := w.proxy(w.fixture())
	p.Flags = []string{"--ledger", url}
	s := start(t, p.Command(), nil)
	client := ledgerv1connect.NewLedgerServiceClient(http.DefaultClient, url)
	for seq := range uint64(3) {
		deny(t, s, seq+1)
		waitHead(t, client, w.keyID(), seq+1, s.Stderr) // one commit, one line, at a time
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("ledger serve is gone: %v\n%s", err, log.String())
	}
	<-scanned
	err = cmd.Wait()
	out := log.String()
	if err != nil {
		t.Fatalf("ledger serve: %v (want exit 0 after SIGINT)\n%s", err, out)
	}
	if n := strings.Count(out, "event stream: write failed"); n != 1 || !strings.Contains(out, "broken pipe") {
		t.Errorf("ledger serve warned %d times of failed writes, want once, naming the broken pipe:\n%s", n, out)
	}
	if !strings.Contains(out, "dropped_total=3") {
		t.Errorf("ledger serve did not count the 3 lost events:\n%s", out)
	}
}

// TestE2EEventsListen: with --listen, one stream carries every agent's
// receipts; key_id tells whose chain (and receipts directory) a line is of.
func TestE2EEventsListen(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	f := w.fixture()
	tokens, toks := agentTokens(t)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	p := startListening(t, w, f, "--agent-tokens", tokens, "--events", events)
	clients := bearerClients(p.URL, toks)
	readAndBeDenied(t, p, f, clients) // stops the proxy: the stream is written
	dirOf := map[string]string{}      // key_id -> the agent's receipts directory
	for agent := range toks {
		dir := filepath.Join(w.receipts, agent)
		rc, err := mcptest.ReadReceipt(dir, receipt.FileName(1))
		if err != nil {
			t.Fatal(err)
		}
		dirOf[rc.KeyID] = dir
	}
	lines, objs := eventFileLines(t, events)
	if len(lines) != 4 {
		t.Fatalf("%d event lines, want 4 (2 denies of each agent):\n%s", len(lines), bytes.Join(lines, nil))
	}
	seen := map[string]bool{}
	for i, obj := range objs {
		keyID, _ := jsonobj.String(obj.Get("key_id"))
		file, _ := jsonobj.String(obj.Get("file"))
		if dirOf[keyID] == "" || seen[keyID+file] {
			t.Fatalf("line %s: key_id of no agent, or a receipt twice", lines[i])
		}
		seen[keyID+file] = true
		checkEventLine(t, dirOf[keyID], lines[i], obj, -1)
	}
}
