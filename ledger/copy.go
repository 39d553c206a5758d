package ledger

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/transparency-dev/merkle/compact"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/ledger/internal/store"
)

// Errors of Copy, besides ErrLocked, ErrStorage and ErrCorrupt.
var (
	// ErrIncompleteCopy is wrapped by the error of Open, Fsck and Copy
	// for a store that a Copy began writing and did not finish (meta
	// "copy_incomplete"): part of a log, which must not be served or
	// written to. Empty it and copy again.
	ErrIncompleteCopy = errors.New("the ledger holds a copy that did not finish")
	// ErrNotEmpty is wrapped by Copy's error when the destination holds
	// anything: a log, a copy that did not finish, or stray rows.
	ErrNotEmpty = errors.New("the copy's destination is not empty")
)

// DefaultCopyBatch is the most rows one transaction of Copy writes when
// CopyOptions.BatchRows is 0.
const DefaultCopyBatch = 4096

// copyBatchBytes bounds the bytes one transaction of Copy writes.
const copyBatchBytes = 8 << 20

// CopyOptions configure Copy.
type CopyOptions struct {
	// FromPassword and ToPassword are the passwords of a PostgreSQL
	// source and destination, as Options.DBPassword.
	FromPassword, ToPassword string
	// BatchRows is the most rows one destination transaction writes;
	// 0 means DefaultCopyBatch, a negative value one row.
	BatchRows int
	// LogKey is the log's verifier key (its name is the origin); it is
	// required: the source's checkpoint, and the copy's, must verify
	// with it.
	LogKey note.Verifier
}

// CopyReport describes a finished and checked Copy.
type CopyReport struct {
	From, To string // the source and the destination (URLs without their passwords)
	Origin   string
	Size     uint64 // the tree size: entries copied
	Nodes    uint64 // tree nodes copied
	// Leaves is the leaf index records written: those the source had,
	// and the Indexed ones it had not written yet.
	Leaves, Indexed uint64
	Heads           uint64 // agent heads copied
	Cosignatures    uint64 // witness cosignatures copied, of every size
	Witnesses       uint64 // witnesses' latest sizes copied
	// Checked are the tree sizes whose roots were recomputed from the
	// destination's nodes and found equal to the source's, in
	// increasing order: each size a witness cosigned, and the latest.
	Checked []CheckedRoot
	Fsck    *FsckReport // Fsck of the destination before it was made usable
	Took    time.Duration
}

// CheckedRoot is the root of the tree of one size.
type CheckedRoot struct {
	Size uint64
	Root []byte
}

func (r *CopyReport) String() string {
	var sizes []string
	for i, c := range r.Checked {
		if len(r.Checked) > 4 && i >= 2 && i < len(r.Checked)-1 {
			if i == 2 {
				sizes = append(sizes, fmt.Sprintf("(%d more)", len(r.Checked)-3))
			}
			continue
		}
		sizes = append(sizes, fmt.Sprint(c.Size))
	}
	root := hasher.EmptyRoot()
	if len(r.Checked) > 0 {
		root = r.Checked[len(r.Checked)-1].Root
	}
	plural := "s"
	if len(r.Checked) == 1 {
		plural = ""
	}
	return fmt.Sprintf("copied %d entries (%d agents, %d cosignatures, %d leaves indexed) from %s to %s: size %d, root %x; roots equal at %d checkpointed size%s (%s); fsck ok; took %s",
		r.Size, r.Heads, r.Cosignatures, r.Indexed, r.From, r.To, r.Size, root, len(r.Checked), plural, strings.Join(sizes, ", "), r.Took.Round(time.Millisecond))
}

