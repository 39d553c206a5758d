package bundle_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/verifier/bundle"
)

// Example makes the bundle of the package documentation: a log whose
// leaves are A1, B1, A2, B2 (agents A and B, seqs 1 and 2), exported for
// A. Keys are from fixed seeds, so every byte is reproducible.
func Example() {
	dir, err := os.MkdirTemp("", "bundle-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	a, b := seededKey(0xa0), seededKey(0xb0)
	l := openLog(filepath.Join(dir, "ledger.db"), a, b)
	defer l.Close()
	ra, rb := chain(a, 2), chain(b, 2)
	for _, r := range [][]byte{ra[0], rb[0], ra[1], rb[1]} {
		if _, err := l.Append(context.Background(), [][]byte{r}); err != nil {
			panic(err)
		}
	}
	id := agentkey.KeyID(a.Public().(ed25519.PublicKey))
	bnd, files, err := bundle.Export(context.Background(), l.Source(), id, l.Checkpoint(), l.Size())
	if err != nil {
		panic(err)
	}
	bnd.LogKey = exampleVKey
	out := filepath.Join(dir, "export")
	if err := bundle.Write(out, bnd, files); err != nil {
		panic(err)
	}
	for _, name := range []string{bundle.ManifestFile, bundle.ProofsFile, bundle.CheckpointFile, bundle.LogKeyFile} {
		data, _ := os.ReadFile(filepath.Join(out, name))
		fmt.Printf("-- %s --\n%s", name, data)
	}
	tail, _ := os.ReadFile(filepath.Join(out, bundle.TailFile))
	fmt.Printf("-- %s --\n", bundle.TailFile)
	leaf := bnd.Head.Index
	for line := range strings.Lines(string(tail)) {
		r, err := receipt.Parse([]byte(line[:len(line)-1]))
		if err != nil {
			panic(err)
		}
		fmt.Printf("leaf %d: {\"arg_names\":...} (%d bytes and a newline): key_id %s, seq %d\n", leaf, len(line)-1, r.KeyID, r.Seq)
		leaf++
	}
	fmt.Printf("the first is receipts/000002.json: %v\n", bytes.Equal([]byte(strings.SplitN(string(tail), "\n", 2)[0]), ra[1]))
	// Output:
	// -- bundle --
	// bankdoor export v1
	// key_id a18112b0b7b4225f
	// size 4
	// head 2 2
	// range L1dblwjRLeWBSBzhzLFWB3fKFWoZrVpimP1kj91tTsA=
	// -- proofs --
	// 1 0 qzTzSntI4GAy2m2uKBFaMZr1vp2Z8nWfvrxpWA3ZlSU= VURjN8C9Sgy2jMqhig1X9zXhQv0/iYoFJ4xZ5cVp5LM=
	// 2 2 c36ghI8jFWn6JASdrd4UWWYHeOAWBrFKVwr0fn+d0NY= L1dblwjRLeWBSBzhzLFWB3fKFWoZrVpimP1kj91tTsA=
	// -- checkpoint --
	// bank.example/ledger
	// 4
	// kZUgG00GUqFg31KNNgmyee/l/2tHduJbeWDAZUSydwM=
	//
	// — bank.example/ledger HiWmq30/0AClBPayAXkuJHF+faESmWL9EhaJDNggqh72sXId7YFzWBCqH5ITdrLjSnwg/juk78Bw+XqWdesS+jSxnAo=
	// -- log.vkey --
	// bank.example/ledger+1e25a6ab+AQOhB7/zzhC+HXDdGOdLwJln5NYwm6UNXx3chmQSVTG4
	// -- tail --
	// leaf 2: {"arg_names":...} (549 bytes and a newline): key_id a18112b0b7b4225f, seq 2
	// leaf 3: {"arg_names":...} (549 bytes and a newline): key_id 1ccc5644e1da30f8, seq 2
	// the first is receipts/000002.json: true
}

// exampleVKey is the log key of the ledger package's example: the
// Ed25519 key whose seed is the bytes 0x00, 0x01, ..., 0x1f.
const exampleVKey = "bank.example/ledger+1e25a6ab+AQOhB7/zzhC+HXDdGOdLwJln5NYwm6UNXx3chmQSVTG4"

func seededKey(first byte) ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = first + byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

type agents []ed25519.PrivateKey

func (as agents) Lookup(id string) (ed25519.PublicKey, bool) {
	for _, k := range as {
		if pub := k.Public().(ed25519.PublicKey); agentkey.KeyID(pub) == id {
			return pub, true
		}
	}
	return nil, false
}

func openLog(path string, as ...ed25519.PrivateKey) *ledger.Log {
	seed := seededKey(0).Seed()
	skey := "PRIVATE+KEY+bank.example/ledger+1e25a6ab+" + base64.StdEncoding.EncodeToString(append([]byte{1}, seed...))
	signer, err := note.NewSigner(skey)
	if err != nil {
		panic(err)
	}
	l, err := ledger.Open(path, ledger.Options{Origin: "bank.example/ledger", Signer: signer, Agents: agents(as)})
	if err != nil {
		panic(err)
	}
	return l
}

func chain(k ed25519.PrivateKey, n int) [][]byte {
	var out [][]byte
	prev := receipt.FirstPrev
	for i := range n {
		b, err := receipt.Sign(&receipt.Receipt{
			Seq: uint64(i + 1), Time: time.Date(2026, 12, 3, 9, 0, i, 0, time.UTC), Decision: receipt.Deny,
			Server: "bank", Tool: "transfer", Rule: "name.write_word", Reason: "writes are denied", ArgNames: []string{},
			ArgsSHA256: strings.Repeat("0", 64), PolicyID: "p", PolicySHA256: strings.Repeat("0", 64), Prev: prev,
		}, k)
		if err != nil {
			panic(err)
		}
		out = append(out, b)
		sum := receipt.Hash(b)
		prev = hex.EncodeToString(sum[:])
	}
	return out
}
