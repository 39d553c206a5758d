package mcptest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build builds ./cmd/bankdoor and ./fixtures/bank-server of the module that
// holds the current directory into dir, and returns the paths of the two
// binaries. When the calling test binary runs with the race detector,
// bankdoor is built with -race too, so that races in the proxy fail the
// end-to-end tests. The fixture never is: it is the bank the tests talk
// to, not what they test (its own tests run it with -race), and a race
// binary costs every one of its many starts a tenth of a second of CPU.
func Build(ctx context.Context, dir string) (bankdoor, bankServer string, err error) {
	if bankdoor, err = BuildBankdoor(ctx, dir); err != nil {
		return "", "", err
	}
	if bankServer, err = BuildFixture(ctx, dir); err != nil {
		return "", "", err
	}
	return bankdoor, bankServer, nil
}

// moduleRoot returns the directory of the go.mod of the current directory.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: the current directory is not inside a Go module; run from the bankdoor module")
	}
	return filepath.Dir(gomod), nil
}

// goBuild runs go build -o out pkgs... in root, with -race if race is
// set.
func goBuild(ctx context.Context, race bool, root, out string, pkgs ...string) error {
	args := []string{"build"}
	if race {
		args = append(args, "-race")
	}
	args = append(append(args, "-o", out), pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), root, err, stderr.Bytes())
	}
	return nil
}

// BuildFixture builds ./fixtures/bank-server of the module that holds the
// current directory into dir and returns the binary's path (never with
// -race, see Build).
func BuildFixture(ctx context.Context, dir string) (string, error) {
	return buildOne(ctx, false, dir, "bank-server", "./fixtures/bank-server")
}

// BuildBankdoor builds ./cmd/bankdoor of the module that holds the current
// directory into dir and returns the binary's path (with -race when the
// caller runs with the race detector, as Build).
func BuildBankdoor(ctx context.Context, dir string) (string, error) {
	return buildOne(ctx, raceEnabled, dir, "bankdoor", "./cmd/bankdoor")
}

// buildOne builds the package pkg of the current module into dir/name.
func buildOne(ctx context.Context, race bool, dir, name, pkg string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	bin, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		return "", err
	}
	return bin, goBuild(ctx, race, root, bin, pkg)
}

// ModuleRoot returns the directory of the go.mod of the current directory.
func ModuleRoot(ctx context.Context) (string, error) { return moduleRoot(ctx) }
