package atomicfile_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bankdoor/bankdoor/internal/atomicfile"
)

// TestCreateOneWinner: of many goroutines creating one file at once,
// exactly one succeeds, the others get fs.ErrExist, and the file holds
// the winner's data. A check-then-rename would let several succeed, the
// last one's data replacing the others'.
func TestCreateOneWinner(t *testing.T) {
	t.Parallel()
	for round := range 20 {
		path := filepath.Join(t.TempDir(), "key")
		const n = 16
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = atomicfile.Create(path, fmt.Appendf(nil, "writer %d\n", i), 0o600)
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: writers %d and %d both created %s", round, winner, i, path)
			case err == nil:
				winner = i
			case !errors.Is(err, fs.ErrExist):
				t.Fatalf("round %d: writer %d: %v, want fs.ErrExist", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer created %s", round, path)
		}
		if b, _ := os.ReadFile(path); string(b) != fmt.Sprintf("writer %d\n", winner) {
			t.Fatalf("round %d: %s holds %q, want writer %d's data", round, path, b, winner)
		}
		checkOnly(t, filepath.Dir(path), "key")
	}
}

func TestWriteReplacesCreateDoesNot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := atomicfile.Create(path, []byte("one"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Create(path, []byte("two"), 0o640); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over an existing file: %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one" {
		t.Errorf("a refused Create changed the file to %q", b)
	}
	if err := atomicfile.Write(path, []byte("three"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "three" || fi.Mode().Perm() != 0o600 {
		t.Errorf("after Write: %q mode %04o, want \"three\" mode 0600", b, fi.Mode().Perm())
	}
	checkOnly(t, dir, "f")
	if err := atomicfile.Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Error("Write into a missing directory: no error")
	}
	checkOnly(t, dir, "f")
}

// checkOnly fails unless dir holds exactly the file name: no temporary
// file is left behind.
func checkOnly(t *testing.T, dir, name string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != name {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %q, want only %q", dir, names, name)
	}
}