// Copy copies the log in from into to, each a bbolt file's path or a
// PostgreSQL database's URL as for Open, and checks the copy. to must be
// empty (ErrNotEmpty otherwise; a PostgreSQL database gets the ledger's
// tables, a bbolt path a new file).
//
// It copies the stored bytes of every keyspace (see
// # Storage) as they are: the entries, the tree nodes, the leaf index,
// the agents' heads, the witnesses' cosignatures of every size and their
// latest sizes, and meta "origin", "size" and "checkpoint". So the signed
// checkpoint and the cosignatures stay valid: the copy is the same log.
// Before it writes anything it checks that the source's checkpoint is
// signed by CopyOptions.LogKey (an error wrapping ErrCorrupt otherwise),
// and that a PostgreSQL destination holds no table but the ledger's
// (ErrNotEmpty, naming them).
// Meta "version" is the current version, and the copy's leaf index is
// complete: the leaves the source had not indexed yet (from its
// "leaves_from" on) are written too, from its level 0 nodes, and
// "leaves_from" is the size.
//
// from is opened read-only (a bbolt file that a running ledger server or
// proxy has open: ErrLocked) and read in one snapshot. to is written in
// transactions of at most CopyOptions.BatchRows rows (and some 8 MB), so
// memory stays bounded whatever the log's size. The first transaction
// sets meta "copy_incomplete", naming the source; Open, Fsck and Copy
// refuse a store that has it (ErrIncompleteCopy), so a copy stopped
// halfway (by ctx, a crash, a lost connection) is never taken for a log
// or for an empty store: empty it (a new file, a new database) and copy
// again.
//
// Once every row and then the meta are written, Copy checks, in one
// snapshot of to: the root of every size the source has a checkpoint of
// (its latest, and each size a witness cosigned), recomputed from to's
// stored nodes, equals the source's (for the latest, the root in its
// signed checkpoint; for the others, recomputed from its nodes); the
// checkpoint note, the heads, the witnesses and the cosignatures equal
// the source's; and Fsck finds to consistent (every leaf, node and head
// recomputed from the entries). Only then does its last transaction
// delete "copy_incomplete". A mismatch is an error that wraps ErrCorrupt
// and names the size and both roots (or what differs); the copy then
// keeps its mark.
//
// If ctx ends first, Copy returns ctx's error, and to keeps its mark.
func Copy(ctx context.Context, from, to string, opts CopyOptions) (*CopyReport, error) {
	return copyLog(ctx, from, to, opts, nil)
}

// copyLog is Copy, calling afterBatch (if not nil) after each durable
// transaction of rows.
func copyLog(ctx context.Context, from, to string, opts CopyOptions, afterBatch func()) (*CopyReport, error) {
	start := time.Now()
	if from == to {
		return nil, fmt.Errorf("%w: copying %s into itself", ErrNotEmpty, from)
	}
	if opts.LogKey == nil {
		return nil, errors.New("ledger: Copy needs CopyOptions.LogKey, the log's verifier key; load it with LoadVerifier")
	}
	src, srcName, err := openStore(from, Options{DBPassword: opts.FromPassword}, true)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dst, dstName, err := openStore(to, Options{DBPassword: opts.ToPassword}, false)
	if errors.Is(err, store.ErrOtherTables) {
		return nil, fmt.Errorf("%w: %w", ErrNotEmpty, err)
	} else if err != nil {
		return nil, err
	}
	defer dst.Close()
	if pg, ok := dst.(*store.Postgres); ok {
		if err := pg.OtherTables(ctx); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotEmpty, err)
		}
	}
	c := &copier{ctx: ctx, dst: dst, logKey: opts.LogKey, max: cmp.Or(opts.BatchRows, DefaultCopyBatch), afterBatch: afterBatch,
		rep: &CopyReport{From: srcName, To: dstName}}
	c.mark = fmt.Appendf(nil, "copy of %s begun at %s", srcName, start.UTC().Format(time.RFC3339))
	if err := src.View(c.run); err != nil {
		return nil, err
	}
	c.rep.Took = time.Since(start)
	return c.rep, nil
}

// copier writes one source snapshot into the destination.
type copier struct {
	ctx        context.Context
	dst        store.Store
	logKey     note.Verifier
	rep        *CopyReport
	mark       []byte // the value of meta "copy_incomplete"
	max        int
	afterBatch func()

	st    treeState
	sizes []uint64 // the sizes with cosignatures
	puts  []func(store.Tx) error
	bytes int
}

// run copies and checks, in the source's snapshot stx.
func (c *copier) run(stx store.Tx) error {
	if err := c.source(stx); err != nil {
		return err
	}
	if err := c.update(c.begin); err != nil {
		return err
	}
	if err := c.rows(stx); err != nil {
		return err
	}
	if err := c.update(c.meta); err != nil {
		return err
	}
	err := c.dst.View(func(dtx store.Tx) error { return c.check(stx, dtx) })
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !isKind(err) && c.ctx.Err() == nil {
			err = fmt.Errorf("%w: %s: %w", ErrStorage, c.rep.To, err)
		}
		return err
	}
	return c.update(c.finish)
}

