package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
	"github.com/bankdoor/bankdoor/verifier/bundle"
)

// exportTimeout bounds a whole export.
const exportTimeout = 30 * time.Minute

const exportSynopsis = "export (--ledger URL | --ledger-db PATH [--ledger-key FILE]) (--key-id K --out DIR | --tiles DIR) [--log-key VKEY [--witness-key VKEY]... [--witness-quorum N]]"

// cmdExport writes an export bundle (package verifier/bundle) of one
// agent's receipts: from a remote ledger, or from the embedded ledger's
// file, which must not be open in a running proxy.
func cmdExport(e *env, args []string) int {
	fs := newFlags(e, "export", exportSynopsis)
	var remote remoteFlags
	remote.register(fs.FlagSet, "the ledger to export from (bankdoor ledger serve)")
	db := fs.String("ledger-db", "", "export from this embedded ledger file instead (e.g. .bankdoor/receipts/.ledger.db; stop the proxies that use it first)")
	keyFile := fs.String("ledger-key", "", "with --ledger-db: the embedded ledger's log key file (default: "+ledgerKeyFile+" in the key directory)")
	keyID := fs.String("key-id", "", "the agent's key_id: the first 16 hex digits of SHA-256 of its public key, as in its receipts (required)")
	out := fs.String("out", "", "the bundle directory to create; it must not exist or be empty (required without --tiles)")
	tilesDir := fs.String("tiles", "", "instead of one agent's bundle, write the whole log as c2sp.org/tlog-tiles static files (checkpoint, tile/...) to this new or empty directory, for any web server to host; from --ledger URL each tile is verified against the checkpoint (needs --log-key)")
	var pol policyFlags
	pol.register(fs.FlagSet, "the ledger's verifier key, <origin>+<hash>+<key> (the line of its .vkey file): check the checkpoint with it (and the --witness-key quorum) before writing, and put it in the bundle; with --ledger-db, taken from --ledger-key")
	pos, _, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return fs.usageErr("export takes no arguments (got %q); the bundle directory is --out DIR", pos[0])
	}
	if *tilesDir != "" {
		return exportTiles(e, &remote, *db, *keyFile, &pol, *tilesDir, *keyID != "" || *out != "")
	}
	if !required(fs, "key-id", "out") {
		return exitUsage
	}
	if len(*keyID) != 16 || strings.Trim(*keyID, "0123456789abcdef") != "" {
		return exitErr(e, exitUsage, hint(fmt.Errorf("--key-id %q is not a key_id: 16 lower-case hex digits", *keyID),
			"give the key_id in the agent's receipts (bankdoor keygen prints it)"))
	}
	if err := checkExportFlags(&remote, *db, *keyFile); err != nil {
		return exitErr(e, exitUsage, err)
	}
	src, err := exportSource(&remote, *db, *keyFile, &pol)
	if err != nil {
		return exitErr(e, exitUsage, err)
	}
	var p *cosignature.Policy
	if pol.logKey != "" || len(pol.witnesses) > 0 {
		if p, err = pol.policy(); err != nil {
			return exitErr(e, exitUsage, err)
		}
	}
	if err := checkOut("out", *out); err != nil {
		return exitErr(e, exitFailure, err)
	}
	if src.open != nil { // the embedded ledger's file, last: it is the one thing opened for writing
		if err := src.open(); err != nil {
			return exitErr(e, exitFailure, err)
		}
	}
	defer src.close()
	if p == nil {
		e.warningf("without --log-key the checkpoint is exported unchecked and %s is left empty; bankdoor verify checks it with the keys its user trusts", bundle.LogKeyFile)
	}
	ctx, cancel := context.WithTimeout(context.Background(), exportTimeout)
	defer cancel()
	b, err := export(ctx, src.Source, p, &pol, *keyID, *out)
	if err != nil {
		return exitErr(e, exitFailure, exportHint(err, *db))
	}
	fmt.Fprintf(e.stdout, "%s: %d receipts of key_id %s, seq 1..%d, in the checkpoint of %s at size %d; %d later entries of the log in %s\n",
		*out, b.Head.Seq, b.KeyID, b.Head.Seq, strings.SplitN(string(b.Checkpoint), "\n", 2)[0], b.Size, len(b.Tail)-1, bundle.TailFile)
	return exitOK
}

