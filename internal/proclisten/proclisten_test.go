package proclisten

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// childEnv, when set, makes the test binary a child process for the tests
// below instead of running them: "listen" listens on one port of
// 127.0.0.1 picked by the kernel and answers each connection with its pid,
// "listen2" listens on two, "idle" listens on none, "exit" exits at once.
// Children other than "exit" run until their stdin closes.
const childEnv = "PROCLISTEN_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(child(role))
	}
	os.Exit(m.Run())
}

func child(role string) int {
	listeners := map[string]int{"listen": 1, "listen2": 2, "idle": 0, "exit": -1}[role]
	if listeners < 0 {
		return 3
	}
	for range listeners {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				fmt.Fprintf(c, "%d\n", os.Getpid())
				c.Close()
			}
		}()
	}
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// startChild runs the test binary as a child in role, stopped when t
// ends; exited is closed once it has exited.
func startChild(t *testing.T, role string) (pid int, exited <-chan struct{}) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("proclisten reads /proc: Linux only")
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+role)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		stdin.Close()
		<-done
	})
	return cmd.Process.Pid, done
}

// TestAddrFindsChildsPort: the address Addr finds is the child's own
// listener (it answers with the child's pid), not one of the other
// listening sockets of the machine, such as the test's own.
func TestAddrFindsChildsPort(t *testing.T) {
	t.Parallel()
	own, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	pid, exited := startChild(t, "listen")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	addr, err := Addr(ctx, pid, exited)
	if err != nil {
		t.Fatal(err)
	}
	if addr.String() == own.Addr().String() || addr.Addr() != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("Addr = %v, want a 127.0.0.1 port other than the test's own %v", addr, own.Addr())
	}
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatalf("dialing the found address %v: %v", addr, err)
	}
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(line); got != strconv.Itoa(pid) {
		t.Errorf("%v answered pid %q, want the child's %d", addr, got, pid)
	}
}

// TestAddrChildExits: a process that exits without listening is reported
// when it exits, not when ctx ends.
func TestAddrChildExits(t *testing.T) {
	t.Parallel()
	pid, exited := startChild(t, "exit")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := Addr(ctx, pid, exited)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "exited") {
		t.Errorf("Addr of a process that exits = %v, want an error saying it exited", err)
	}
}

// TestAddrNotListening: a process that never listens is reported when
// ctx ends.
func TestAddrNotListening(t *testing.T) {
	t.Parallel()
	pid, exited := startChild(t, "idle")
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := Addr(ctx, pid, exited); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Addr of a process that does not listen = %v, want context.DeadlineExceeded", err)
	}
}

// TestAddrTwoListeners: a process with two listening sockets is refused,
// both named.
func TestAddrTwoListeners(t *testing.T) {
	t.Parallel()
	pid, exited := startChild(t, "listen2")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// The child opens its two listeners one after the other, so Addr may
	// see the first alone; wait until listening sees both.
	for {
		addrs, err := listening(pid)
		if err != nil {
			t.Fatal(err)
		}
		if len(addrs) == 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the child listens on %v, want two sockets", addrs)
		case <-time.After(pollInterval):
		}
	}
	_, err := Addr(ctx, pid, exited)
	if err == nil || !strings.Contains(err.Error(), "2 TCP sockets") {
		t.Errorf("Addr of a process with two listeners = %v, want an error naming both", err)
	}
}

// TestListenEntries reads a table in the format of /proc/net/tcp6 and
// tcp (from a little-endian machine), with entries of other processes and
// other states among the ones wanted.
func TestListenEntries(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the table below is a little-endian machine's")
	}
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:A1B2 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 222 1 0000000000000000 100 0 0 10 0
   2: 0100007F:A1B2 0100007F:C3D4 01 00000000:00000000 00:00000000 00000000     0        0 333 1 0000000000000000 20 4 30 10 -1
   3: 00000000000000000000000001000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 444 1 0000000000000000 100 0 0 10 0
   4: 0000000000000000FFFF00000100007F:0051 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 555 1 0000000000000000 100 0 0 10 0
`
	got, err := listenEntries([]byte(table), map[string]bool{"111": true, "333": true, "444": true, "555": true})
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.AddrPort{
		netip.MustParseAddrPort("127.0.0.1:41394"),
		netip.MustParseAddrPort("[::1]:80"),
		netip.MustParseAddrPort("127.0.0.1:81"),
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
		t.Errorf("listenEntries (-want +got):\n%s", diff)
	}
	if _, err := listenEntries([]byte("heading\n 0: 0100007F:XYZ 00000000:0000 0A\n"), nil); err == nil {
		t.Error("listenEntries accepted a short entry")
	}
	if _, err := listenEntries([]byte("heading\n 0: 0100007F:XYZ 00000000:0000 0A 0:0 0:0 0 0 0 111\n"), map[string]bool{"111": true}); err == nil {
		t.Error("listenEntries accepted a malformed port")
	}
}

// TestStart: Start returns a listening child with its address (it
// answers with its pid), and Stop ends it; a child that exits without
// listening, or a program that cannot start, is an error, and Start
// leaves no process behind.
func TestStart(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("proclisten reads /proc: Linux only")
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=listen")
	stdin, err := cmd.StdinPipe() // open while the child runs: it exits at EOF
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	c, err := Start(cmd, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", c.Addr.String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(conn)
	conn.Close()
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(c.PID()) {
		t.Errorf("the address answered %q (%v), want the child's pid %d", b, err, c.PID())
	}
	c.Stop()
	if err := cmd.Process.Signal(syscall.Signal(0)); err == nil {
		t.Errorf("the child still runs after Stop")
	}

	cmd = exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=exit")
	if _, err := Start(cmd, 20*time.Second); err == nil || !strings.Contains(err.Error(), "exited without listening") {
		t.Errorf("a child that exits: %v, want an error saying it exited without listening", err)
	}
	if _, err := Start(exec.Command(filepath.Join(t.TempDir(), "missing")), time.Second); err == nil {
		t.Error("a missing program: no error")
	}
}