// source reads and checks the source's state.
func (c *copier) source(stx store.Tx) error {
	if err := checkCopied(stx); err != nil {
		return fmt.Errorf("%s: %w", c.rep.From, err)
	}
	version, err := stx.Meta(store.MetaVersion)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s: %w", ErrStorage, c.rep.From, err)
	case version == nil:
		return fmt.Errorf("%w: %s holds no log (no meta %q)", ErrStorage, c.rep.From, store.MetaVersion)
	case string(version) != store.Version:
		return fmt.Errorf("%w: %s: storage format version is %q; this bankdoor reads only version %q",
			ErrStorage, c.rep.From, version, store.Version)
	}
	origin, err := stx.Meta(store.MetaOrigin)
	if err == nil {
		c.st, err = readState(stx)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStorage, c.rep.From, err)
	}
	if _, err := verifyStored(c.st.note, c.logKey); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrCorrupt, c.rep.From, err)
	}
	c.rep.Origin, c.rep.Size = string(origin), c.st.size
	return nil
}

// update runs fn in one destination transaction.
func (c *copier) update(fn func(store.Tx) error) error {
	if err := c.ctx.Err(); err != nil {
		return err
	}
	err := c.dst.Update(fn)
	if err != nil && !isKind(err) && !errors.Is(err, ErrNotEmpty) {
		return fmt.Errorf("%w: %s: %w", ErrStorage, c.rep.To, err)
	}
	return err
}

// begin checks that the destination is empty and marks it.
func (c *copier) begin(tx store.Tx) error {
	if err := checkCopied(tx); errors.Is(err, ErrIncompleteCopy) {
		return fmt.Errorf("%w: %s: %w", ErrNotEmpty, c.rep.To, err)
	} else if err != nil {
		return err
	}
	if v, err := tx.Meta(store.MetaVersion); err != nil {
		return err
	} else if v != nil {
		origin, _ := tx.Meta(store.MetaOrigin)
		size, _ := tx.Meta(store.MetaSize)
		n, _ := store.ParseIndex(size)
		return fmt.Errorf("%w: %s holds a log (origin %q, size %d)", ErrNotEmpty, c.rep.To, origin, n)
	}
	for _, k := range []string{store.MetaOrigin, store.MetaSize, store.MetaCheckpoint, store.MetaLeavesFrom} {
		if v, err := tx.Meta(k); err != nil || v != nil {
			if err == nil {
				err = fmt.Errorf("%w: %s holds meta %q but no log (no meta %q)", ErrNotEmpty, c.rep.To, k, store.MetaVersion)
			}
			return err
		}
	}
	if what, err := firstRow(tx); err != nil || what != "" {
		if err == nil {
			err = fmt.Errorf("%w: %s holds %s but no log (no meta %q)", ErrNotEmpty, c.rep.To, what, store.MetaVersion)
		}
		return err
	}
	return tx.SetMeta(store.MetaCopyIncomplete, c.mark)
}

// errFound stops a ForEach at its first row.
var errFound = errors.New("found")

// firstRow describes the first row found in the keyspaces other than
// meta, or returns "" if they are empty.
func firstRow(tx store.Tx) (string, error) {
	var what string
	found := func(format string, args ...any) error { what = fmt.Sprintf(format, args...); return errFound }
	for _, each := range []func() error{
		func() error {
			return tx.ForEachEntry(0, func(i uint64, _ []byte) error { return found("entries (entry %d)", i) })
		},
		func() error {
			return tx.ForEachLeaf(func(h []byte, _ uint64) error { return found("leaf index records (%x)", h) })
		},
		func() error {
			return tx.ForEachNode(func(id compact.NodeID, _ []byte) error {
				return found("tree nodes (level %d, index %d)", id.Level, id.Index)
			})
		},
		func() error {
			return tx.ForEachHead(func(k string, _ store.Head) error { return found("agent heads (%s)", k) })
		},
		func() error {
			return tx.ForEachCosignedSize(func(n uint64) error { return found("cosignatures (of size %d)", n) })
		},
		func() error {
			return tx.ForEachWitness(func(w string, _ uint64) error { return found("witnesses (%s)", w) })
		},
	} {
		if err := each(); errors.Is(err, errFound) {
			return what, nil
		} else if err != nil {
			return "", err
		}
	}
	return "", nil
}

// put queues one write, and writes the queue once it holds a batch.
func (c *copier) put(n int, fn func(store.Tx) error) error {
	c.puts = append(c.puts, fn)
	c.bytes += n
	if len(c.puts) < c.max && c.bytes < copyBatchBytes {
		return nil
	}
	return c.flush()
}

