package proclisten

import (
	"context"
	"net/netip"
	"os/exec"
	"time"
)

// Child is a started process that listens on one TCP socket.
type Child struct {
	Cmd    *exec.Cmd
	Addr   netip.AddrPort // the socket's address, as Addr finds it
	exited chan struct{}  // closed once Cmd has exited
}

// Start starts cmd and waits, at most timeout, until it listens on one
// TCP socket (see Addr). If it does not, the process is killed and waited
// for, and the error says why; an error of cmd.Start is returned as it is.
func Start(cmd *exec.Cmd, timeout time.Duration) (*Child, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Child{Cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(c.exited)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	addr, err := Addr(ctx, cmd.Process.Pid, c.exited)
	if err != nil {
		c.Stop()
		return nil, err
	}
	c.Addr = addr
	return c, nil
}

// Stop kills the process and waits for it to exit.
func (c *Child) Stop() {
	_ = c.Cmd.Process.Kill()
	<-c.exited
}

// Exited is closed once the process has exited.
func (c *Child) Exited() <-chan struct{} { return c.exited }

// PID is the process's id.
func (c *Child) PID() int { return c.Cmd.Process.Pid }
