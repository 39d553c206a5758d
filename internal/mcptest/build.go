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
// binaries. When the calling test binary runs with the race detector, the
// programs are built with -race too, so that races in the proxy fail the
// end-to-end tests.
func Build(ctx context.Context, dir string) (bankdoor, bankServer string, err error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", "", err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	// One go build for both: -o with a directory names each binary after
	// its package directory.
	if err := goBuild(ctx, root, dir+string(filepath.Separator), "./cmd/bankdoor", "./fixtures/bank-server"); err != nil {
		return "", "", err
	}
	return filepath.Join(dir, "bankdoor"), filepath.Join(dir, "bank-server"), nil
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

func goBuild(ctx context.Context, root, out string, pkgs ...string) error {
	args := []string{"build"}
	if raceEnabled {
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
// current directory into dir and returns the binary's path (with -race
// when the caller runs with the race detector, as Build).
func BuildFixture(ctx context.Context, dir string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	bin, err := filepath.Abs(filepath.Join(dir, "bank-server"))
	if err != nil {
		return "", err
	}
	return bin, goBuild(ctx, root, bin, "./fixtures/bank-server")
}

// BuildBankdoor builds ./cmd/bankdoor of the module that holds the current
// directory into dir and returns the binary's path (with -race when the
// caller runs with the race detector, as Build).
func BuildBankdoor(ctx context.Context, dir string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	bin, err := filepath.Abs(filepath.Join(dir, "bankdoor"))
	if err != nil {
		return "", err
	}
	return bin, goBuild(ctx, root, bin, "./cmd/bankdoor")
}

// ModuleRoot returns the directory of the go.mod of the current directory.
func ModuleRoot(ctx context.Context) (string, error) { return moduleRoot(ctx) }
