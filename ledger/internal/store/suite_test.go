package store

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/transparency-dev/merkle/compact"
)

// testStorage tests a Store backend. open must return a new, empty store;
// testStorage closes it. Every backend's tests call it, as sumdb/storage's
// TestStorage is called by each of its implementations. It lives in a
// _test.go file so that the testing package is not linked into bankdoor
// (every backend is in this package, so its tests can reach it).
func testStorage(t *testing.T, open func(t *testing.T) Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, Store)
	}{
		{"Empty", testEmpty},
		{"RoundTrip", testRoundTrip},
		{"Rollback", testRollback},
		{"ViewIsReadOnly", testViewIsReadOnly},
		{"Read", testRead},
		{"Entries", testEntries},
		{"Owned", testOwned},
		{"EntryOrder", testEntryOrder},
		{"ForEachStops", testForEachStops},
		{"Concurrent", testConcurrent},
		{"Cosignatures", testCosignatures},
		{"CosignedSizes", testCosignedSizes},
		{"DeleteMeta", testDeleteMeta},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			tt.fn(t, s)
		})
	}
}

func mustUpdate(t *testing.T, s Store, fn func(Tx) error) {
	t.Helper()
	if err := s.Update(fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func mustView(t *testing.T, s Store, fn func(Tx) error) {
	t.Helper()
	if err := s.View(fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

func hash(n int) []byte { return bytes.Repeat([]byte{byte(n)}, 32) }

func testEmpty(t *testing.T, s Store) {
	mustView(t, s, func(tx Tx) error {
		if v, err := tx.Meta(MetaSize); v != nil || err != nil {
			t.Errorf("Meta on empty store = %q, %v; want nil, nil", v, err)
		}
		if v, err := tx.Entry(0); v != nil || err != nil {
			t.Errorf("Entry(0) on empty store = %q, %v; want nil, nil", v, err)
		}
		if _, ok, err := tx.LeafIndex(hash(1)); ok || err != nil {
			t.Errorf("LeafIndex on empty store: ok %v, err %v", ok, err)
		}
		if v, err := tx.Node(compact.NewNodeID(0, 0)); v != nil || err != nil {
			t.Errorf("Node on empty store = %x, %v", v, err)
		}
		if _, ok, err := tx.Head("abc"); ok || err != nil {
			t.Errorf("Head on empty store: ok %v, err %v", ok, err)
		}
		return nil
	})
}

// contents is everything a store holds, read through the ForEach methods.
type contents struct {
	Meta    map[string]string
	Entries map[uint64]string
	Leaves  map[string]uint64
	Nodes   map[compact.NodeID]string
	Heads   map[string]Head
}

func readAll(t *testing.T, s Store, metaKeys ...string) contents {
	t.Helper()
	c := contents{Meta: map[string]string{}, Entries: map[uint64]string{}, Leaves: map[string]uint64{},
		Nodes: map[compact.NodeID]string{}, Heads: map[string]Head{}}
	mustView(t, s, func(tx Tx) error {
		for _, k := range metaKeys {
			if v, err := tx.Meta(k); err != nil {
				return err
			} else if v != nil {
				c.Meta[k] = string(v)
			}
		}
		return errors.Join(
			tx.ForEachEntry(0, func(i uint64, d []byte) error { c.Entries[i] = string(d); return nil }),
			tx.ForEachLeaf(func(h []byte, i uint64) error { c.Leaves[string(h)] = i; return nil }),
			tx.ForEachNode(func(id compact.NodeID, h []byte) error { c.Nodes[id] = string(h); return nil }),
			tx.ForEachHead(func(k string, h Head) error { c.Heads[k] = h; return nil }))
	})
	return c
}

func writeSample(tx Tx) error {
	return errors.Join(
		tx.SetMeta(MetaSize, IndexKey(2)),
		tx.PutEntry(0, []byte("zero")),
		tx.PutEntry(1, []byte("one")),
		tx.PutLeafIndex(hash(7), 1),
		tx.PutNode(compact.NewNodeID(0, 1), hash(9)),
		tx.PutNode(compact.NewNodeID(40, 1<<20), hash(10)),
		tx.PutHead("0123456789abcdef", Head{Seq: 1<<53 - 1, SHA256: [32]byte{1, 2}, Index: 1}))
}

func testRoundTrip(t *testing.T, s Store) {
	mustUpdate(t, s, writeSample)
	got := readAll(t, s, MetaSize, MetaOrigin)
	want := contents{
		Meta:    map[string]string{MetaSize: string(IndexKey(2))},
		Entries: map[uint64]string{0: "zero", 1: "one"},
		Leaves:  map[string]uint64{string(hash(7)): 1},
		Nodes:   map[compact.NodeID]string{{Level: 0, Index: 1}: string(hash(9)), {Level: 40, Index: 1 << 20}: string(hash(10))},
		Heads:   map[string]Head{"0123456789abcdef": {Seq: 1<<53 - 1, SHA256: [32]byte{1, 2}, Index: 1}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("store contents (-want +got):\n%s", diff)
	}
	mustView(t, s, func(tx Tx) error {
		if i, ok, err := tx.LeafIndex(hash(7)); i != 1 || !ok || err != nil {
			t.Errorf("LeafIndex = %d, %v, %v; want 1, true, nil", i, ok, err)
		}
		idx, found, err := tx.LeafIndexes([][]byte{hash(8), hash(7), hash(7)})
		if err != nil || !slices.Equal(idx, []uint64{0, 1, 1}) || !slices.Equal(found, []bool{false, true, true}) {
			t.Errorf("LeafIndexes = %v, %v, %v; want [0 1 1], [false true true]", idx, found, err)
		}
		heads, err := tx.Heads([]string{"0123456789abcdef", "fedcba9876543210"})
		want := map[string]Head{"0123456789abcdef": {Seq: 1<<53 - 1, SHA256: [32]byte{1, 2}, Index: 1}}
		if diff := cmp.Diff(want, heads); err != nil || diff != "" {
			t.Errorf("Heads: err %v, (-want +got):\n%s", err, diff)
		}
		if h, _ := tx.Node(compact.NewNodeID(0, 1)); !bytes.Equal(h, hash(9)) {
			t.Errorf("Node(0,1) = %x", h)
		}
		ids := []compact.NodeID{{Level: 40, Index: 1 << 20}, {Level: 0, Index: 5}, {Level: 0, Index: 1}, {Level: 40, Index: 1 << 20}}
		got, err := tx.Nodes(ids)
		if diff := cmp.Diff([][]byte{hash(10), nil, hash(9), hash(10)}, got); err != nil || diff != "" {
			t.Errorf("Nodes(%v): err %v, (-want +got):\n%s", ids, err, diff)
		}
		return nil
	})
}

func testRollback(t *testing.T, s Store) {
	boom := errors.New("boom")
	err := s.Update(func(tx Tx) error {
		if err := writeSample(tx); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want the closure's error", err)
	}
	empty := contents{Meta: map[string]string{}, Entries: map[uint64]string{}, Leaves: map[string]uint64{},
		Nodes: map[compact.NodeID]string{}, Heads: map[string]Head{}}
	if diff := cmp.Diff(empty, readAll(t, s, MetaSize)); diff != "" {
		t.Errorf("a failed Update left data behind (-want +got):\n%s", diff)
	}
}

func testViewIsReadOnly(t *testing.T, s Store) {
	err := s.View(func(tx Tx) error { return tx.PutEntry(0, []byte("x")) })
	if err == nil {
		t.Fatal("PutEntry in View succeeded")
	}
	if got := readAll(t, s); len(got.Entries) != 0 {
		t.Fatalf("PutEntry in View stored %v", got.Entries)
	}
}

// testRead: Read sees what was committed and writes nothing.
func testRead(t *testing.T, s Store) {
	mustUpdate(t, s, func(tx Tx) error {
		return errors.Join(tx.PutEntry(0, []byte("zero")), tx.PutNode(compact.NewNodeID(0, 0), hash(1)))
	})
	err := s.Read(func(tx Tx) error {
		e, err := tx.Entry(0)
		if err != nil || string(e) != "zero" {
			t.Errorf("Entry(0) in Read = %q, %v", e, err)
		}
		if h, err := tx.Nodes([]compact.NodeID{compact.NewNodeID(0, 0)}); err != nil || !bytes.Equal(h[0], hash(1)) {
			t.Errorf("Nodes in Read = %x, %v", h, err)
		}
		return tx.PutEntry(1, []byte("one"))
	})
	if !errors.Is(err, ErrReadOnly) {
		t.Errorf("PutEntry in Read = %v, want ErrReadOnly", err)
	}
	if got := readAll(t, s); len(got.Entries) != 1 {
		t.Fatalf("PutEntry in Read stored %v", got.Entries)
	}
}

// testEntries: Entries returns at most n entries from start on, with
// their indexes, each its own slice.
func testEntries(t *testing.T, s Store) {
	mustUpdate(t, s, func(tx Tx) error {
		return errors.Join(tx.PutEntry(2, []byte("two")), tx.PutEntry(3, []byte("three")), tx.PutEntry(5, []byte("five")))
	})
	mustView(t, s, func(tx Tx) error {
		for _, c := range []struct {
			start uint64
			n     int
			idx   []uint64
			data  []string
		}{
			{0, 2, []uint64{2, 3}, []string{"two", "three"}},
			{3, 10, []uint64{3, 5}, []string{"three", "five"}},
			{3, 1, []uint64{3}, []string{"three"}},
			{6, 4, nil, nil},
		} {
			idx, data, err := tx.Entries(c.start, c.n)
			var got []string
			for _, d := range data {
				got = append(got, string(d))
			}
			if err != nil || !slices.Equal(idx, c.idx) || !slices.Equal(got, c.data) {
				t.Errorf("Entries(%d, %d) = %v, %q, %v; want %v, %q", c.start, c.n, idx, got, err, c.idx, c.data)
			}
		}
		return nil
	})
}

// testOwned checks that slices passed in and returned belong to their
// holder: changing them does not change the store.
func testOwned(t *testing.T, s Store) {
	in := []byte("entry")
	mustUpdate(t, s, func(tx Tx) error { return tx.PutEntry(0, in) })
	in[0] = 'X'
	var got []byte
	mustView(t, s, func(tx Tx) error {
		var err error
		got, err = tx.Entry(0)
		return err
	})
	got[1] = 'Y'
	mustView(t, s, func(tx Tx) error {
		if e, _ := tx.Entry(0); string(e) != "entry" {
			t.Errorf("Entry(0) = %q after changing the slices passed in and out, want %q", e, "entry")
		}
		return nil
	})
}

func testEntryOrder(t *testing.T, s Store) {
	idx := []uint64{256, 3, 1 << 40, 255, 0}
	mustUpdate(t, s, func(tx Tx) error {
		for _, i := range idx {
			if err := tx.PutEntry(i, fmt.Appendf(nil, "e%d", i)); err != nil {
				return err
			}
		}
		return nil
	})
	var got []uint64
	mustView(t, s, func(tx Tx) error {
		return tx.ForEachEntry(4, func(i uint64, d []byte) error {
			if string(d) != fmt.Sprintf("e%d", i) {
				t.Errorf("entry %d = %q", i, d)
			}
			got = append(got, i)
			return nil
		})
	})
	if diff := cmp.Diff([]uint64{255, 256, 1 << 40}, got); diff != "" {
		t.Errorf("ForEachEntry(4) order (-want +got):\n%s", diff)
	}
}

func testForEachStops(t *testing.T, s Store) {
	mustUpdate(t, s, writeSample)
	stop := errors.New("stop")
	calls := 0
	err := s.View(func(tx Tx) error {
		return tx.ForEachEntry(0, func(uint64, []byte) error { calls++; return stop })
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("ForEachEntry returning an error: %d calls, err %v; want 1 call and that error", calls, err)
	}
}

// testConcurrent runs Views alongside Updates: each View sees whole
// transactions only.
func testConcurrent(t *testing.T, s Store) {
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 20 {
				n := uint64(w*100 + i)
				err := s.Update(func(tx Tx) error {
					return errors.Join(tx.PutEntry(n, []byte("x")), tx.PutLeafIndex(IndexKey(n), n))
				})
				if err != nil {
					t.Error(err)
				}
			}
		})
		wg.Go(func() {
			for range 20 {
				err := s.View(func(tx Tx) error {
					var entries, leaves int
					tx.ForEachEntry(0, func(uint64, []byte) error { entries++; return nil })
					tx.ForEachLeaf(func([]byte, uint64) error { leaves++; return nil })
					if entries != leaves {
						return fmt.Errorf("view saw %d entries but %d leaves", entries, leaves)
					}
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

// testCosignatures checks the cosignatures and witnesses keyspaces: one
// size's cosignatures are listed apart from the neighbouring sizes', in
// witness order, and a witness name cannot be empty.
func testCosignatures(t *testing.T, s Store) {
	mustUpdate(t, s, func(tx Tx) error {
		return errors.Join(
			tx.PutCosignature(1<<8, "w", []byte("not listed")), // same byte as 1 in another position
			tx.PutCosignature(1, "w2", []byte("w2 at 1")),
			tx.PutCosignature(1, "w1", []byte("w1 at 1")),
			tx.PutCosignature(2, "w1", []byte("w1 at 2")),
			tx.PutWitnessSize("w1", 2))
	})
	mustView(t, s, func(tx Tx) error {
		var got []string
		err := tx.ForEachCosignature(1, func(w string, lines []byte) error {
			got = append(got, w+": "+string(lines))
			return nil
		})
		if diff := cmp.Diff([]string{"w1: w1 at 1", "w2: w2 at 1"}, got); err != nil || diff != "" {
			t.Errorf("ForEachCosignature(1): err %v, (-want +got):\n%s", err, diff)
		}
		if c, err := tx.Cosignature(2, "w1"); string(c) != "w1 at 2" || err != nil {
			t.Errorf("Cosignature(2, w1) = %q, %v", c, err)
		}
		if c, err := tx.Cosignature(2, "w2"); c != nil || err != nil {
			t.Errorf("Cosignature(2, w2) = %q, %v; want nil, nil", c, err)
		}
		if n, ok, err := tx.WitnessSize("w1"); n != 2 || !ok || err != nil {
			t.Errorf("WitnessSize(w1) = %d, %v, %v; want 2, true, nil", n, ok, err)
		}
		if _, ok, err := tx.WitnessSize("w2"); ok || err != nil {
			t.Errorf("WitnessSize(w2) = ok %v, err %v; want false, nil", ok, err)
		}
		var ws []string
		err = tx.ForEachWitness(func(w string, size uint64) error { ws = append(ws, fmt.Sprint(w, " ", size)); return nil })
		if diff := cmp.Diff([]string{"w1 2"}, ws); err != nil || diff != "" {
			t.Errorf("ForEachWitness: err %v, (-want +got):\n%s", err, diff)
		}
		return nil
	})
	if err := s.Update(func(tx Tx) error { return tx.PutCosignature(3, "", []byte("x")) }); err == nil {
		t.Error("PutCosignature with an empty witness name succeeded")
	}
	if err := s.Update(func(tx Tx) error { return tx.PutWitnessSize("", 3) }); err == nil {
		t.Error("PutWitnessSize with an empty witness name succeeded")
	}
}

// testCosignedSizes checks that ForEachCosignedSize lists each size with
// cosignatures once, in order, past a PostgreSQL page (pageRows), while
// its callback reads the transaction.
func testCosignedSizes(t *testing.T, s Store) {
	var want []uint64
	mustUpdate(t, s, func(tx Tx) error {
		for i := range uint64(pageRows + 5) {
			size := i*3 + 1<<8*(i%2) // sizes whose first bytes differ from their order's
			want = append(want, size)
			if err := tx.PutCosignature(size, "w", []byte("lines")); err != nil {
				return err
			}
		}
		return errors.Join(tx.PutCosignature(want[7], "v", []byte("v")), tx.PutCosignature(want[7], "x", []byte("x")))
	})
	slices.Sort(want)
	mustView(t, s, func(tx Tx) error {
		var got []uint64
		err := tx.ForEachCosignedSize(func(size uint64) error {
			if c, err := tx.Cosignature(size, "w"); err != nil || string(c) != "lines" {
				t.Errorf("Cosignature(%d, w) inside ForEachCosignedSize = %q, %v", size, c, err)
			}
			got = append(got, size)
			return nil
		})
		if diff := cmp.Diff(want, got); err != nil || diff != "" {
			t.Errorf("ForEachCosignedSize: err %v, (-want +got):\n%s", err, diff)
		}
		stop := errors.New("stop")
		n := 0
		if err := tx.ForEachCosignedSize(func(uint64) error { n++; return stop }); err != stop || n != 1 {
			t.Errorf("ForEachCosignedSize returning an error: %d calls, %v; want 1, stop", n, err)
		}
		return nil
	})
}

// testDeleteMeta checks that DeleteMeta removes a key, also one set
// earlier in the same transaction, and that a missing key is no error.
func testDeleteMeta(t *testing.T, s Store) {
	mustUpdate(t, s, func(tx Tx) error {
		return errors.Join(tx.SetMeta("a", []byte("1")), tx.SetMeta("b", []byte("2")))
	})
	mustUpdate(t, s, func(tx Tx) error {
		return errors.Join(tx.SetMeta("c", []byte("3")), tx.DeleteMeta("c"), tx.DeleteMeta("a"), tx.DeleteMeta("missing"),
			tx.DeleteMeta("b"), tx.SetMeta("b", []byte("again")))
	})
	mustView(t, s, func(tx Tx) error {
		for k, want := range map[string][]byte{"a": nil, "b": []byte("again"), "c": nil} {
			if v, err := tx.Meta(k); err != nil || !bytes.Equal(v, want) || (v == nil) != (want == nil) {
				t.Errorf("Meta(%q) after DeleteMeta = %q, %v; want %q", k, v, err, want)
			}
		}
		if err := tx.DeleteMeta("b"); !errors.Is(err, ErrReadOnly) {
			t.Errorf("DeleteMeta in a View = %v; want ErrReadOnly", err)
		}
		return nil
	})
}
