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
	"strconv"
	"strings"

	"github.com/bankdoor/bankdoor/verifier/tlogproof"
)

// IsBundle reports whether dir holds a bundle manifest: the test by which
// bankdoor verify tells a bundle from a plain receipts directory.
func IsBundle(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, ManifestFile))
	return err == nil
}

// Read reads and strictly parses the bundle in dir, except its receipt
// files (in dir/receipts). It checks the form of every file, not what
// the hashes and signatures prove: that is the verifier's job. An error
// names the file and line at fault.
func Read(dir string) (*Bundle, error) {
	b := new(Bundle)
	if err := readFile(dir, ManifestFile, maxLine*8, func(data []byte) error { return parseManifest(b, data) }); err != nil {
		return nil, err
	}
	err := readFile(dir, CheckpointFile, maxCheckpoint, func(data []byte) error { b.Checkpoint = data; return nil })
	if err == nil {
		err = readFile(dir, LogKeyFile, maxLine, func(data []byte) error {
			keys, err := parseKeys(data)
			if err == nil && len(keys) > 1 {
				err = fmt.Errorf("holds %d keys; want the log's one, or none", len(keys))
			}
			if err == nil && len(keys) == 1 {
				b.LogKey = keys[0]
			}
			return err
		})
	}
	if err == nil {
		err = readFile(dir, WitnessKeyFile, maxLine*64, func(data []byte) (err error) { b.Witnesses, err = parseKeys(data); return err })
	}
	if err == nil {
		err = readLines(dir, ProofsFile, maxLine, func(n int, line []byte) error { return parseProofLine(b, line) })
	}
	if err == nil {
		err = readLines(dir, TailFile, maxTailEntry, func(n int, line []byte) error { b.Tail = append(b.Tail, line); return nil })
	}
	if err != nil {
		return nil, err
	}
	if err := b.check(); err != nil {
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	return b, nil
}

// ReadTLogProof reads and parses the tlog-proof of the receipt with seq
// in the bundle in dir. An error names the file.
func ReadTLogProof(dir string, seq uint64) (*tlogproof.Proof, error) {
	var p *tlogproof.Proof
	err := readFile(filepath.Join(dir, TLogProofsDir), TLogProofName(seq), int64(tlogproof.MaxSize), func(data []byte) (err error) {
		p, err = tlogproof.Parse(data)
		return err
	})
	return p, err
}

// open opens dir/name, which a bundle must have.
func open(dir, name string) (*os.File, string, error) {
	path := filepath.Join(dir, name)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("bundle %s: no %s file; export the bundle again", dir, name)
	}
	if err != nil {
		return nil, "", fmt.Errorf("bundle: %w", err)
	}
	return f, path, nil
}

// readFile reads dir/name, at most limit bytes, and hands it to parse.
func readFile(dir, name string, limit int64, parse func([]byte) error) error {
	f, path, err := open(dir, name)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	if int64(len(data)) > limit {
		return fmt.Errorf("bundle: %s is longer than %d bytes", path, limit)
	}
	if err := parse(data); err != nil {
		return fmt.Errorf("bundle: %s: %w", path, err)
	}
	return nil
}

// readLines calls parse on each newline-terminated line of dir/name,
// without its newline; every line must end in one.
func readLines(dir, name string, maxLen int, parse func(n int, line []byte) error) error {
	f, path, err := open(dir, name)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, maxLen+1)
	for n := 1; ; n++ {
		line, err := r.ReadSlice('\n')
		switch {
		case err == io.EOF && len(line) == 0:
			return nil
		case err == io.EOF:
			return fmt.Errorf("bundle: %s line %d: no newline at the end", path, n)
		case errors.Is(err, bufio.ErrBufferFull):
			return fmt.Errorf("bundle: %s line %d: longer than %d bytes", path, n, maxLen)
		case err != nil:
			return fmt.Errorf("bundle: %w", err)
		}
		if err := parse(n, bytes.Clone(line[:len(line)-1])); err != nil {
			return fmt.Errorf("bundle: %s line %d: %w", path, n, err)
		}
	}
}

