package rpc

import (
	"crypto/ed25519"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bankdoor/bankdoor/internal/agentkey"
)

// maxAgents bounds how many key files one directory may hold, so that a
// directory filled by mistake (a home directory, say) is refused rather
// than read.
const maxAgents = 10000

// Directory is the set of enrolled agents: every file whose name ends in
// ".pem" in one directory is an agent's Ed25519 public key, an SPKI
// "PUBLIC KEY" PEM file as bankdoor keygen writes it (bankdoor.pub.pem).
// Other names are ignored, as are subdirectories.
//
// Directory implements ledger.Agents. Lookup is safe to call while Reload
// runs: it sees either the old set or the new one, never a mix.
type Directory struct {
	dir    string
	mu     sync.Mutex // serialises Reload
	agents atomic.Pointer[map[string]ed25519.PublicKey]
}

// LoadDirectory reads the agents in dir. It fails if dir cannot be read,
// if any *.pem file in it is not an Ed25519 SPKI public key (the error
// names the file), or if two files hold the same key.
func LoadDirectory(dir string) (*Directory, error) {
	d := &Directory{dir: dir}
	if _, err := d.Reload(); err != nil {
		return nil, err
	}
	return d, nil
}

// Dir returns the directory d reads.
func (d *Directory) Dir() string { return d.dir }

// Lookup returns the public key of the enrolled agent with keyID.
func (d *Directory) Lookup(keyID string) (ed25519.PublicKey, bool) {
	m := d.agents.Load()
	if m == nil {
		return nil, false
	}
	pub, ok := (*m)[keyID]
	return pub, ok
}

// KeyIDs returns the key ids of the enrolled agents, sorted.
func (d *Directory) KeyIDs() []string {
	m := d.agents.Load()
	if m == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(*m))
}

// Reload reads the directory again and, only if every key file in it is
// good, replaces the enrolled set in one step. It returns the key ids
// enrolled and removed by the change, sorted. On error the previous set
// stays in force.
func (d *Directory) Reload() (Change, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	next, err := readAgents(d.dir)
	if err != nil {
		return Change{}, err
	}
	var prev map[string]ed25519.PublicKey
	if p := d.agents.Load(); p != nil {
		prev = *p
	}
	d.agents.Store(&next)
	return diff(prev, next), nil
}

// Change is the difference a Reload made, as sorted key ids.
type Change struct {
	Enrolled, Removed []string
}

func diff(prev, next map[string]ed25519.PublicKey) Change {
	var c Change
	for id := range next {
		if _, ok := prev[id]; !ok {
			c.Enrolled = append(c.Enrolled, id)
		}
	}
	for id := range prev {
		if _, ok := next[id]; !ok {
			c.Removed = append(c.Removed, id)
		}
	}
	slices.Sort(c.Enrolled)
	slices.Sort(c.Removed)
	return c
}

// readAgents reads every *.pem regular file (or link to one) in dir.
func readAgents(dir string) (map[string]ed25519.PublicKey, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("agents directory: %w", err)
	}
	agents := make(map[string]ed25519.PublicKey)
	files := make(map[string]string) // key id -> file name
	for _, ent := range ents {
		if ent.IsDir() || filepath.Ext(ent.Name()) != ".pem" {
			continue
		}
		if len(files) == maxAgents {
			return nil, fmt.Errorf("agents directory %s holds more than %d *.pem files; keep only agent public keys in it", dir, maxAgents)
		}
		path := filepath.Join(dir, ent.Name())
		pub, err := agentkey.LoadPublic(path)
		if err != nil {
			return nil, fmt.Errorf("agent key: %w; fix or remove the file", err)
		}
		id := agentkey.KeyID(pub)
		if other, dup := files[id]; dup {
			return nil, fmt.Errorf("agent keys %s and %s are the same key (key_id %s); remove one",
				filepath.Join(dir, other), path, id)
		}
		files[id] = ent.Name()
		agents[id] = pub
	}
	return agents, nil
}
