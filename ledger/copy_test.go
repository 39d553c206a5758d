package ledger

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/transparency-dev/merkle/compact"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/bankdoor/bankdoor/anchor/anchortest"
	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/internal/pgtest"
	"github.com/bankdoor/bankdoor/ledger/internal/store"
)

// testWitness makes real C2SP tlog-cosignature lines.
type testWitness struct {
	name     string
	signer   note.Signer
	verifier note.Verifier
}

func newTestWitness(t *testing.T, name string) *testWitness {
	s, v, _ := anchortest.WitnessKey(t, name)
	return &testWitness{name: name, signer: s, verifier: v}
}

// cosign stores the witness's cosignature of the log's latest checkpoint.
func (w *testWitness) cosign(t *testing.T, tl *testLog) uint64 {
	t.Helper()
	cp := tl.Checkpoint()
	n, err := note.Open(cp, note.VerifierList(tl.verifier))
	if err != nil {
		t.Fatal(err)
	}
	signed, err := note.Sign(&note.Note{Text: n.Text}, w.signer)
	if err != nil {
		t.Fatal(err)
	}
	lines := signed[len(n.Text)+1:]
	size := tl.Size()
	if err := tl.CosignatureStore().Put(w.signer.Name(), size, lines); err != nil {
		t.Fatal(err)
	}
	return size
}

// copySource is a bbolt log to copy: commits of three agents, two
// witnesses' cosignatures of several sizes, and a leaf index that lags
// (its tail not written yet), with the same leaves hashed by tlog.
type copySource struct {
	*testLog
	agents    []*agent
	witnesses []*testWitness
	ref       *refTree
	cosigned  map[uint64]bool
}

func newCopySource(t *testing.T, commits int) *copySource {
	t.Helper()
	as := []*agent{newAgent(1), newAgent(2), newAgent(3)}
	src := &copySource{testLog: openTestLog(t, 0, as...), agents: as, ref: &refTree{}, cosigned: map[uint64]bool{},
		witnesses: []*testWitness{newTestWitness(t, "w1.example"), newTestWitness(t, "w2.example")}}
	src.Close()
	src.indexLag = 8
	src.reopen(t)
	for i := range commits {
		src.appendAll(t, 1+i%4)
		src.cosigned[src.witnesses[0].cosign(t, src.testLog)] = true
		if i%3 == 0 {
			src.cosigned[src.witnesses[1].cosign(t, src.testLog)] = true
		}
	}
	src.appendAll(t, 2) // the latest size, not cosigned
	return src
}

// appendAll appends n receipts of each agent in one request.
func (src *copySource) appendAll(t *testing.T, n int) {
	var batch [][]byte
	for _, a := range src.agents {
		batch = append(batch, a.Chain(t, n)...)
	}
	size := src.Size()
	src.mustAppend(t, batch...)
	for i, r := range batch {
		src.ref.add(t, int64(size)+int64(i), r)
	}
}

