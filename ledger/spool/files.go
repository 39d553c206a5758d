package spool

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// Errors of dir.read: a receipt file that does not exist (yet), and one
// that is not the chain's receipt for its name. Other errors are I/O
// errors, which may pass.
var (
	errMissing = errors.New("no such receipt file")
	errDamaged = errors.New("damaged receipt file")
)

// dir is the receipts directory of one chain, read-only.
type dir struct {
	path  string
	keyID string
}

// read returns the receipt file of seq after checking that it parses,
// holds that seq and is signed (by key_id) by the chain's key. The
// signature itself is the ledger's to verify.
func (d dir) read(seq uint64) ([]byte, error) {
	name := filepath.Join(d.path, receipt.FileName(seq))
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errMissing
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, receipt.MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	r, err := receipt.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", errDamaged, name, err)
	}
	if r.Seq != seq || r.KeyID != d.keyID {
		return nil, fmt.Errorf("%w %s: it holds seq %d of key_id %s, want seq %d of key_id %s",
			errDamaged, name, r.Seq, r.KeyID, seq, d.keyID)
	}
	return b, nil
}

// last returns the highest seq of a receipt file in the directory, 0 if
// there is none. Names that start with "." (the writers' lock and
// temporary files) are skipped; so is anything else that is not a receipt
// file name: subdirectories (other agents' chains, DIR/AGENT) and stray
// files, which the writer refuses at its start.
func (d dir) last() (uint64, error) {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return 0, fmt.Errorf("read receipts directory: %w", err)
	}
	var last uint64
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if seq, ok := receipt.ParseFileName(e.Name()); ok {
			last = max(last, seq)
		}
	}
	return last, nil
}
