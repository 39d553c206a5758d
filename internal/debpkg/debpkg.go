// Package debpkg makes the program of a Debian package available to
// tests, without installing the package: it downloads the package with
// apt and unpacks it into a cache of its own, once per machine, user and
// package version.
//
// # Why download and unpack
//
// apt-get install would run the package's maintainer scripts, which for a
// server such as prometheus create a system user and start a system
// service, and it needs root. Fetch instead runs
//
//	apt-get download PKG=VERSION
//	dpkg-deb -x PKG_VERSION_ARCH.deb DIR
//
// which runs nothing from the package, starts nothing, and needs no root
// when apt's package lists are present (apt verifies the download against
// them, and Fetch checks its SHA-256 again, see below). The program then
// runs from DIR, e.g. DIR/usr/bin/prometheus; the package's dependencies
// are not installed, so this suits programs that need no more than the
// C library, as Debian's Go programs do.
//
// # Version
//
// The package name is the pin: Fetch takes the version apt's candidate
// is, the one the machine's Debian release ships (for prometheus on
// Debian 12 "bookworm", 2.42.0+ds-5 with a binNMU or stable-update
// suffix). Program.Version records the version really used, as dpkg-deb
// -f reads it from the .deb, so that a test log or a report can print it.
//
// # Cache
//
// Fetch keeps what it unpacked in ROOT/PKG_VERSION_ARCH, ROOT by default
// os.UserCacheDir()/bankdoor/debs (created with mode 0700; one others may
// write to is refused), a ':' of an epoch written %3a as apt names its
// files. A tree that is there is used without further ado: the tree is
// renamed into place last, so it is complete whenever it exists. When it
// is missing, the rest runs under an exclusive lock on ROOT/.lock
// (package internal/flock), so that test binaries and goroutines fetching
// at once download once: the .deb is downloaded into a temporary
// directory under ROOT, its Package, Version and Architecture (dpkg-deb
// -f) and its SHA-256 are checked against apt's candidate, and it is
// unpacked there and renamed into place.
//
// # Package lists
//
// apt needs its package lists (apt-get update) to know a package. When it
// has none (apt-get indextargets lists no Packages file), or when the
// download fails (lists older than the mirror), Fetch runs apt-get update
// once and tries again if it runs as root; otherwise it fails, saying so.
// Nothing is ever installed, so the machine's set of installed packages
// is unchanged either way.
package debpkg

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bankdoor/bankdoor/internal/flock"
	"github.com/bankdoor/bankdoor/internal/privatedir"
)

// Program is a Debian package's program, ready to run.
type Program struct {
	// Path is the program's absolute path.
	Path string
	// Package is the Debian package it comes from; Version that
	// package's version, "" for a program on PATH that is not the file
	// of Package as dpkg installed it.
	Package, Version string
	// FromPATH says the program was found on PATH rather than fetched.
	FromPATH bool
}

// String describes p for a log: "prometheus 2.42.0+ds-5+b6 (/path)".
func (p Program) String() string {
	v := p.Version
	if v == "" {
		v = "(version unknown)"
	}
	from := p.Path
	if p.FromPATH {
		from = "on PATH: " + p.Path
	}
	return fmt.Sprintf("%s %s (%s)", p.Package, v, from)
}

// Fetcher fetches packages into a cache directory.
type Fetcher struct {
	// Root is the cache directory; "" is os.UserCacheDir()/bankdoor/debs.
	Root string
	// Apt holds options given to every apt-get and apt-cache command
	// before its operation, e.g. {"-o", "Dir::State::Lists=DIR"}.
	Apt []string
}

// Find returns the program file of package pkg (a slash-separated path
// inside the package, e.g. usr/bin/prometheus): the program of that
// file's name on PATH if there is one, else what a Fetcher with the
// default cache fetches.
func Find(ctx context.Context, pkg, file string) (Program, error) {
	if err := check(pkg, file); err != nil {
		return Program{}, err
	}
	if p, err := exec.LookPath(path.Base(file)); err == nil {
		if p, err = filepath.Abs(p); err != nil {
			return Program{}, err
		}
		return Program{Path: p, Package: pkg, Version: installedVersion(ctx, pkg, file, p), FromPATH: true}, nil
	}
	return (&Fetcher{}).Fetch(ctx, pkg, file)
}

// installedVersion returns the version of pkg that dpkg has installed if
// the program p is that package's file, /FILE; else "".
func installedVersion(ctx context.Context, pkg, file, p string) string {
	fp, err := os.Stat(p)
	if err != nil {
		return ""
	}
	if fi, err := os.Stat("/" + file); err != nil || !os.SameFile(fi, fp) {
		return ""
	}
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f", "${db:Status-Status} ${Version}", pkg).Output()
	if v, ok := strings.CutPrefix(string(out), "installed "); err == nil && ok {
		return v
	}
	return ""
}