// leavesFrom reads the log's meta "leaves_from".
func leavesFrom(t *testing.T, tl *testLog) uint64 {
	t.Helper()
	var from uint64
	err := tl.view(func(tx store.Tx) error {
		b, err := tx.Meta(store.MetaLeavesFrom)
		if err == nil {
			from, err = store.ParseIndex(b)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return from
}

// headsOf returns the heads of agents.
func headsOf(t *testing.T, tl *testLog, agents []*agent) map[string]Head {
	t.Helper()
	out := map[string]Head{}
	for _, a := range agents {
		h, ok, err := tl.Head(t.Context(), a.KeyID)
		if err != nil || !ok {
			t.Fatalf("head of %s: %v, %v", a.KeyID, ok, err)
		}
		out[a.KeyID] = h
	}
	return out
}

// TestCopyToPostgres copies a bbolt log into a new PostgreSQL database in
// small batches and opens the copy with the same log key: the same
// checkpoint, every cosignature verifying over the copy's checkpoint of
// its size, every leaf found by hash (the unindexed tail too), heads
// equal; then it appends more, and proofs across the copy match
// golang.org/x/mod/sumdb/tlog's and verify. The source file is unchanged.
func TestCopyToPostgres(t *testing.T) {
	t.Parallel()
	src := newCopySource(t, 12)
	size, from, cp := src.Size(), leavesFrom(t, src.testLog), src.Checkpoint()
	if from >= size {
		t.Fatalf("the source's leaves_from is %d of %d: the test needs an unindexed tail", from, size)
	}
	heads := headsOf(t, src.testLog, src.agents)
	src.Close()
	before, err := os.ReadFile(src.path)
	if err != nil {
		t.Fatal(err)
	}

	db := pg.NewDB(t)
	batches := 0
	rep, err := copyLog(t.Context(), src.path, db.URL, CopyOptions{ToPassword: db.Password, BatchRows: 16, LogKey: testVerifier(t)}, func() { batches++ })
	if err != nil {
		t.Fatalf("Copy: %v", err)
	}
	t.Log(rep)
	if after, err := os.ReadFile(src.path); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the source file changed during the copy (err %v)", err)
	}
	if rep.Size != size || rep.Leaves != size || rep.Indexed == 0 || rep.Indexed > size-from || rep.Heads != 3 ||
		rep.Witnesses != 2 || rep.Fsck == nil || rep.Fsck.Size != size {
		t.Errorf("report %+v; want size %d, %d leaf index records of which 1 to %d (the tail) indexed by the copy, 3 heads, 2 witnesses, fsck of size %d",
			rep, size, size, size-from, size)
	}
	if want := len(src.cosigned) + 1; len(rep.Checked) != want || rep.Checked[len(rep.Checked)-1].Size != size {
		t.Errorf("roots checked at %v; want the %d cosigned sizes and %d", rep.Checked, len(src.cosigned), size)
	}
	if min := int(rep.Size+rep.Nodes+rep.Leaves) / 16; batches < min {
		t.Errorf("%d batches of at most 16 rows; want at least %d", batches, min)
	}
	if !strings.Contains(rep.String(), "copied ") || strings.Contains(rep.String(), db.Password) {
		t.Errorf("report line %q", rep)
	}

	dst := &testLog{path: db.URL, agents: src.testLog.agents, verifier: src.verifier, opts: src.opts}
	dst.opts.DBPassword = db.Password
	dst.reopen(t)
	if !bytes.Equal(dst.Checkpoint(), cp) {
		t.Fatalf("the copy's checkpoint is\n%s\nthe source's\n%s", dst.Checkpoint(), cp)
	}
	if diff := cmp.Diff(heads, headsOf(t, dst, src.agents)); diff != "" {
		t.Errorf("the copy's heads differ from the source's (-source +copy):\n%s", diff)
	}
	checkCosignatures(t, dst, src)
	for i := range size {
		leaf := src.ref.hashes[tlog.StoredHashIndex(0, int64(i))]
		if got, err := dst.LeafIndex(leaf[:]); err != nil || got != i {
			t.Fatalf("the copy's LeafIndex of entry %d = %d, %v", i, got, err)
		}
	}

	src.testLog = dst // append to the copy, keeping the reference tree
	src.appendAll(t, 3)
	newSize := dst.Size()
	for i := range newSize {
		checkInclusion(t, dst, src.ref, i, newSize)
	}
	for old := range src.cosigned {
		checkConsistency(t, dst, src.ref, old, newSize)
		checkInclusion(t, dst, src.ref, old-1, old)
	}
	checkConsistency(t, dst, src.ref, size, newSize)
	dst.Close()
	if _, err := FsckDB(t.Context(), db.URL, db.Password, testVerifier(t)); err != nil {
		t.Errorf("Fsck of the copy after more appends: %v", err)
	}
}

// checkCosignatures verifies every cosignature the source stored, read
// from the copy, over the copy's checkpoint of its size.
func checkCosignatures(t *testing.T, dst *testLog, src *copySource) {
	t.Helper()
	for size := range src.cosigned {
		cp, err := dst.CheckpointAt(size)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range src.witnesses {
			lines, ok, err := dst.CosignatureStore().Get(w.signer.Name(), size)
			if err != nil || !ok {
				continue // this witness did not cosign size
			}
			if _, err := cosignature.Verify(cp, lines, w.verifier); err != nil {
				t.Errorf("%s's cosignature of size %d, read from the copy: %v", w.name, size, err)
			}
		}
	}
	for _, w := range src.witnesses {
		if _, ok, err := dst.CosignatureStore().Latest(w.signer.Name()); !ok || err != nil {
			t.Errorf("the copy has no latest size of witness %s (%v)", w.name, err)
		}
	}
}

// TestCopyInterrupted: a copy stopped after its second batch leaves a
// database that Open, Fsck and another Copy refuse, naming the
// unfinished copy, instead of taking it for an empty, new log.
func TestCopyInterrupted(t *testing.T) {
	t.Parallel()
	src := newCopySource(t, 4)
	src.Close()
	db := pg.NewDB(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	batches := 0
	_, err := copyLog(ctx, src.path, db.URL, CopyOptions{ToPassword: db.Password, BatchRows: 5, LogKey: testVerifier(t)}, func() {
		if batches++; batches == 2 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || batches != 2 {
		t.Fatalf("Copy cancelled after its second batch: %v after %d batches; want context.Canceled after 2", err, batches)
	}
	checkIncomplete(t, db, src)
}

// checkIncomplete checks that Open, Fsck and Copy refuse db, which holds
// an unfinished copy of src.
func checkIncomplete(t *testing.T, db pgtest.DB, src *copySource) {
	t.Helper()
	opts := src.opts
	opts.DBPassword = db.Password
	l, err := Open(db.URL, opts)
	if err == nil {
		l.Close()
	}
	if !errors.Is(err, ErrIncompleteCopy) || !strings.Contains(err.Error(), "copy of "+src.path) {
		t.Errorf("Open of an unfinished copy = %v; want ErrIncompleteCopy naming the source", err)
	}
	if _, err := FsckDB(t.Context(), db.URL, db.Password, testVerifier(t)); !errors.Is(err, ErrIncompleteCopy) || !errors.Is(err, ErrCorrupt) {
		t.Errorf("Fsck of an unfinished copy = %v; want ErrCorrupt and ErrIncompleteCopy", err)
	}
	_, err = Copy(t.Context(), src.path, db.URL, CopyOptions{ToPassword: db.Password, LogKey: testVerifier(t)})
	if !errors.Is(err, ErrNotEmpty) || !errors.Is(err, ErrIncompleteCopy) {
		t.Errorf("Copy into an unfinished copy = %v; want ErrNotEmpty and ErrIncompleteCopy", err)
	}
}

// TestCopyRefusesNonEmpty: a destination holding a log, or stray rows,
// is refused, named, and left as it was.
func TestCopyRefusesNonEmpty(t *testing.T) {
	t.Parallel()
	src := newCopySource(t, 1)
	src.Close()

	other := openTestLogOn(t, onPostgres, 0, newAgent(9))
	other.mustAppend(t, newAgent(9).Chain(t, 2)...)
	cp := other.Checkpoint()
	other.Close()
	_, err := Copy(t.Context(), src.path, other.path, CopyOptions{ToPassword: other.opts.DBPassword, LogKey: testVerifier(t)})
	if !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), `holds a log (origin "ledger.example/test", size 2)`) {
		t.Errorf("Copy into a database holding a log = %v; want ErrNotEmpty naming its origin and size", err)
	}
	other.reopen(t)
	if !bytes.Equal(other.Checkpoint(), cp) {
		t.Errorf("the refused destination's checkpoint changed")
	}

	stray := filepath.Join(t.TempDir(), "stray.db")
	s, err := store.OpenBolt(stray, false)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(func(tx store.Tx) error { return tx.PutHead("0123456789abcdef", store.Head{Seq: 1}) })
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Copy(t.Context(), src.path, stray, CopyOptions{LogKey: testVerifier(t)})
	if !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), "holds agent heads (0123456789abcdef) but no log") {
		t.Errorf("Copy into a file with a stray head = %v; want ErrNotEmpty naming it", err)
	}
	if _, err := Copy(t.Context(), src.path, src.path, CopyOptions{LogKey: testVerifier(t)}); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("Copy of a file into itself = %v; want ErrNotEmpty", err)
	}
}

