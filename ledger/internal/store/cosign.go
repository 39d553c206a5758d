package store

import (
	"bytes"
	"errors"
	"fmt"
)

// CosignatureKey encodes the cosignatures key of witness's cosignature of
// the checkpoint of size: size (8 bytes) || witness. All the
// cosignatures of one size share the 8-byte prefix.
func CosignatureKey(size uint64, witness string) []byte {
	return append(IndexKey(size), witness...)
}

// ParseCosignatureKey decodes CosignatureKey's output.
func ParseCosignatureKey(k []byte) (size uint64, witness string, err error) {
	if len(k) <= 8 {
		return 0, "", fmt.Errorf("cosignature key %x is not a size (8 bytes) followed by a witness name", k)
	}
	size, err = ParseIndex(k[:8])
	return size, string(k[8:]), err
}

// errNoWitness refuses an empty witness name, which would make a
// cosignatures key that cannot be told from a bare size.
var errNoWitness = errors.New("witness name is empty")

func (t boltTx) Cosignature(size uint64, witness string) ([]byte, error) {
	if witness == "" {
		return nil, nil
	}
	return bytes.Clone(t.tx.Bucket(bucketCosignatures).Get(CosignatureKey(size, witness))), nil
}

func (t boltTx) PutCosignature(size uint64, witness string, lines []byte) error {
	if witness == "" {
		return errNoWitness
	}
	return t.put(bucketCosignatures, CosignatureKey(size, witness), lines, fillAppend)
}

func (t boltTx) ForEachCosignature(size uint64, fn func(string, []byte) error) error {
	prefix := IndexKey(size)
	c := t.tx.Bucket(bucketCosignatures).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		_, witness, err := ParseCosignatureKey(k)
		if err != nil {
			return fmt.Errorf("bucket cosignatures: %w", err)
		}
		if err := fn(witness, v); err != nil {
			return err
		}
	}
	return nil
}

func (t boltTx) WitnessSize(witness string) (uint64, bool, error) {
	if witness == "" {
		return 0, false, nil
	}
	v := t.tx.Bucket(bucketWitnesses).Get([]byte(witness))
	if v == nil {
		return 0, false, nil
	}
	size, err := ParseIndex(v)
	if err != nil {
		return 0, false, fmt.Errorf("bucket witnesses, key %q: %w", witness, err)
	}
	return size, true, nil
}

func (t boltTx) PutWitnessSize(witness string, size uint64) error {
	if witness == "" {
		return errNoWitness
	}
	return t.put(bucketWitnesses, []byte(witness), IndexKey(size), fillRandom)
}

func (t boltTx) ForEachWitness(fn func(string, uint64) error) error {
	return t.tx.Bucket(bucketWitnesses).ForEach(func(k, v []byte) error {
		size, err := ParseIndex(v)
		if err != nil {
			return fmt.Errorf("bucket witnesses, key %q: %w", k, err)
		}
		return fn(string(k), size)
	})
}
