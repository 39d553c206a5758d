package debpkg_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/debpkg"
	"github.com/bankdoor/bankdoor/internal/flock"
)

// TestRefused: names that are not a Debian package or not a path inside
// one are refused before apt runs, and a package apt does not know is an
// error that says so.
func TestRefused(t *testing.T) {
	t.Parallel()
	f := &debpkg.Fetcher{Root: t.TempDir()}
	for _, tc := range []struct{ pkg, file, want string }{
		{"", "usr/bin/p", "not a Debian package name"},
		{"p", "usr/bin/p", "not a Debian package name"},
		{"Prometheus", "usr/bin/p", "not a Debian package name"},
		{"-oDebug::pkgAcquire=1", "usr/bin/p", "not a Debian package name"},
		{"prometheus=2.42", "usr/bin/p", "not a Debian package name"},
		{"prometheus", "", "not a clean relative path"},
		{"prometheus", "/usr/bin/prometheus", "not a clean relative path"},
		{"prometheus", "../bin/prometheus", "not a clean relative path"},
		{"prometheus", "usr//bin/prometheus", "not a clean relative path"},
		{"prometheus", "usr/bin/../../x", "not a clean relative path"},
		{"bankdoor-no-such-package", "usr/bin/x", "apt knows no Debian package bankdoor-no-such-package"},
	} {
		p, err := f.Fetch(context.Background(), tc.pkg, tc.file)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Fetch(%q, %q) = %v, %v; want an error saying %q", tc.pkg, tc.file, p, err, tc.want)
		}
	}
	if _, err := debpkg.Find(context.Background(), "x", "usr/bin/x"); err == nil {
		t.Error("Find accepted the package name x")
	}
}

// TestRootNotPrivate: a cache directory others may write to is refused.
func TestRootNotPrivate(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := (&debpkg.Fetcher{Root: root}).Fetch(context.Background(), "hello", "usr/bin/hello")
	if err == nil || !strings.Contains(err.Error(), "only its owner may write to") {
		t.Errorf("Fetch into a world-writable root = %v", err)
	}
}

// TestFindOnPATH: a program of the file's name on PATH is used as it is,
// with the version dpkg installed if it is the package's file; without
// apt on PATH, Fetch fails saying it needs apt.
func TestFindOnPATH(t *testing.T) {
	want, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", "coreutils").Output()
	if err != nil {
		t.Fatalf("dpkg-query coreutils: %v", err)
	}
	ls, err := debpkg.Find(context.Background(), "coreutils", "usr/bin/ls")
	if err != nil || !ls.FromPATH || ls.Version != string(want) {
		t.Errorf("Find(coreutils, usr/bin/ls) = %+v, %v; want ls on PATH at version %s", ls, err, want)
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bankdoor-debpkg-probe"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	p, err := debpkg.Find(context.Background(), "bankdoor-debpkg-probe", "usr/bin/bankdoor-debpkg-probe")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "bankdoor-debpkg-probe"); p.Path != want || !p.FromPATH || p.Version != "" {
		t.Errorf("Find = %+v, want %s from PATH, version unknown", p, want)
	}
	_, err = (&debpkg.Fetcher{Root: t.TempDir()}).Fetch(context.Background(), "hello", "usr/bin/hello")
	if err == nil || !strings.Contains(err.Error(), "needs Debian's apt") {
		t.Errorf("Fetch with no apt-cache on PATH = %v, want an error saying it needs apt", err)
	}
}

// TestFetchPrometheus downloads and unpacks Debian's prometheus into an
// empty cache from four goroutines at once, which must all get the one
// tree, then again from a warm cache, which takes no lock; the program
// runs and says the package's upstream version. It needs Debian's
// package mirror: where it is unreachable the test fails, saying so.
func TestFetchPrometheus(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f := &debpkg.Fetcher{Root: t.TempDir()}
	start := time.Now()
	progs := make([]debpkg.Program, 4)
	errs := make([]error, len(progs))
	var wg sync.WaitGroup
	for i := range progs {
		wg.Go(func() { progs[i], errs[i] = f.Fetch(ctx, "prometheus", "usr/bin/prometheus") })
	}
	wg.Wait()
	cold := time.Since(start)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("fetching Debian's prometheus (goroutine %d): %v", i, err)
		}
		if progs[i] != progs[0] {
			t.Errorf("goroutine %d got %+v, goroutine 0 %+v", i, progs[i], progs[0])
		}
	}
	p := progs[0]
	t.Logf("cold: %v for %s", cold, p)
	fi, err := os.Stat(filepath.Dir(p.Path))
	if err != nil {
		t.Fatal(err)
	}

	// A warm Fetch takes no lock: it returns while another holds it.
	held, err := flock.TryLock(filepath.Join(f.Root, ".lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	start = time.Now()
	type result struct {
		p   debpkg.Program
		err error
	}
	done := make(chan result, 1)
	go func() {
		p, err := f.Fetch(ctx, "prometheus", "usr/bin/prometheus")
		done <- result{p, err}
	}()
	var warm debpkg.Program
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		warm = r.p
	case <-time.After(time.Minute):
		held.Close()
		t.Fatalf("a warm Fetch waited a minute for the cache's lock; then: %+v", <-done)
	}
	t.Logf("warm: %v", time.Since(start))
	if warm != p {
		t.Errorf("warm Fetch = %+v, cold %+v", warm, p)
	}
	if fi2, err := os.Stat(filepath.Dir(p.Path)); err != nil || !os.SameFile(fi, fi2) {
		t.Errorf("warm Fetch replaced the unpacked tree (%v)", err)
	}
	entries, err := os.ReadDir(f.Root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 2 || names[0] != ".lock" || !strings.HasPrefix(names[1], "prometheus_"+p.Version+"_") {
		t.Errorf("cache holds %v, want .lock and prometheus_%s_ARCH only", names, p.Version)
	}

	out, err := exec.CommandContext(ctx, p.Path, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v:\n%s", p.Path, err, out)
	}
	upstream, _, _ := strings.Cut(p.Version, "+")
	if !strings.Contains(string(out), "prometheus, version "+upstream) {
		t.Errorf("%s --version says\n%s\nwant version %s", p.Path, out, upstream)
	}
}

// TestFetchUpdatesLists: with apt pointed at an empty package-lists
// directory, Fetch (as root) runs apt-get update, into that directory,
// and then fetches the package (GNU hello, small). As another user it
// fails, naming apt-get update.
func TestFetchUpdatesLists(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lists, cache := t.TempDir(), t.TempDir()
	f := &debpkg.Fetcher{Root: t.TempDir(), Apt: []string{"-o", "Dir::State::Lists=" + lists, "-o", "Dir::Cache=" + cache}}
	p, err := f.Fetch(ctx, "hello", "usr/bin/hello")
	if os.Geteuid() != 0 {
		if err == nil || !strings.Contains(err.Error(), "apt-get update") {
			t.Fatalf("Fetch as uid %d without package lists = %+v, %v; want an error naming apt-get update", os.Geteuid(), p, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("fetching Debian's hello with no package lists (apt-get update needs Debian's mirror): %v", err)
	}
	if got, err := filepath.Glob(filepath.Join(lists, "*_Packages*")); err != nil || len(got) == 0 {
		t.Errorf("no Packages index in %s after Fetch: %v", lists, err)
	}
	out, err := exec.CommandContext(ctx, p.Path).Output()
	if err != nil || string(out) != "Hello, world!\n" {
		t.Errorf("%s printed %q, %v", p, out, err)
	}
}