// TestCopyEmptyToBolt: Copy also writes a bbolt file, and copies a new,
// empty log: the copy opens with the same key and checkpoint.
func TestCopyEmptyToBolt(t *testing.T) {
	t.Parallel()
	src := openTestLog(t, 0)
	cp := src.Checkpoint()
	src.Close()
	dst := &testLog{path: filepath.Join(t.TempDir(), "copy.db"), agents: src.agents, verifier: src.verifier, opts: src.opts}
	rep, err := Copy(t.Context(), src.path, dst.path, CopyOptions{LogKey: testVerifier(t)})
	if err != nil || rep.Size != 0 || len(rep.Checked) != 1 || !bytes.Equal(rep.Checked[0].Root, hasher.EmptyRoot()) {
		t.Fatalf("Copy of an empty log = %v, %v; want size 0, the empty tree's root checked", rep, err)
	}
	dst.reopen(t)
	if !bytes.Equal(dst.Checkpoint(), cp) {
		t.Errorf("the copy's checkpoint is %q; the source's %q", dst.Checkpoint(), cp)
	}
}

// TestCopyLockedSource: a source file a running log holds is refused
// with ErrLocked.
func TestCopyLockedSource(t *testing.T) {
	t.Parallel()
	src := newCopySource(t, 1)
	_, err := Copy(t.Context(), src.path, filepath.Join(t.TempDir(), "copy.db"), CopyOptions{LogKey: testVerifier(t)})
	if !errors.Is(err, ErrLocked) {
		t.Errorf("Copy of a file a Log holds open = %v; want ErrLocked", err)
	}
}

