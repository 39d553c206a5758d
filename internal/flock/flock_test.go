package flock_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/flock"
)

// TestTryLock: a held lock refuses TryLock from another open file, in
// this process and in another one, and is free again once closed.
func TestTryLock(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "lock")
	f, err := flock.TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	if g, err := flock.TryLock(path); !errors.Is(err, flock.ErrLocked) {
		g.Close()
		t.Fatalf("TryLock of a held lock = %v; want ErrLocked", err)
	}
	// Another process: flock(1) from util-linux, if installed.
	if flockCmd, err := exec.LookPath("flock"); err == nil {
		if err := exec.CommandContext(t.Context(), flockCmd, "--nonblock", path, "true").Run(); err == nil {
			t.Errorf("flock(1) took the lock this process holds")
		}
	}
	f.Close()
	g, err := flock.TryLock(path)
	if err != nil {
		t.Fatalf("TryLock after Close = %v", err)
	}
	g.Close()
}

// TestLockWaits: Lock waits for the holder to unlock, then holds the lock.
func TestLockWaits(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "lock")
	f, err := flock.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Lock(); err != nil {
		t.Fatal(err)
	}
	got := make(chan *flock.File)
	go func() {
		g, err := flock.Open(path)
		if err == nil {
			err = g.Lock()
		}
		if err != nil {
			t.Error(err)
		}
		got <- g
	}()
	// The waiter cannot have the lock while f holds it: TryLock still fails.
	if h, err := flock.TryLock(path); !errors.Is(err, flock.ErrLocked) {
		h.Close()
		t.Fatalf("TryLock while held = %v", err)
	}
	if err := f.Unlock(); err != nil {
		t.Fatal(err)
	}
	g := <-got
	if h, err := flock.TryLock(path); !errors.Is(err, flock.ErrLocked) {
		h.Close()
		t.Fatalf("TryLock while the waiter holds the lock = %v; want ErrLocked", err)
	}
	g.Close()
}

// TestOpenSymlink: a symbolic link at the lock's path is refused, and
// nothing is created where it points.
func TestOpenSymlink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	link := filepath.Join(dir, ".lock")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if f, err := flock.Open(link); err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symbolic link") {
		if f != nil {
			f.Close()
		}
		t.Errorf("Open of a symbolic link = %v; want an error naming %s as a symbolic link", err, link)
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a dangling link created its target (%v)", err)
	}
}

// TestLockWaitBounded: LockWait on a held lock fails once its wait is
// over, naming the file and the process holding it; after the holder
// lets go, LockWait takes the lock (the waiter that gave up does not keep
// it).
func TestLockWaitBounded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "lock")
	held, err := flock.TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		g, err := flock.LockWait(path, 50*time.Millisecond)
		if err == nil {
			g.Close()
		}
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("LockWait(50ms) of a held lock has not returned after a minute")
	}
	if !errors.Is(err, flock.ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("LockWait of a held lock = %v; want ErrLocked naming %s", err, path)
	}
	if runtime.GOOS == "linux" && !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("LockWait's error %q does not name the holder, pid %d", err, os.Getpid())
	}
	t.Log(err)
	held.Close()
	g, err := flock.LockWait(path, time.Minute)
	if err != nil {
		t.Fatalf("LockWait after the holder closed = %v", err)
	}
	if h, err := flock.TryLock(path); !errors.Is(err, flock.ErrLocked) {
		h.Close()
		t.Fatalf("TryLock while LockWait's File holds the lock = %v; want ErrLocked", err)
	}
	g.Close()
}
