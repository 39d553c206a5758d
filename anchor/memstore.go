package anchor

import (
	"bytes"
	"sync"
)

// MemStore is a CosignatureStore in memory, lost when the process ends.
// It suits an anchor whose durable store is elsewhere: bankdoor anchor
// hands each cosignature to the remote ledger, which keeps it, and
// remembers here only what this process has seen. Tests use it too.
type MemStore struct {
	mu     sync.Mutex
	sigs   map[memKey][]byte
	latest map[string]uint64
}

type memKey struct {
	witness string
	size    uint64
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{sigs: make(map[memKey][]byte), latest: make(map[string]uint64)}
}

// Put implements CosignatureStore.
func (m *MemStore) Put(witness string, size uint64, cosignature []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sigs[memKey{witness, size}] = bytes.Clone(cosignature)
	if old, ok := m.latest[witness]; !ok || size > old {
		m.latest[witness] = size
	}
	return nil
}

// Get implements CosignatureStore.
func (m *MemStore) Get(witness string, size uint64) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.sigs[memKey{witness, size}]
	return bytes.Clone(c), ok, nil
}

// Latest implements CosignatureStore.
func (m *MemStore) Latest(witness string) (uint64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.latest[witness]
	return s, ok, nil
}

// Cosignatures implements CosignatureStore.
func (m *MemStore) Cosignatures(size uint64) ([][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out [][]byte
	for k, c := range m.sigs {
		if k.size == size {
			out = append(out, bytes.Clone(c))
		}
	}
	return out, nil
}