// pkgName is a Debian package name (Debian Policy 5.6.1), which also
// keeps a name from reading as an option of apt-get.
var pkgName = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)

// check validates a package name and a program file path.
func check(pkg, file string) error {
	if !pkgName.MatchString(pkg) {
		return fmt.Errorf("%q is not a Debian package name", pkg)
	}
	if !filepath.IsLocal(filepath.FromSlash(file)) || path.Clean(file) != file {
		return fmt.Errorf("program %q: not a clean relative path inside a package, such as usr/bin/NAME", file)
	}
	return nil
}

// Fetch returns the program file of package pkg, unpacked into f's cache
// as the package doc says, downloading the package if the cache lacks
// apt's candidate version of it.
func (f *Fetcher) Fetch(ctx context.Context, pkg, file string) (Program, error) {
	if err := check(pkg, file); err != nil {
		return Program{}, err
	}
	root, err := f.root()
	if err != nil {
		return Program{}, err
	}
	if err := privatedir.Make(root); err != nil {
		return Program{}, err
	}
	// Without the lock first: a tree that is there is complete, and
	// callers that find it do not queue behind one another's apt-cache.
	var known *candidate
	switch c, err := f.candidate(ctx, pkg); {
	case errors.Is(err, errNoLists):
		// cured under the lock
	case err != nil:
		return Program{}, err
	default:
		dir := filepath.Join(root, c.dirName())
		if _, err := os.Lstat(dir); err == nil {
			return program(dir, c, file)
		}
		known = &c
	}
	lock, err := flock.Open(filepath.Join(root, ".lock"))
	if err != nil {
		return Program{}, err
	}
	defer lock.Close()
	if err := lock.Lock(); err != nil {
		return Program{}, err
	}
	dir, c, err := f.cached(ctx, root, pkg, known, false)
	if err != nil {
		return Program{}, err
	}
	return program(dir, c, file)
}

func (f *Fetcher) root() (string, error) {
	if f.Root != "" {
		return filepath.Abs(f.Root)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for Debian packages: %w", err)
	}
	return filepath.Join(cache, "bankdoor", "debs"), nil
}

// cached returns the directory of root that holds apt's candidate of
// pkg unpacked, downloading and unpacking it if needed; known, if not
// nil, is that candidate as apt-cache gave it already. updated says
// apt-get update has run already; if it has not, a failure that fresh
// package lists may cure runs it (as root) and tries once more.
func (f *Fetcher) cached(ctx context.Context, root, pkg string, known *candidate, updated bool) (string, candidate, error) {
	var c candidate
	var err error
	if known != nil {
		c = *known
	} else {
		c, err = f.candidate(ctx, pkg)
	}
	if errors.Is(err, errNoLists) && !updated {
		if err := f.update(ctx, err); err != nil {
			return "", candidate{}, err
		}
		return f.cached(ctx, root, pkg, nil, true)
	}
	if err != nil {
		return "", candidate{}, err
	}
	dir := filepath.Join(root, c.dirName())
	if _, err := os.Lstat(dir); err == nil {
		return dir, c, nil
	}
	err = f.unpack(ctx, root, dir, c)
	if errors.Is(err, errDownload) && !updated {
		if err := f.update(ctx, err); err != nil {
			return "", candidate{}, err
		}
		return f.cached(ctx, root, pkg, nil, true)
	}
	return dir, c, err
}

// program returns the Program of file in the tree dir.
func program(dir string, c candidate, file string) (Program, error) {
	p := filepath.Join(dir, filepath.FromSlash(file))
	fi, err := os.Lstat(p)
	if err != nil {
		return Program{}, fmt.Errorf("package %s %s has no program %s: %w", c.Package, c.Version, file, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return Program{}, fmt.Errorf("package %s %s: %s is %v, not an executable file", c.Package, c.Version, file, fi.Mode())
	}
	return Program{Path: p, Package: c.Package, Version: c.Version}, nil
}

var (
	// errNoLists: apt has no package lists.
	errNoLists = errors.New("apt has no package lists")
	// errDownload: apt-get download failed.
	errDownload = errors.New("apt-get download failed")
)

// update runs apt-get update if this process is root; cause is the
// failure that calls for it.
func (f *Fetcher) update(ctx context.Context, cause error) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w; apt-get update, which needs root, may cure it", cause)
	}
	if out, err := f.apt(ctx, "", "apt-get", "-q", "update"); err != nil {
		return fmt.Errorf("%w; then apt-get update failed: %v:\n%s", cause, err, out)
	}
	return nil
}

