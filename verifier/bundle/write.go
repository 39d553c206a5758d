package bundle

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/verifier/tlogproof"
)

// Write writes b and the agent's receipt files (receipts[i] is seq i+1)
// as the bundle directory dir, atomically: into a new directory beside
// dir, synced, then renamed to dir. It refuses a dir that exists and is
// not empty (an error wrapping fs.ErrExist), and leaves nothing behind
// when it fails.
func Write(dir string, b *Bundle, receipts [][]byte) (err error) {
	if err := b.check(); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	if uint64(len(receipts)) != b.Head.Seq {
		return fmt.Errorf("bundle: %d receipt files for a head at seq %d", len(receipts), b.Head.Seq)
	}
	if err := checkTarget(dir); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(dir)), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("bundle: make a temporary directory beside %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := writeAll(tmp, b, receipts); err != nil {
		return err
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("bundle: %s: %w", dir, err) // not empty after all
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("bundle: rename %s to %s: %w", tmp, dir, err)
	}
	return syncDir(filepath.Dir(filepath.Clean(dir)))
}

// checkTarget accepts a dir that does not exist or is an empty directory,
// which Write removes (os.Remove refuses a directory that is not empty)
// just before its rename.
func checkTarget(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("bundle: %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("bundle: %s is not empty: %w", dir, fs.ErrExist)
	}
	return nil
}

func writeAll(tmp string, b *Bundle, receipts [][]byte) error {
	files := []struct {
		name string
		data []byte
	}{
		{ManifestFile, manifest(b)},
		{CheckpointFile, b.Checkpoint},
		{LogKeyFile, lines(slices.DeleteFunc([]string{b.LogKey}, func(k string) bool { return k == "" }))},
		{WitnessKeyFile, lines(b.Witnesses)},
		{TailFile, tail(b.Tail)},
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(tmp, f.name), func(w io.Writer) error { _, err := w.Write(f.data); return err }); err != nil {
			return err
		}
	}
	if err := writeFile(filepath.Join(tmp, ProofsFile), func(w io.Writer) error { return writeProofs(w, b.Proofs) }); err != nil {
		return err
	}
	if err := writeReceipts(filepath.Join(tmp, ReceiptsDir), receipts); err != nil {
		return err
	}
	return writeTLogProofs(filepath.Join(tmp, TLogProofsDir), b)
}

// writeTLogProofs writes b's proof of each receipt, with b's checkpoint,
// as a tlog-proof file named after the receipt (000001.tlog-proof).
func writeTLogProofs(dir string, b *Bundle) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	for _, p := range b.Proofs {
		tp := tlogproof.Proof{Index: p.Index, Hashes: p.Hashes, Checkpoint: b.Checkpoint}
		path := filepath.Join(dir, TLogProofName(p.Seq))
		if err := writeFile(path, func(w io.Writer) error { _, err := w.Write(tp.Marshal()); return err }); err != nil {
			return err
		}
	}
	return syncDir(dir)
}

// TLogProofName is the name of the tlog-proof of the receipt with seq in
// TLogProofsDir: the receipt's name with the extension .tlog-proof.
func TLogProofName(seq uint64) string {
	return strings.TrimSuffix(receipt.FileName(seq), filepath.Ext(receipt.FileName(seq))) + tlogproof.Ext
}

func writeReceipts(dir string, receipts [][]byte) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	for i, r := range receipts {
		path := filepath.Join(dir, receipt.FileName(uint64(i)+1))
		if err := writeFile(path, func(w io.Writer) error { _, err := w.Write(r); return err }); err != nil {
			return err
		}
	}
	return syncDir(dir)
}

// writeFile creates path, fills it with fill, and syncs it.
func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("bundle: write %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("bundle: sync %s: %w", dir, err)
	}
	return nil
}

func manifest(b *Bundle) []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%s\nkey_id %s\nsize %d\nhead %d %d\nrange", Version, b.KeyID, b.Size, b.Head.Seq, b.Head.Index)
	for _, h := range b.HeadRange {
		buf.WriteString(" " + base64.StdEncoding.EncodeToString(h))
	}
	buf.WriteString("\n")
	return buf.Bytes()
}

func writeProofs(w io.Writer, proofs []Proof) error {
	var line []byte
	for _, p := range proofs {
		line = strconv.AppendUint(line[:0], p.Seq, 10)
		line = append(line, ' ')
		line = strconv.AppendUint(line, p.Index, 10)
		for _, h := range p.Hashes {
			line = append(line, ' ')
			line = base64.StdEncoding.AppendEncode(line, h)
		}
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return nil
}

func lines(ss []string) []byte {
	var buf bytes.Buffer
	for _, s := range ss {
		buf.WriteString(s + "\n")
	}
	return buf.Bytes()
}

// tail writes each entry on its own line. A receipt holds no newline
// byte (RFC 8785 escapes control characters), which check enforces.
func tail(entries [][]byte) []byte {
	var buf bytes.Buffer
	for _, e := range entries {
		buf.Write(e)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}
