package store

import (
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
)

// The Tx methods a copy of a whole store needs (ledger.Copy), for both
// backends: deleting its "in progress" meta key, and finding every size
// that holds cosignatures.

func (t boltTx) DeleteMeta(key string) error {
	if !t.tx.Writable() {
		return ErrReadOnly
	}
	return t.tx.Bucket(bucketMeta).Delete([]byte(key))
}

func (t boltTx) ForEachCosignedSize(fn func(uint64) error) error {
	c := t.tx.Bucket(bucketCosignatures).Cursor()
	k, _ := c.First()
	for k != nil {
		size, _, err := ParseCosignatureKey(k)
		if err != nil {
			return fmt.Errorf("bucket cosignatures: %w", err)
		}
		if err := fn(size); err != nil {
			return err
		}
		if size == math.MaxUint64 {
			return nil
		}
		k, _ = c.Seek(IndexKey(size + 1))
	}
	return nil
}

func (t *pgTx) DeleteMeta(key string) error {
	if err := t.writable(); err != nil {
		return err
	}
	if err := t.flush(); err != nil { // a SetMeta of key before this must not land after it
		return err
	}
	_, err := t.tx.Exec(t.ctx, "DELETE FROM ledger_meta WHERE key = $1", key)
	return err
}

func (t *pgTx) ForEachCosignedSize(fn func(uint64) error) error {
	return forEach(t, "SELECT DISTINCT size FROM ledger_cosignatures ORDER BY size",
		"SELECT DISTINCT size FROM ledger_cosignatures WHERE size > $1 ORDER BY size",
		nil, func(r pgx.Rows) (int64, func() error, error) {
			var n int64
			err := r.Scan(&n)
			return n, func() error { return fn(uint64(n)) }, err
		})
}