// apt runs apt-get or apt-cache with f.Apt and args in dir ("" is the
// current directory) and returns its combined output.
func (f *Fetcher) apt(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, append(append([]string(nil), f.Apt...), args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	return bytes.TrimSpace(out), err
}

// candidate is what apt knows of the version of a package it would
// install.
type candidate struct {
	Package, Version, Architecture, SHA256 string
}

// dirName is the name of the cache directory of c: PKG_VERSION_ARCH,
// with an epoch's ':' as %3a.
func (c candidate) dirName() string {
	return strings.ReplaceAll(c.Package+"_"+c.Version+"_"+c.Architecture, ":", "%3a")
}

// candidate asks apt-cache for pkg's candidate version. Its error wraps
// errNoLists when apt has no package lists at all.
func (f *Fetcher) candidate(ctx context.Context, pkg string) (candidate, error) {
	out, err := f.apt(ctx, "", "apt-cache", "show", "--no-all-versions", pkg)
	if exit := (*exec.ExitError)(nil); err != nil && !errors.As(err, &exit) {
		return candidate{}, fmt.Errorf("finding Debian package %s: %w (this needs Debian's apt)", pkg, err)
	}
	if err != nil {
		lists, lerr := f.apt(ctx, "", "apt-get", "indextargets", "--format", "$(FILENAME)", "Created-By: Packages")
		if lerr == nil && len(lists) == 0 {
			return candidate{}, fmt.Errorf("finding Debian package %s: %w", pkg, errNoLists)
		}
		return candidate{}, fmt.Errorf("apt knows no Debian package %s (apt-cache show: %v: %s)", pkg, err, out)
	}
	fields := control(out)
	c := candidate{fields["Package"], fields["Version"], fields["Architecture"], fields["SHA256"]}
	if c.Package != pkg || c.Version == "" || c.Architecture == "" || len(c.SHA256) != 64 {
		return candidate{}, fmt.Errorf("apt-cache show %s: no Package, Version, Architecture and SHA256 in:\n%s", pkg, out)
	}
	return c, nil
}

// control parses the fields of the first stanza of Debian control data,
// skipping continuation lines.
func control(b []byte) map[string]string {
	fields := map[string]string{}
	s := bufio.NewScanner(bytes.NewReader(b))
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		line := s.Text()
		if line == "" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t") {
			fields[k] = strings.TrimSpace(v)
		}
	}
	return fields
}

// unpack downloads c into a temporary directory of root, checks it, and
// unpacks it into dir. Its error wraps errDownload when apt-get download
// failed.
func (f *Fetcher) unpack(ctx context.Context, root, dir string, c candidate) error {
	tmp, err := os.MkdirTemp(root, ".fetch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if out, err := f.apt(ctx, tmp, "apt-get", "-q", "download", c.Package+"="+c.Version); err != nil {
		return fmt.Errorf("%w: %s %s: %v:\n%s", errDownload, c.Package, c.Version, err, out)
	}
	deb, err := onlyDeb(tmp)
	if err != nil {
		return err
	}
	if err := verify(ctx, deb, c); err != nil {
		return err
	}
	tree := filepath.Join(tmp, "tree")
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, tree).CombinedOutput(); err != nil {
		return fmt.Errorf("unpacking %s: dpkg-deb -x: %v:\n%s", deb, err, out)
	}
	return os.Rename(tree, dir)
}

// onlyDeb returns the one .deb file in dir.
func onlyDeb(dir string) (string, error) {
	debs, err := filepath.Glob(filepath.Join(dir, "*.deb"))
	if err != nil {
		return "", err
	}
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download left %d .deb files in %s, want 1", len(debs), dir)
	}
	return debs[0], nil
}

// verify checks that the file deb is the package c: its SHA-256, and the
// Package, Version and Architecture fields of its control file.
func verify(ctx context.Context, deb string, c candidate) error {
	file, err := os.Open(deb)
	if err != nil {
		return err
	}
	defer file.Close()
	h := sha256.New()
	if _, err := io.Copy(h, file); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != c.SHA256 {
		return fmt.Errorf("%s has SHA-256 %s, apt's package lists say %s", deb, got, c.SHA256)
	}
	out, err := exec.CommandContext(ctx, "dpkg-deb", "-f", deb).Output()
	if err != nil {
		return fmt.Errorf("reading the control file of %s: dpkg-deb -f: %w", deb, err)
	}
	fields := control(out)
	got := candidate{fields["Package"], fields["Version"], fields["Architecture"], c.SHA256}
	if got != c {
		return fmt.Errorf("%s is %s %s %s, want %s %s %s", deb, got.Package, got.Version, got.Architecture, c.Package, c.Version, c.Architecture)
	}
	return nil
}