// flush writes the queued writes in one transaction.
func (c *copier) flush() error {
	if len(c.puts) == 0 {
		return nil
	}
	err := c.update(func(tx store.Tx) error {
		for _, put := range c.puts {
			if err := put(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	clear(c.puts)
	c.puts, c.bytes = c.puts[:0], 0
	if c.afterBatch != nil {
		c.afterBatch()
	}
	return nil
}

// rows copies every keyspace but meta.
func (c *copier) rows(stx store.Tx) error {
	r := c.rep
	var entries uint64
	err := stx.ForEachEntry(0, func(i uint64, data []byte) error {
		d := bytes.Clone(data)
		entries++
		return c.put(len(d), func(tx store.Tx) error { return tx.PutEntry(i, d) })
	})
	if err == nil {
		err = stx.ForEachLeaf(func(h []byte, i uint64) error {
			h = bytes.Clone(h)
			r.Leaves++
			return c.put(len(h), func(tx store.Tx) error { return tx.PutLeafIndex(h, i) })
		})
	}
	if err == nil {
		err = c.unindexed(stx)
	}
	if err == nil {
		err = stx.ForEachNode(func(id compact.NodeID, h []byte) error {
			h = bytes.Clone(h)
			r.Nodes++
			return c.put(len(h), func(tx store.Tx) error { return tx.PutNode(id, h) })
		})
	}
	if err == nil {
		err = stx.ForEachHead(func(k string, h store.Head) error {
			r.Heads++
			return c.put(len(k), func(tx store.Tx) error { return tx.PutHead(k, h) })
		})
	}
	if err == nil {
		err = c.cosignatures(stx)
	}
	if err == nil {
		err = stx.ForEachWitness(func(w string, n uint64) error {
			r.Witnesses++
			return c.put(len(w), func(tx store.Tx) error { return tx.PutWitnessSize(w, n) })
		})
	}
	if err == nil {
		err = c.flush()
	}
	if err != nil && !isKind(err) && c.ctx.Err() == nil {
		return fmt.Errorf("%w: %s: %w", ErrStorage, r.From, err)
	}
	if err == nil && entries != c.st.size {
		return corrupt("%s holds %d entries but the log's size is %d", r.From, entries, c.st.size)
	}
	return err
}

// unindexed writes the leaf index records the source lacks: the leaves
// from its "leaves_from" on that are not in its leaves keyspace, whose
// hashes are its level 0 nodes (the leaf index's own loading code finds
// them).
func (c *copier) unindexed(stx store.Tx) error {
	x, err := loadLeafIndex(stx, c.st.size, defaultIndexLag, false)
	if err != nil {
		return err
	}
	var leaves []pendingLeaf
	for s := range indexSlices {
		leaves = x.pending.appendSorted(leaves[:0], s)
		for _, p := range leaves {
			c.rep.Leaves++
			c.rep.Indexed++
			if err := c.put(len(p.leaf), func(tx store.Tx) error { return tx.PutLeafIndex(p.leaf[:], p.index) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// cosignatures copies the cosignatures of every size.
func (c *copier) cosignatures(stx store.Tx) error {
	return stx.ForEachCosignedSize(func(size uint64) error {
		c.sizes = append(c.sizes, size)
		return stx.ForEachCosignature(size, func(w string, lines []byte) error {
			lines = bytes.Clone(lines)
			c.rep.Cosignatures++
			return c.put(len(lines), func(tx store.Tx) error { return tx.PutCosignature(size, w, lines) })
		})
	})
}

// meta writes the log's meta, after every row.
func (c *copier) meta(tx store.Tx) error {
	return errors.Join(
		tx.SetMeta(store.MetaOrigin, []byte(c.rep.Origin)),
		tx.SetMeta(store.MetaSize, store.IndexKey(c.st.size)),
		tx.SetMeta(store.MetaCheckpoint, c.st.note),
		tx.SetMeta(store.MetaLeavesFrom, store.IndexKey(c.st.size)),
		tx.SetMeta(store.MetaVersion, []byte(store.Version)))
}

// finish makes the copy a log: it deletes the mark begin set, if it is
// still the one it set.
func (c *copier) finish(tx store.Tx) error {
	v, err := tx.Meta(store.MetaCopyIncomplete)
	if err != nil {
		return err
	}
	if !bytes.Equal(v, c.mark) {
		return fmt.Errorf("meta %q changed during the copy: it is %q, this copy set %q", store.MetaCopyIncomplete, v, c.mark)
	}
	return tx.DeleteMeta(store.MetaCopyIncomplete)
}

// check compares the destination (dtx) with the source (stx), then
// checks it as Fsck does.
func (c *copier) check(stx, dtx store.Tx) error {
	if err := c.roots(stx, dtx); err != nil {
		return err
	}
	if n, err := dtx.Meta(store.MetaCheckpoint); err != nil {
		return err
	} else if !bytes.Equal(n, c.st.note) {
		return corrupt("the copy's checkpoint is %q; the source's is %q", n, c.st.note)
	}
	if err := c.same(stx, dtx); err != nil {
		return err
	}
	c.rep.Fsck = &FsckReport{Path: c.rep.To}
	if err := fsck(c.ctx, dtx, c.rep.Fsck, c.logKey); err != nil {
		return fmt.Errorf("%s: %w", c.rep.To, err)
	}
	return nil
}

// roots compares the roots of the source and the copy at each size the
// source has a checkpoint of.
func (c *copier) roots(stx, dtx store.Tx) error {
	sizes := append(slices.Clone(c.sizes), c.st.size)
	slices.Sort(sizes)
	for _, size := range slices.Compact(sizes) {
		if size > c.st.size {
			return corrupt("%s holds a cosignature of size %d, beyond the log's size %d", c.rep.From, size, c.st.size)
		}
		var want []byte
		if size == c.st.size {
			cp, err := checkpointBody(c.st.note)
			if err != nil {
				return err
			}
			want = cp.Hash
		} else {
			var err error
			if want, err = storedRoot(stx, size); err != nil {
				return fmt.Errorf("%w: %s: the tree of size %d: %w", ErrCorrupt, c.rep.From, size, err)
			}
		}
		got, err := storedRoot(dtx, size)
		if err != nil {
			return fmt.Errorf("%w: %s: the tree of size %d: %w", ErrCorrupt, c.rep.To, size, err)
		}
		if !bytes.Equal(got, want) {
			return corrupt("the copy's root at size %d is %x; the source's is %x", size, got, want)
		}
		c.rep.Checked = append(c.rep.Checked, CheckedRoot{Size: size, Root: got})
	}
	return nil
}

// same checks that the copy holds the source's heads, witnesses and
// cosignatures, no more, no fewer.
func (c *copier) same(stx, dtx store.Tx) error {
	var heads, witnesses, cosigs uint64
	err := dtx.ForEachHead(func(k string, h store.Head) error {
		heads++
		if want, ok, err := stx.Head(k); err != nil || !ok || want != h {
			return errors.Join(err, corrupt("the copy's head of key_id %s is seq %d, index %d; the source's is seq %d, index %d (found %v)",
				k, h.Seq, h.Index, want.Seq, want.Index, ok))
		}
		return nil
	})
	if err == nil {
		err = dtx.ForEachWitness(func(w string, n uint64) error {
			witnesses++
			if want, ok, err := stx.WitnessSize(w); err != nil || !ok || want != n {
				return errors.Join(err, corrupt("the copy has witness %s at size %d; the source has it at %d (found %v)", w, n, want, ok))
			}
			return nil
		})
	}
	if err == nil {
		err = dtx.ForEachCosignedSize(func(size uint64) error {
			return dtx.ForEachCosignature(size, func(w string, lines []byte) error {
				cosigs++
				if want, err := stx.Cosignature(size, w); err != nil || !bytes.Equal(want, lines) {
					return errors.Join(err, corrupt("the copy's cosignature of size %d by %s is %q; the source's is %q", size, w, lines, want))
				}
				return nil
			})
		})
	}
	switch r := c.rep; {
	case err != nil:
		return err
	case heads != r.Heads || witnesses != r.Witnesses || cosigs != r.Cosignatures:
		return corrupt("the copy holds %d heads, %d witnesses and %d cosignatures; the source %d, %d and %d",
			heads, witnesses, cosigs, r.Heads, r.Witnesses, r.Cosignatures)
	}
	return nil
}

// checkCopied returns an error wrapping ErrIncompleteCopy if tx's store
// holds a copy that did not finish (see Copy).
func checkCopied(tx store.Tx) error {
	v, err := tx.Meta(store.MetaCopyIncomplete)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	if v != nil {
		return fmt.Errorf("%w (meta %q: %s); it is part of a log at most: empty it and copy again", ErrIncompleteCopy, store.MetaCopyIncomplete, v)
	}
	return nil
}
