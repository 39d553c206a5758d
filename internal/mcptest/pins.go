package mcptest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// LivePins runs `bankdoor pin --hashes -- FIXTURE` and returns the pins it
// prints, tool name -> schema_sha256.
func LivePins(ctx context.Context, bankdoor string, f Fixture) (map[string]string, error) {
	cmd := exec.CommandContext(ctx, bankdoor, "pin", "--hashes", "--", f.Bin)
	cmd.Env = Env(f.Environ()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("bankdoor pin --hashes -- %s: %w\n%s", f.Bin, err, stderr.Bytes())
	}
	pins := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		sum, name, ok := strings.Cut(line, " ")
		if !ok || len(sum) != 64 || name == "" {
			return nil, fmt.Errorf("bankdoor pin printed %q, want lines of SHA256 NAME", line)
		}
		pins[name] = sum
	}
	return pins, nil
}