// exportHint adds to an error of export what the user can do about it.
func exportHint(err error, db string) error {
	switch {
	case errors.Is(err, bundle.ErrNoReceipts):
		return hint(err, "check --key-id: the first 16 hex digits of SHA-256 of the agent's public key, as in its receipts")
	case errors.Is(err, bundle.ErrBrokenChain) && db != "":
		return hint(err, "check the ledger file with bankdoor ledger fsck --db %s", db)
	case errors.Is(err, bundle.ErrBrokenChain):
		return hint(err, "the ledger is inconsistent: tell its operator, who can check it with bankdoor ledger fsck")
	case errors.Is(err, cosignature.ErrQuorum):
		return hint(err, "wait until the anchor has collected a quorum of cosignatures for the latest checkpoint, then export again")
	case errors.Is(err, fs.ErrExist):
		return hint(err, "give --out a new or empty directory")
	}
	return ledgerHint(err)
}

// checkOut checks that the directory of --flag does not exist or is
// empty, before any work is done (bundle.Write and tiles.Export refuse
// to replace a file too).
func checkOut(flag, dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := creatable(dir); err != nil {
			return hint(fmt.Errorf("--%s %s: %w", flag, dir, err), "give --%s a directory that can be created", flag)
		}
		return nil
	case err != nil:
		return hint(fmt.Errorf("--%s %s: %w", flag, dir, err), "give --%s a new or empty directory that can be written", flag)
	case len(entries) > 0:
		return hint(fmt.Errorf("--%s %s: exists and is not empty", flag, dir), "give --%s a new or empty directory", flag)
	}
	return nil
}

// export fetches the checkpoint, checks it with p, collects the bundle
// and writes it to out.
func export(ctx context.Context, src bundle.Source, p *cosignature.Policy, keys *policyFlags, keyID, out string) (*bundle.Bundle, error) {
	cpNote, err := src.Checkpoint(ctx)
	if err != nil {
		return nil, fmt.Errorf("get the checkpoint: %w", err)
	}
	size, err := checkpointSize(cpNote, p)
	if err != nil {
		return nil, err
	}
	b, files, err := bundle.Export(ctx, src, keyID, cpNote, size)
	if err != nil {
		return nil, err
	}
	b.LogKey, b.Witnesses = keys.logKey, keys.witnesses
	if err := bundle.Write(out, b, files); err != nil {
		return nil, err
	}
	return b, nil
}

// checkpointSize returns the tree size of the checkpoint note n, which
// must satisfy p if p is not nil.
func checkpointSize(n []byte, p *cosignature.Policy) (uint64, error) {
	if p != nil {
		cp, err := p.Verify(n)
		if err != nil {
			return 0, fmt.Errorf("the ledger's checkpoint: %w", err)
		}
		return cp.Size, nil
	}
	text, _, ok := bytes.Cut(n, []byte("\n\n"))
	var cp log.Checkpoint
	if _, err := cp.Unmarshal(append(text, '\n')); !ok || err != nil {
		return 0, hint(fmt.Errorf("the ledger's checkpoint is not a checkpoint note: %v", err), "check that --ledger is a bankdoor ledger")
	}
	return cp.Size, nil
}

// checkExportFlags checks that the flags name one ledger.
func checkExportFlags(remote *remoteFlags, db, keyFile string) error {
	switch {
	case remote.url != "" && db != "":
		return hint(errors.New("--ledger and --ledger-db do not go together"), "export from a remote ledger (--ledger URL) or from an embedded ledger's file (--ledger-db PATH)")
	case remote.url != "" && keyFile != "":
		return hint(errors.New("--ledger-key is for --ledger-db"), "a remote ledger's checkpoints are checked with --log-key VKEY")
	case db != "" && (remote.ca != "" || remote.tokenEnv != ""):
		return errors.New("--ledger-ca and --ledger-token-env are for --ledger URL, not --ledger-db")
	case remote.url == "" && db == "":
		return hint(errors.New("no ledger to export from"), "give --ledger URL (a ledger server) or --ledger-db PATH (the embedded ledger, e.g. .bankdoor/receipts/.ledger.db)")
	}
	return nil
}

// exportSrc is the ledger an export reads. For an embedded ledger's
// file, open opens it: the caller does so once every flag is checked.
type exportSrc struct {
	bundle.Source
	open  func() error
	close func()
	log   cosignedLog // the embedded ledger, once open
}

