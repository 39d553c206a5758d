package policy

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// repeatTo repeats format (with the index) until the text is about n bytes.
func repeatTo(n int, format string) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, format, i)
	}
	return b.String()
}

// load parses, canonicalizes and lints in, as Load and lint do, and
// returns the CPU time the process spent on it: unlike the time on the
// clock, it does not grow when other programs load the machine.
func load(in string) time.Duration {
	start := cpuTime()
	if p, err := Parse("t.yaml", []byte(in)); err == nil {
		canonical(p)
		Lint(p)
	}
	return cpuTime() - start
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fastest returns the shortest of k timings of load(in), so that a pause
// of the process does not count as the parser's time.
func fastest(k int, in string) time.Duration {
	best := load(in)
	for range k - 1 {
		best = min(best, load(in))
	}
	return best
}

// TestLargeInputs checks that loading a policy takes time linear in its
// size. Finding node positions once took time quadratic in a line's
// length (minutes for one long flow list near MaxSize). Each input is
// loaded at two sizes sixteen times apart: a linear step takes about
// sixteen times as long on the larger one (up to about 40 times measured
// with the garbage collector and caches), a quadratic step 256 times.
// The bound (64) leaves room for a loaded machine and -race, and the
// larger size is timed again (the fastest run counts) before the test
// fails, so only a step that is slow every time fails it. Times are the
// process's CPU time, so other programs on the machine do not skew them. Sizes well
// below MaxSize keep the test short; the quadratic step this guards
// against already took a minute at MaxSize/8 under -race.
func TestLargeInputs(t *testing.T) {
	const small, large, bound = MaxSize / 128, MaxSize / 8, 64
	for name, gen := range map[string]func(n int) string{
		"long flow line":      func(n int) string { return valid + "x: [" + strings.Repeat("a,", n/2) + "a]\n" },
		"long non-ASCII line": func(n int) string { return valid + "x: [" + strings.Repeat("é,", n/3) + "a]\n" },
		"long enum":           func(n int) string { return argDoc("type: string\nenum: [" + repeatTo(n, `"v%d", `) + "x]") },
		"long never_allow":    func(n int) string { return valid + "never_allow: [" + repeatTo(n, "w%d, ") + "x]\n" },
		"many args": func(n int) string {
			return toolDoc("args:\n" + repeatTo(n*4/5, "  a%d: {type: string, pattern: \"[a-z]{1,3}\", enum: [abc]}\n"))
		},
		"many tools": func(n int) string {
			return header + repeatTo(n, "      t%d: {args: {a: {type: integer, min: 1, max: 2}}}\n")
		},
	} {
		s, l := gen(small), gen(large)
		if len(l) > MaxSize {
			t.Fatalf("%s: test input is %d bytes, over MaxSize", name, len(l))
		}
		ds := fastest(5, s)
		dl := load(l)
		for try := 0; try < 2 && dl > bound*ds; try++ {
			dl = min(dl, load(l))
		}
		if dl > bound*ds {
			t.Errorf("%s: %v for %d bytes, %v for %d bytes: %.0f times as long for %.0f times the size",
				name, ds, len(s), dl, len(l), float64(dl)/float64(ds), float64(len(l))/float64(len(s)))
		}
	}
	for name, in := range map[string]string{
		"deep flow nesting":    valid + "x: " + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + "\n",
		"deep mapping nesting": valid + "x: " + strings.Repeat("{a: ", 9000) + strings.Repeat("}", 9000) + "\n",
	} {
		if d := load(in); d > 30*time.Second {
			t.Errorf("%s: %v for %d bytes", name, d, len(in))
		}
	}
}
