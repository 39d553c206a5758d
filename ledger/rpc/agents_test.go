package rpc_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bankdoor/bankdoor/ledger/rpc"
)

func TestDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b, c := newAgent(t), newAgent(t), newAgent(t)
	writePub(t, filepath.Join(dir, "a.pem"), a.Public())
	writePub(t, filepath.Join(dir, "b.pem"), b.Public())
	// Not keys: other extensions and directories are ignored.
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("agent keys\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "old.pem"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := rpc.LoadDirectory(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantAgents(t, d, a, b)
	if _, ok := d.Lookup(c.KeyID); ok {
		t.Fatalf("Lookup(%s) found a key that is not enrolled", c.KeyID)
	}

	// Enrol c, remove a.
	writePub(t, filepath.Join(dir, "c.pem"), c.Public())
	if err := os.Remove(filepath.Join(dir, "a.pem")); err != nil {
		t.Fatal(err)
	}
	ch, err := d.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rpc.Change{Enrolled: []string{c.KeyID}, Removed: []string{a.KeyID}}, ch); diff != "" {
		t.Errorf("Reload change (-want +got):\n%s", diff)
	}
	wantAgents(t, d, b, c)

	// A bad file is named, and the set in force stays.
	bad := filepath.Join(dir, "broken.pem")
	if err := os.WriteFile(bad, []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Reload(); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "fix or remove the file") {
		t.Fatalf("Reload with %s: %v, want an error naming it", bad, err)
	}
	wantAgents(t, d, b, c)
	if _, err := rpc.LoadDirectory(dir); err == nil {
		t.Fatal("LoadDirectory accepted a directory with a bad key file")
	}
}

func wantAgents(t *testing.T, d *rpc.Directory, agents ...*agent) {
	t.Helper()
	var ids []string
	for _, a := range agents {
		ids = append(ids, a.KeyID)
		pub, ok := d.Lookup(a.KeyID)
		if !ok || !pub.Equal(a.Public()) {
			t.Fatalf("Lookup(%s) = %x, %v; want the agent's key", a.KeyID, pub, ok)
		}
	}
	slices.Sort(ids)
	if diff := cmp.Diff(ids, d.KeyIDs()); diff != "" {
		t.Fatalf("KeyIDs (-want +got):\n%s", diff)
	}
}

func TestDirectoryErrors(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	tests := []struct {
		name  string
		setup func(dir string)
		want  []string
	}{
		{"missing", func(dir string) { os.Remove(dir) }, []string{"agents directory", "no such file"}},
		{"same key twice", func(dir string) {
			writePub(t, filepath.Join(dir, "one.pem"), a.Public())
			writePub(t, filepath.Join(dir, "two.pem"), a.Public())
		}, []string{"one.pem and", "two.pem are the same key", a.KeyID}},
		{"private key", func(dir string) {
			os.WriteFile(filepath.Join(dir, "k.pem"), []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600)
		}, []string{"k.pem", `"PRIVATE KEY", want "PUBLIC KEY"`}},
		{"not PEM", func(dir string) {
			os.WriteFile(filepath.Join(dir, "k.pem"), []byte("ssh-ed25519 AAAA"), 0o644)
		}, []string{"k.pem", "no PEM block"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "agents")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			tc.setup(dir)
			_, err := rpc.LoadDirectory(dir)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("LoadDirectory: %v, want an error saying %q", err, w)
				}
			}
		})
	}
}

// TestDirectoryReloadRace: Lookup during Reload sees the old set or the
// new, never a missing key that is in both.
func TestDirectoryReloadRace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stay, come := newAgent(t), newAgent(t)
	writePub(t, filepath.Join(dir, "stay.pem"), stay.Public())
	d, err := rpc.LoadDirectory(dir)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 200 {
			if _, ok := d.Lookup(stay.KeyID); !ok {
				t.Error("an agent enrolled throughout was not found during a reload")
				return
			}
		}
	})
	for i := range 20 {
		p := filepath.Join(dir, "come.pem")
		if i%2 == 0 {
			writePub(t, p, come.Public())
		} else {
			os.Remove(p)
		}
		if _, err := d.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}