// exportSource makes the source the flags name, checking the keys; the
// embedded ledger's verifier key becomes pol.logKey.
func exportSource(remote *remoteFlags, db, keyFile string, pol *policyFlags) (*exportSrc, error) {
	if remote.url != "" {
		client, err := remote.client()
		if err != nil {
			return nil, err
		}
		return &exportSrc{Source: clientSource{client}, close: func() {}}, nil
	}
	signer, vkey, err := exportKey(keyFile, pol.logKey)
	if err != nil {
		return nil, err
	}
	pol.logKey = vkey
	v, err := cosignature.NewLogVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("--ledger-key: %w", err)
	}
	src := &exportSrc{close: func() {}}
	src.open = func() error {
		if _, err := os.Stat(db); err != nil { // ledger.Open would create it
			return fmt.Errorf("--ledger-db: %w", err)
		}
		l, err := ledger.Open(db, ledger.Options{Origin: signer.Name(), Signer: signer, Agents: oneAgent{}})
		switch {
		case errors.Is(err, ledger.ErrLocked):
			return hint(fmt.Errorf("--ledger-db %s: %w", db, err), "stop the proxies that use it first: the file is opened by one process at a time")
		case errors.Is(err, ledger.ErrOtherLog):
			return hint(fmt.Errorf("--ledger-db %s: %w", db, err), "give the log key this file was made with, --ledger-key FILE")
		case err != nil:
			return fmt.Errorf("--ledger-db %s: %w", db, err)
		}
		src.log = cosignedLog{l, v}
		src.Source, src.close = cosignedSource{l.Source(), src.log}, func() { l.Close() }
		return nil
	}
	return src, nil
}

// exportKey loads the embedded ledger's log key (--ledger-key, by default
// the one in the key directory) and returns it with its verifier key,
// which logKey, if given, must be.
func exportKey(keyFile, logKey string) (note.Signer, string, error) {
	if keyFile == "" {
		dir, err := agentkey.Dir()
		if err != nil {
			return nil, "", err
		}
		keyFile = filepath.Join(dir, ledgerKeyFile)
	}
	signer, err := ledger.LoadSigner(keyFile)
	if err != nil {
		return nil, "", fmt.Errorf("--ledger-key: %w", err)
	}
	skey, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, "", fmt.Errorf("--ledger-key: %w", err)
	}
	vkey, err := ledger.VerifierKey(strings.TrimSuffix(string(skey), "\n"))
	if err != nil {
		return nil, "", fmt.Errorf("--ledger-key %s: %w", keyFile, err)
	}
	if logKey != "" && logKey != vkey {
		return nil, "", hint(fmt.Errorf("--log-key is not the verifier key of %s (%s)", keyFile, vkey),
			"drop --log-key, or give the log key it belongs to with --ledger-key")
	}
	return signer, vkey, nil
}

// cosignedSource reads an embedded ledger's file whose checkpoints a
// proxy with --witness anchored: its checkpoint carries every
// cosignature stored for its size, as ledger serve's GetCheckpoint does.
type cosignedSource struct {
	bundle.Source
	l cosignedLog
}

func (s cosignedSource) Checkpoint(context.Context) ([]byte, error) { return s.l.Checkpoint() }

// clientSource reads a remote ledger through its Connect client.
type clientSource struct {
	c ledgerv1connect.LedgerServiceClient
}

func (s clientSource) Checkpoint(ctx context.Context) ([]byte, error) {
	r, err := s.c.GetCheckpoint(ctx, connect.NewRequest(&ledgerv1.GetCheckpointRequest{}))
	if err != nil {
		return nil, err
	}
	return r.Msg.GetCheckpoint(), nil
}

func (s clientSource) AgentHead(ctx context.Context, keyID string) (uint64, bool, error) {
	r, err := s.c.GetAgentHead(ctx, connect.NewRequest(&ledgerv1.GetAgentHeadRequest{KeyId: keyID}))
	if err != nil {
		return 0, false, err
	}
	return r.Msg.GetIndex(), r.Msg.GetFound(), nil
}

func (s clientSource) Entries(ctx context.Context, start, count uint64) ([][]byte, error) {
	r, err := s.c.GetEntries(ctx, connect.NewRequest(&ledgerv1.GetEntriesRequest{Start: start, Count: count}))
	if err != nil {
		return nil, err
	}
	return r.Msg.GetEntries(), nil
}

func (s clientSource) InclusionProof(ctx context.Context, index, size uint64) ([][]byte, error) {
	r, err := s.c.GetInclusionProof(ctx, connect.NewRequest(&ledgerv1.GetInclusionProofRequest{
		Leaf: &ledgerv1.GetInclusionProofRequest_Index{Index: index}, TreeSize: size,
	}))
	if err != nil {
		return nil, err
	}
	if r.Msg.GetIndex() != index || r.Msg.GetTreeSize() != size {
		return nil, fmt.Errorf("the ledger answered with the proof of leaf %d at size %d", r.Msg.GetIndex(), r.Msg.GetTreeSize())
	}
	return r.Msg.GetHashes(), nil
}
