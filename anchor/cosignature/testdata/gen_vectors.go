//go:build ignore

// gen_vectors writes omniwitness-mixed.txtar: a checkpoint of a small log,
// signed by a new Ed25519 log key and cosigned by two runs of the real
// omniwitness (github.com/transparency-dev/witness cmd/omniwitness, the
// version tools/go.mod pins), one with an Ed25519 key and one with an
// ML-DSA-44 key (c2sp.org/tlog-cosignature, cosignature/v1 types 0x04 and
// 0x06). Run it from the module root:
//
//	go run ./anchor/cosignature/testdata/gen_vectors.go
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
	flog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
	"github.com/bankdoor/bankdoor/internal/omniwitness"
)

const out = "anchor/cosignature/testdata/omniwitness-mixed.txtar"

func main() {
	dir, err := os.MkdirTemp("", "gen-vectors-")
	check(err)
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "omniwitness")
	check(omniwitness.Build(context.Background(), "", bin))

	skey, vkey, err := note.GenerateKey(rand.Reader, "bankdoor.example/ledger")
	check(err)
	signer, err := note.NewSigner(skey)
	check(err)
	tree := testonly.New(rfc6962.DefaultHasher)
	for i := range 7 {
		tree.AppendData(fmt.Appendf(nil, "receipt %d", i))
	}
	cp := flog.Checkpoint{Origin: signer.Name(), Size: tree.Size(), Hash: tree.Hash()}
	signed, err := note.Sign(&note.Note{Text: string(cp.Marshal())}, signer)
	check(err)

	var lines [][]byte
	var wkeys []string
	for _, start := range []func(bin, dir, name, logVKey string) (*omniwitness.Witness, error){omniwitness.Start, omniwitness.StartMLDSA} {
		name := "witness.example/ed25519"
		if len(wkeys) == 1 {
			name = "witness.example/mldsa"
		}
		wdir := filepath.Join(dir, name[len("witness.example/"):])
		check(os.MkdirAll(wdir, 0o755))
		w, err := start(bin, wdir, name, vkey)
		check(err)
		c, err := tlogwitness.New(w.URL, w.VKey)
		check(err)
		line, err := c.AddCheckpoint(context.Background(), 0, nil, signed)
		w.Stop()
		check(err)
		lines, wkeys = append(lines, line), append(wkeys, w.VKey)
	}
	logKey, err := cosignature.NewLogVerifier(vkey)
	check(err)
	merged, err := cosignature.Merge(signed, logKey, lines...)
	check(err)
	a := &txtar.Archive{
		Comment: fmt.Appendf(nil, "Made %s by anchor/cosignature/testdata/gen_vectors.go: a checkpoint signed by a new\n"+
			"Ed25519 log key and cosigned by the real omniwitness (%s@%s)\n"+
			"run twice, once with an Ed25519 key (cosignature/v1 type 0x04) and once with an\n"+
			"ML-DSA-44 key (type 0x06), each over tlog-witness add-checkpoint on loopback.\n",
			time.Now().UTC().Format(time.DateOnly), omniwitness.Pkg, omniwitness.Version),
		Files: []txtar.File{
			{Name: "log.vkey", Data: []byte(vkey + "\n")},
			{Name: "witness-ed25519.vkey", Data: []byte(wkeys[0] + "\n")},
			{Name: "witness-mldsa.vkey", Data: []byte(wkeys[1] + "\n")},
			{Name: "checkpoint", Data: merged},
		},
	}
	check(os.WriteFile(out, txtar.Format(a), 0o644))
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