// TestCopyFindsCorruption: a source whose stored node disagrees with its
// entries is copied as it is, but the check fails naming the node, and
// the copy keeps its mark, so it is never served.
func TestCopyFindsCorruption(t *testing.T) {
	t.Parallel()
	src := newCopySource(t, 3)
	src.Close()
	s, err := store.OpenBolt(src.path, false)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(func(tx store.Tx) error { return tx.PutNode(compact.NewNodeID(0, 1), make([]byte, 32)) })
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	db := pg.NewDB(t)
	_, err = Copy(t.Context(), src.path, db.URL, CopyOptions{ToPassword: db.Password, LogKey: testVerifier(t)})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "node (level 0, index 1)") {
		t.Fatalf("Copy of a source with a wrong node = %v; want ErrCorrupt naming node (0, 1)", err)
	}
	checkIncomplete(t, db, src)
}

// copyBenchEntries is the size of BenchmarkCopyToPostgres's log.
const copyBenchEntries = 100_000

// BenchmarkCopyToPostgres measures Copy, check included, of a bbolt log
// of copyBenchEntries real receipts (one agent, appended DefaultMaxBatch
// at a time, so its leaf index lags as a live log's does) into a new
// PostgreSQL database of the test binary's server (fsync on).
func BenchmarkCopyToPostgres(b *testing.B) {
	a := newAgent(1)
	tl := openTestLog(b, 0, a)
	for range copyBenchEntries / DefaultMaxBatch {
		tl.mustAppend(b, a.Chain(b, DefaultMaxBatch)...)
	}
	tl.mustAppend(b, a.Chain(b, copyBenchEntries%DefaultMaxBatch)...)
	tl.Close()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		db := pg.NewDB(b)
		b.StartTimer()
		rep, err := Copy(b.Context(), tl.path, db.URL, CopyOptions{ToPassword: db.Password, LogKey: testVerifier(b)})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rep.Size)/rep.Took.Seconds(), "entries/s")
		b.Log(rep)
	}
}

// TestCopyFindsMismatch: a copy whose stored node differs from the
// source's (changed in the database between the copy's batches) fails the
// check at the first cosigned size whose root covers that node, naming
// the size and both roots, and keeps its mark; a source holding a
// cosignature beyond its size is refused too.
func TestCopyFindsMismatch(t *testing.T) {
	t.Parallel()
	src := newCopySource(t, 4)
	size := src.Size()
	src.Close()
	sizes := slices.Sorted(maps.Keys(src.cosigned))
	first := compact.RangeNodes(0, sizes[0], nil)[0] // a node of the smallest cosigned tree's root
	db := pg.NewDB(t)
	conn, err := pgx.Connect(t.Context(), db.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tamper := func() {
		_, err := conn.Exec(t.Context(), "UPDATE ledger_nodes SET hash = $1 WHERE id = $2",
			make([]byte, 32), tlog.StoredHashIndex(int(first.Level), int64(first.Index)))
		if err != nil {
			t.Error(err)
		}
	}
	_, err = copyLog(t.Context(), src.path, db.URL, CopyOptions{ToPassword: db.Password, BatchRows: 50, LogKey: testVerifier(t)}, tamper)
	want := fmt.Sprintf("the copy's root at size %d is ", sizes[0])
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "; the source's is ") {
		t.Fatalf("Copy with a node changed in the copy = %v; want ErrCorrupt saying %q and the source's root", err, want)
	}
	checkIncomplete(t, db, src)

	s, err := store.OpenBolt(src.path, false)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(func(tx store.Tx) error {
		return tx.PutCosignature(size+1, "w9.example", []byte("— w9.example c2ln\n"))
	})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Copy(t.Context(), src.path, filepath.Join(t.TempDir(), "copy.db"), CopyOptions{LogKey: testVerifier(t)})
	if want := fmt.Sprintf("holds a cosignature of size %d, beyond the log's size %d", size+1, size); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) {
		t.Errorf("Copy of a source with a cosignature beyond its size = %v; want ErrCorrupt saying %q", err, want)
	}
}

