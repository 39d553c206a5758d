// Package proclisten finds the TCP address a child process listens on, so
// that a parent can start a program on port 0 (let the kernel pick a free
// port) and then learn which port it got, even when the program has no way
// to report it. Picking a free port in the parent, closing it and handing
// it to the child would race with every other process on the machine.
//
// It works on Linux only: it reads the process's descriptors from
// /proc/PID/fd, where a socket reads as "socket:[INODE]", and the sockets
// of its network namespace from /proc/PID/net/tcp and /proc/PID/net/tcp6
// (proc_net_tcp(5)), and keeps the LISTEN entries whose inode is one of the
// process's. On other systems Addr returns an error wrapping
// errors.ErrUnsupported. Start runs a program and waits for its port
// that way; it is how the tests and the report start the witness, the
// Tessera log and bankdoor's own ledger server.
package proclisten

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// pollInterval is how often Addr looks at /proc again.
const pollInterval = 10 * time.Millisecond

// Addr waits until the process pid listens on exactly one TCP socket and
// returns that socket's local address, as bound (so 0.0.0.0 or :: when the
// process listens on every address). It fails when ctx ends first, when
// exited is closed first (the caller closes it when the process has
// exited; nil means never), when the process listens on more than one
// TCP socket, or when /proc cannot be read for a reason other than the
// process being gone.
func Addr(ctx context.Context, pid int, exited <-chan struct{}) (netip.AddrPort, error) {
	if runtime.GOOS != "linux" {
		return netip.AddrPort{}, fmt.Errorf("finding the port of process %d: reading /proc on %s: %w", pid, runtime.GOOS, errors.ErrUnsupported)
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		addrs, err := listening(pid)
		switch {
		case errors.Is(err, os.ErrNotExist):
			// The process is gone, or going: exited says so, or ctx ends.
		case err != nil:
			return netip.AddrPort{}, err
		case len(addrs) == 1:
			return addrs[0], nil
		case len(addrs) > 1:
			return netip.AddrPort{}, fmt.Errorf("process %d listens on %d TCP sockets %v, want one", pid, len(addrs), addrs)
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return netip.AddrPort{}, fmt.Errorf("process %d did not listen on a TCP socket: %w (and %w)", pid, context.Cause(ctx), err)
			}
			return netip.AddrPort{}, fmt.Errorf("process %d did not listen on a TCP socket: %w", pid, context.Cause(ctx))
		case <-exited:
			return netip.AddrPort{}, fmt.Errorf("process %d exited without listening on a TCP socket", pid)
		case <-tick.C:
		}
	}
}

// listening returns the addresses of the TCP sockets in state LISTEN that
// the process pid holds a descriptor of.
func listening(pid int) ([]netip.AddrPort, error) {
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	inodes, err := socketInodes(filepath.Join(proc, "fd"))
	if err != nil {
		return nil, err
	}
	var addrs []netip.AddrPort
	for _, name := range []string{"tcp", "tcp6"} {
		table, err := os.ReadFile(filepath.Join(proc, "net", name))
		if errors.Is(err, os.ErrNotExist) && name == "tcp6" {
			continue // a kernel without IPv6
		}
		if err != nil {
			return nil, err
		}
		found, err := listenEntries(table, inodes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(proc, "net", name), err)
		}
		addrs = append(addrs, found...)
	}
	return addrs, nil
}

// socketInodes returns the inodes of the sockets among the descriptors
// in fdDir (a /proc/PID/fd directory).
func socketInodes(fdDir string) (map[string]bool, error) {
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		return nil, err
	}
	inodes := make(map[string]bool)
	for _, e := range entries {
		link, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err != nil {
			continue // closed since ReadDir
		}
		if inode, ok := strings.CutPrefix(link, "socket:["); ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	return inodes, nil
}

// tcpListen is the state column's value for LISTEN (TCP_LISTEN in the
// kernel's include/net/tcp_states.h).
const tcpListen = "0A"

// listenEntries returns the local addresses of the LISTEN entries of
// table (the text of /proc/PID/net/tcp or tcp6) whose inode is in inodes.
// Each entry after the heading line reads
//
//	SL: LOCAL_ADDRESS:PORT REMOTE_ADDRESS:PORT ST TX:RX TR:WHEN RETR UID TIMEOUT INODE ...
//
// with the address in hex as the kernel holds it in memory: 32-bit words
// in host byte order (so 0100007F is 127.0.0.1 on a little-endian
// machine), the port a plain hex number.
func listenEntries(table []byte, inodes map[string]bool) ([]netip.AddrPort, error) {
	var addrs []netip.AddrPort
	lines := bufio.NewScanner(bytes.NewReader(table))
	lines.Scan() // the heading
	for lines.Scan() {
		f := strings.Fields(lines.Text())
		if len(f) < 10 {
			return nil, fmt.Errorf("entry %q has %d fields, want at least 10", lines.Text(), len(f))
		}
		if f[3] != tcpListen || !inodes[f[9]] {
			continue
		}
		a, err := parseAddrPort(f[1])
		if err != nil {
			return nil, err
		}
		addrs = append(addrs, a)
	}
	return addrs, lines.Err()
}

// parseAddrPort parses a local_address column, ADDRESS:PORT in hex.
func parseAddrPort(s string) (netip.AddrPort, error) {
	hexAddr, hexPort, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(hexAddr)
	if !ok || err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("malformed address %q", s)
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("malformed port in %q", s)
	}
	// raw holds each 32-bit word as printed, most significant byte first;
	// the address's bytes are each word's bytes in host order.
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}
