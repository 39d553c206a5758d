// Package npmproject installs a pinned npm project (a package.json and the
// package-lock.json committed beside it, embedded in a Go package) into a
// private directory under os.TempDir(), once per machine and user, so that
// tests can run real third-party Node.js programs at the versions the lock
// pins.
//
// # Install
//
// [Project.Install] copies the project's files into
// TMP/bankdoor-NAME-UID/HASH (HASH: of the files' names and contents, so a
// changed lock gets a directory of its own) and runs there
//
//	npm ci --ignore-scripts --prefer-offline --no-audit --no-fund --cache TMP/bankdoor-NAME-UID/npm-cache
//
// which installs exactly what the lock says, checking each tarball's
// integrity, and runs no package's install scripts. The npm cache is that
// fixed directory, not the user's, so the install works with an empty
// HOME; it needs the npm registry once, and no network afterwards. An
// exclusive lock on TMP/bankdoor-NAME-UID/.lock (package internal/flock)
// is held throughout, so test binaries installing at once run npm once; a
// file named "installed" is written last, and an install without it is
// done again from the start.
//
// Regenerate a lock, after changing its package.json, with
//
//	npm install --package-lock-only --ignore-scripts
//
// run in the directory that holds it.
package npmproject

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bankdoor/bankdoor/internal/atomicfile"
	"github.com/bankdoor/bankdoor/internal/flock"
	"github.com/bankdoor/bankdoor/internal/privatedir"
)

// File is one file of a project: Name in the install directory, read
// from Src in the project's FS.
type File struct {
	Name, Src string
}

// Project is an npm project to install.
type Project struct {
	// Name names the install root, TMP/bankdoor-NAME-UID.
	Name string
	// FS holds the files; Files lists them, package.json and
	// package-lock.json among them, in the order they are hashed.
	FS    fs.FS
	Files []File
	// Package and Version: after npm ci, node_modules must hold Package
	// at Version.
	Package, Version string
	// MinNode is the oldest node major version the node on PATH may be;
	// 0 checks nothing (the project brings its own node).
	MinNode int
}

// Install installs p under os.TempDir() (see the package doc) and returns
// the install directory, which holds node_modules.
func (p *Project) Install(ctx context.Context) (string, error) {
	return p.InstallIn(ctx, filepath.Join(os.TempDir(), "bankdoor-"+p.Name+"-"+strconv.Itoa(os.Getuid())))
}

// InstallIn is Install with root in place of TMP/bankdoor-NAME-UID. It
// creates root (mode 0700) if needed and refuses one that others may
// write to.
func (p *Project) InstallIn(ctx context.Context, root string) (string, error) {
	if err := privatedir.Make(root); err != nil {
		return "", err
	}
	lock, err := flock.Open(filepath.Join(root, ".lock"))
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := lock.Lock(); err != nil {
		return "", err
	}
	key, err := p.Key()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, key)
	if b, err := os.ReadFile(filepath.Join(dir, "installed")); err == nil && string(b) == key {
		return dir, nil
	}
	if err := p.checkNode(ctx); err != nil {
		return "", err
	}
	if err := p.install(ctx, dir, filepath.Join(root, "npm-cache")); err != nil {
		return "", err
	}
	return dir, atomicfile.Write(filepath.Join(dir, "installed"), []byte(key), 0o600)
}

// Key is the hex SHA-256 of the project files, names and contents,
// shortened to 16 characters.
func (p *Project) Key() (string, error) {
	h := sha256.New()
	for _, f := range p.Files {
		b, err := fs.ReadFile(p.FS, f.Src)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f.Name, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// checkNode checks that node is on PATH and at least p.MinNode.
func (p *Project) checkNode(ctx context.Context) error {
	if p.MinNode == 0 {
		return nil
	}
	out, err := exec.CommandContext(ctx, "node", "--version").Output()
	if err != nil {
		return fmt.Errorf("running node --version: %w (%s %s needs Node.js %d or later on PATH)", err, p.Package, p.Version, p.MinNode)
	}
	v := strings.TrimSpace(string(out))
	if n, err := NodeMajor(v); err != nil || n < p.MinNode {
		return fmt.Errorf("node is %s; %s %s and its locked dependencies need Node.js %d or later", v, p.Package, p.Version, p.MinNode)
	}
	return nil
}

// NodeMajor returns the major version of what node --version prints
// (v24.1.0 -> 24).
func NodeMajor(v string) (int, error) {
	major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(v), "v"), ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0, fmt.Errorf("node version %q: not vMAJOR.MINOR.PATCH", v)
	}
	return n, nil
}

// install writes the project files into dir, emptied first, and runs npm
// ci there with cache as its cache.
func (p *Project) install(ctx context.Context, dir, cache string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, f := range p.Files {
		b, err := fs.ReadFile(p.FS, f.Src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name), b, 0o600); err != nil {
			return err
		}
	}
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--prefer-offline",
		"--no-audit", "--no-fund", "--no-update-notifier", "--cache", cache)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("installing %s %s with npm ci in %s: %w; the npm registry (npm config get registry) must be reachable for a first install:\n%s",
			p.Package, p.Version, dir, err, bytes.TrimSpace(out))
	}
	return CheckVersion(dir, p.Package, p.Version)
}

// CheckVersion checks that dir/node_modules holds pkg at version.
func CheckVersion(dir, pkg, version string) error {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json"))
	if err != nil {
		return err
	}
	var got struct{ Name, Version string }
	if err := json.Unmarshal(b, &got); err != nil {
		return err
	}
	if got.Name != pkg || got.Version != version {
		return fmt.Errorf("npm ci installed %s %s, want %s %s", got.Name, got.Version, pkg, version)
	}
	return nil
}
