// Package fleet runs several `bankdoor proxy` processes on one receipts
// directory and one key, as MCP clients that each launch their own proxy
// do: every member is a stdio proxy with its own fixture bank behind it
// and its own Go SDK client in front (internal/mcptest). It sends denials
// through all members at once, times how long a standby takes to hold the
// embedded ledger after the holder is SIGKILLed, and checks afterwards that
// the directory is one chain that verifies, that every deny an agent got
// names its own receipt of that chain, and that the embedded ledger holds
// the whole chain. The report (internal/report) and cmd/bankdoor's
// benchmarks share it, so both measure the same thing.
//
// Members run the proxy's defaults for the embedded ledger: its file is
// [LedgerFile] in the receipts directory and its log key [LogKeyFile] in
// $BANKDOOR_HOME (see DESIGN §6 and `bankdoor proxy -h`); Config.Proxy's
// flags must not move them.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/internal/mcptest"
)

// The embedded ledger's defaults that Check reads.
const (
	LedgerFile = ".ledger.db" // in the receipts directory
	LogKeyFile = "ledger.key" // in $BANKDOOR_HOME
)

// Config describes every member of a fleet.
type Config struct {
	// Proxy is each member's proxy: binary, policy, server, receipts
	// directory, BANKDOOR_HOME (holding the signing key) and flags, with
	// Fixture.Bin the fixture bank; Fixture.State is set per member.
	Proxy mcptest.Proxy
	// StateDir holds the fixture banks' state files, one per member.
	StateDir string
}

// Fleet is the running members. Its methods are not safe for concurrent
// use.
type Fleet struct {
	cfg     Config
	members []*member
	events  *events
	// receipts are the receipt names the denies were answered with, in
	// the order the answers arrived.
	receipts []string
	closed   bool
}

// member is one proxy process and its client session.
type member struct {
	id   int
	cmd  *exec.Cmd
	sess *mcptest.Session
	dead bool // SIGKILLed
}

// Start starts n members at once and waits until each has answered the
// MCP handshake; it creates StateDir if need be. On error it stops those
// that started.
func Start(ctx context.Context, cfg Config, n int) (*Fleet, error) {
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("fleet: the fixtures' state directory: %w", err)
	}
	f := &Fleet{cfg: cfg, events: newEvents()}
	ms := make([]*member, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ms[i], errs[i] = f.start(ctx, i) })
	}
	wg.Wait()
	for _, m := range ms {
		if m != nil {
			f.members = append(f.members, m)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return f, nil
}

// Add starts one more member.
func (f *Fleet) Add(ctx context.Context) error {
	m, err := f.start(ctx, len(f.members))
	if err != nil {
		return err
	}
	f.members = append(f.members, m)
	return nil
}

// start starts member id, its stderr watched for the station's lines.
func (f *Fleet) start(ctx context.Context, id int) (*member, error) {
	p := f.cfg.Proxy
	p.Fixture.State = filepath.Join(f.cfg.StateDir, fmt.Sprintf("member-%d.json", id))
	cmd := p.Command()
	cmd.Stderr = &lineWatch{member: id, events: f.events}
	s, err := mcptest.Start(ctx, cmd, nil)
	if err != nil {
		return nil, fmt.Errorf("proxy %d: %w", id, err)
	}
	return &member{id: id, cmd: cmd, sess: s}, nil
}

// live returns the members that were not killed.
func (f *Fleet) live() []*member {
	var ms []*member
	for _, m := range f.members {
		if !m.dead {
			ms = append(ms, m)
		}
	}
	return ms
}

// denyCall is a call the gate always denies (name.write_word).
func denyCall() *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "transfer",
		Arguments: map[string]any{"from_account": "acc_checking", "to_account": "acc_mallory", "amount_cents": 1}}
}

// receiptName finds the receipt a deny names (proxy/agent.go: "... (receipt NNNNNN.json)").
var receiptName = regexp.MustCompile(`\(receipt (\d{6,}\.json)\)`)

// Deny sends n denied calls, spread evenly over the live members, each
// member's client calling as fast as it is answered, all members at once.
// It returns the wall time from the first call to the last answer. Every
// answer must be a deny naming a receipt.
func (f *Fleet) Deny(ctx context.Context, n int) (time.Duration, error) {
	ms := f.live()
	if len(ms) == 0 {
		return 0, errors.New("fleet: no live proxy to deny through")
	}
	names := make([][]string, len(ms))
	errs := make([]error, len(ms))
	begin := make(chan struct{})
	var wg sync.WaitGroup
	for i, m := range ms {
		calls := n / len(ms)
		if i < n%len(ms) {
			calls++
		}
		wg.Go(func() {
			<-begin
			names[i], errs[i] = m.deny(ctx, calls)
		})
	}
	start := time.Now()
	close(begin)
	wg.Wait()
	wall := time.Since(start)
	for _, ns := range names {
		f.receipts = append(f.receipts, ns...)
	}
	return wall, errors.Join(errs...)
}

// deny makes n denied calls one after another and returns the receipt
// names they were answered with.
func (m *member) deny(ctx context.Context, n int) ([]string, error) {
	names := make([]string, 0, n)
	call := denyCall()
	for range n {
		_, err := m.sess.Client().CallTool(ctx, call)
		if err == nil {
			return names, fmt.Errorf("proxy %d: %s was answered, not denied", m.id, call.Name)
		}
		sub := receiptName.FindStringSubmatch(err.Error())
		if sub == nil {
			return names, fmt.Errorf("proxy %d: %s: %w; want a deny naming its receipt", m.id, call.Name, err)
		}
		names = append(names, sub[1])
	}
	return names, nil
}

// Close stops the live members at once, each by closing its stdin as an
// MCP client does, and waits for them to exit: the proxy holding the
// ledger ships what is left before it exits.
func (f *Fleet) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	ms := f.live()
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			if err := m.sess.Close(); err != nil {
				errs[i] = fmt.Errorf("proxy %d: %w", m.id, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// kill SIGKILLs m and waits until it has been reaped; it returns when the
// signal was sent.
func (m *member) kill(ctx context.Context) (time.Time, error) {
	at := time.Now()
	if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return at, fmt.Errorf("proxy %d: SIGKILL: %w", m.id, err)
	}
	m.dead = true
	if _, err := m.sess.Wait(ctx); err != nil {
		return at, err
	}
	m.sess.Close() // "signal: killed", as intended
	return at, nil
}