// parseManifest parses the five lines of the manifest, exactly.
func parseManifest(b *Bundle, data []byte) error {
	ls, ok := strings.CutSuffix(string(data), "\n")
	lines := strings.Split(ls, "\n")
	if !ok || len(lines) != 5 {
		return fmt.Errorf("want 5 lines, each ending in a newline: %q, key_id, size, head, range", Version)
	}
	if lines[0] != Version {
		return fmt.Errorf("line 1 is %q; this bankdoor reads %q", lines[0], Version)
	}
	var err error
	fields := func(n int, key string) []string {
		f := strings.Split(lines[n-1], " ")
		if f[0] != key && err == nil {
			err = fmt.Errorf("line %d does not start with %q", n, key+" ")
		}
		return f[1:]
	}
	kid, size, head := fields(2, "key_id"), fields(3, "size"), fields(4, "head")
	rng := fields(5, "range")
	if err != nil {
		return err
	}
	if len(kid) != 1 || len(size) != 1 || len(head) != 2 {
		return errors.New("want lines \"key_id K\", \"size N\", \"head SEQ INDEX\"")
	}
	b.KeyID = kid[0]
	if b.Size, err = parseUint(size[0]); err != nil {
		return fmt.Errorf("size: %w", err)
	}
	if b.Head.Seq, err = parseUint(head[0]); err == nil {
		b.Head.Index, err = parseUint(head[1])
	}
	if err != nil {
		return fmt.Errorf("head: %w", err)
	}
	if b.HeadRange, err = parseHashes(rng); err != nil {
		return fmt.Errorf("range: %w", err)
	}
	return nil
}

// parseProofLine parses "SEQ INDEX HASH...".
func parseProofLine(b *Bundle, line []byte) error {
	f := strings.Split(string(line), " ")
	if len(f) < 2 {
		return errors.New("want \"SEQ INDEX HASH...\"")
	}
	seq, err := parseUint(f[0])
	if err != nil {
		return fmt.Errorf("seq: %w", err)
	}
	index, err := parseUint(f[1])
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	hashes, err := parseHashes(f[2:])
	if err != nil {
		return err
	}
	b.Proofs = append(b.Proofs, Proof{Seq: seq, Index: index, Hashes: hashes})
	return nil
}

// parseUint accepts canonical decimal only: no sign, no leading zero.
func parseUint(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || strconv.FormatUint(n, 10) != s {
		return 0, fmt.Errorf("%q is not a decimal number in canonical form", s)
	}
	return n, nil
}

// parseHashes decodes canonical, padded standard base64 of 32 bytes each.
func parseHashes(fields []string) ([][]byte, error) {
	if len(fields) > maxProofHashes {
		return nil, fmt.Errorf("%d hashes, more than %d", len(fields), maxProofHashes)
	}
	out := make([][]byte, 0, len(fields))
	for i, f := range fields {
		h, err := base64.StdEncoding.Strict().DecodeString(f)
		if err != nil || len(h) != hashSize {
			return nil, fmt.Errorf("hash %d %q is not the standard base64 of %d bytes", i+1, f, hashSize)
		}
		out = append(out, h)
	}
	return out, nil
}

// parseKeys splits newline-terminated lines, each one key.
func parseKeys(data []byte) ([]string, error) {
	if len(data) == 0 {
		return nil, nil
	}
	s, ok := strings.CutSuffix(string(data), "\n")
	if !ok {
		return nil, errors.New("the last line has no newline")
	}
	keys := strings.Split(s, "\n")
	for i, k := range keys {
		if k == "" || strings.ContainsAny(k, " \t\r") {
			return nil, fmt.Errorf("line %d is empty or holds white space; want one verifier key per line", i+1)
		}
	}
	return keys, nil
}
