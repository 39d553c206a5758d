package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestUsage runs the command in process on arguments that must fail, or
// print the usage, before anything is built or written.
func TestUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	out, work := filepath.Join(dir, "out"), filepath.Join(dir, "work")
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stderr []string // regexps, each matching a line
	}{
		{"quick and full", []string{"--quick", "--full"}, exitUsage,
			[]string{`^bankdoor-report: error: --quick and --full exclude each other$`, `^usage: bankdoor-report `}},
		{"argument", []string{"extra"}, exitUsage,
			[]string{`^bankdoor-report: error: unexpected argument "extra"$`, `^usage: bankdoor-report `}},
		{"unknown flag", []string{"--polcy", "x.yaml"}, exitUsage,
			[]string{`^bankdoor-report: error: flag provided but not defined: -polcy$`, `^usage: bankdoor-report `}},
		// A missing policy is named, with the flag, before anything is
		// built (the binaries named here do not exist) or written.
		{"missing policy", []string{"--quick", "--bankdoor", "nobankdoor", "--fixture", "nofixture", "--policy", missing, "--out", out, "--work", work}, exitFailure,
			[]string{`^bankdoor-report: error: --policy: open ` + regexp.QuoteMeta(missing) + `: no such file or directory$`}},
		{"help", []string{"-h"}, exitOK,
			[]string{`^usage: bankdoor-report \[--quick\|--full\] \[--out DIR\]`, `^Exit status: 0 every claim held`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run(t.Context(), c.args, &stderr); code != c.code {
				t.Errorf("bankdoor-report %s: exit status %d, want %d", strings.Join(c.args, " "), code, c.code)
			}
			for _, re := range c.stderr {
				if !regexp.MustCompile("(?m)" + re).Match(stderr.Bytes()) {
					t.Errorf("stderr has no line matching %s:\n%s", re, stderr.Bytes())
				}
			}
			for _, p := range []string{out, work} {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("%s exists after a failed start (%v)", p, err)
				}
			}
		})
	}
}

// TestUsageNamesEveryFlag: the hand-written usage text lists each flag
// the command parses, and no other.
func TestUsageNamesEveryFlag(t *testing.T) {
	t.Parallel()
	var o options
	defined := map[string]bool{}
	flagSet(&o).VisitAll(func(f *flag.Flag) { defined[f.Name] = true })
	for name := range defined {
		if !regexp.MustCompile(`(?m)^    --` + name + `\b`).MatchString(usage) {
			t.Errorf("usage does not describe --%s", name)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^    --([a-z]+)`).FindAllStringSubmatch(usage, -1) {
		if !defined[m[1]] {
			t.Errorf("usage describes --%s, which is not a flag", m[1])
		}
	}
}