// TestCopyRefusesOtherTables: a database that holds another application's
// table is refused, naming the table, and gets none of the ledger's.
func TestCopyRefusesOtherTables(t *testing.T) {
	t.Parallel()
	src := newCopySource(t, 1)
	src.Close()
	db := pg.NewDB(t)
	conn, err := pgx.Connect(t.Context(), db.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "CREATE TABLE customers (id integer)"); err != nil {
		t.Fatal(err)
	}
	_, err = Copy(t.Context(), src.path, db.URL, CopyOptions{ToPassword: db.Password, LogKey: src.verifier})
	if !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), "customers") {
		t.Errorf("Copy into a database holding table customers = %v; want ErrNotEmpty naming it", err)
	}
	var created bool
	if err := conn.QueryRow(t.Context(), "SELECT to_regclass('ledger_schema') IS NOT NULL").Scan(&created); err != nil || created {
		t.Errorf("the refused database got the ledger's tables (%v, %v)", created, err)
	}
	opts := src.opts
	opts.DBPassword = db.Password
	if l, err := Open(db.URL, opts); err == nil || !strings.Contains(err.Error(), "customers") {
		if l != nil {
			l.Close()
		}
		t.Errorf("Open of a database holding table customers = %v; want an error naming it", err)
	}

	// A database that has the ledger's (empty) tables and another one.
	db2 := pg.NewDB(t)
	s, err := store.OpenPostgres(t.Context(), db2.ConnString(), "", false)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	conn2, err := pgx.Connect(t.Context(), db2.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close(context.Background())
	if _, err := conn2.Exec(t.Context(), "CREATE TABLE customers (id integer)"); err != nil {
		t.Fatal(err)
	}
	_, err = Copy(t.Context(), src.path, db2.URL, CopyOptions{ToPassword: db2.Password, LogKey: src.verifier})
	if !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), "customers") {
		t.Errorf("Copy into the ledger's empty tables beside table customers = %v; want ErrNotEmpty naming it", err)
	}
}

// TestVerifyStoredCheckpoint: Fsck and Copy verify the stored checkpoint
// with the log key: a signature that does not verify, or a log key that
// did not sign it, is an inconsistency, and Copy writes nothing.
func TestVerifyStoredCheckpoint(t *testing.T) {
	t.Parallel()
	src := newCopySource(t, 1)
	src.Close()
	other := newTestWitness(t, testOrigin).verifier // the log's name, another key
	if _, err := Fsck(t.Context(), src.path, other); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Fsck with another log key = %v; want ErrCorrupt", err)
	}
	s, err := store.OpenBolt(src.path, false)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(func(tx store.Tx) error {
		n, err := tx.Meta(store.MetaCheckpoint)
		if err != nil {
			return err
		}
		return tx.SetMeta(store.MetaCheckpoint, flipSignature(t, n))
	})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Fsck(t.Context(), src.path, src.verifier); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "signature") {
		t.Errorf("Fsck of a checkpoint with a bad signature = %v; want ErrCorrupt naming the signature", err)
	}
	db := pg.NewDB(t)
	_, err = Copy(t.Context(), src.path, db.URL, CopyOptions{ToPassword: db.Password, LogKey: src.verifier})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "signature") {
		t.Errorf("Copy of a checkpoint with a bad signature = %v; want ErrCorrupt naming the signature", err)
	}
	conn, err := pgx.Connect(t.Context(), db.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows int
	if err := conn.QueryRow(t.Context(), "SELECT (SELECT count(*) FROM ledger_meta) + (SELECT count(*) FROM ledger_entries)").Scan(&rows); err != nil || rows != 0 {
		t.Errorf("the refused copy wrote %d rows (%v); want none", rows, err)
	}
}

// flipSignature returns the signed note n with the last byte of its last
// signature changed, its key name and hash kept.
func flipSignature(t *testing.T, n []byte) []byte {
	t.Helper()
	i := bytes.LastIndex(n, []byte("\n\u2014 "))
	if i < 0 {
		t.Fatalf("no signature line in %q", n)
	}
	line := n[i+len("\n\u2014 ") : len(n)-1]
	name, b64, _ := bytes.Cut(line, []byte(" "))
	sig, err := base64.StdEncoding.DecodeString(string(b64))
	if err != nil {
		t.Fatal(err)
	}
	sig[len(sig)-1] ^= 1
	return fmt.Appendf(bytes.Clone(n[:i]), "\n\u2014 %s %s\n", name, base64.StdEncoding.EncodeToString(sig))
}
