package mcptest

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// Receipts returns the receipt file names in dir (NNNNNN.json), in seq
// order; a missing directory has none.
func Receipts(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	type named struct {
		seq  uint64
		name string
	}
	var rs []named
	for _, e := range ents {
		if seq, ok := receipt.ParseFileName(e.Name()); ok {
			rs = append(rs, named{seq, e.Name()})
		}
	}
	slices.SortFunc(rs, func(a, b named) int { return cmp.Compare(a.seq, b.seq) })
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.name
	}
	return names, nil
}

// ReadReceipt parses the receipt file name in dir (strictly; the signature
// is not checked here, bankdoor verify does that).
func ReadReceipt(dir, name string) (*receipt.Receipt, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	r, err := receipt.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("receipt %s: %w", name, err)
	}
	return r, nil
}

// WaitReceipts polls dir until it holds more than n receipts and returns
// their names.
func WaitReceipts(ctx context.Context, dir string, n int) ([]string, error) {
	for {
		names, err := Receipts(dir)
		if err != nil || len(names) > n {
			return names, err
		}
		select {
		case <-ctx.Done():
			return names, fmt.Errorf("waiting for receipt %d in %s: %w", n+1, dir, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// CopyReceipts copies the receipt files of src into dst, which must exist.
func CopyReceipts(src, dst string) error {
	names, err := Receipts(src)
	if err != nil {
		return err
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, n), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
