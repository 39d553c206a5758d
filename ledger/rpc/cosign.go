package rpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"connectrpc.com/connect"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/ledger"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
)

// MaxCosignatureBytes caps AddCosignature's cosignature field: a few
// signature lines ("— name base64\n": 104 base64 characters for an
// Ed25519 cosignature/v1, 3,244 for an ML-DSA-44 one), as many as one
// witness returns with an Ed25519 and an ML-DSA-44 key and more.
const MaxCosignatureBytes = 8 << 10

// cosigning is what serving and accepting cosignatures needs.
type cosigning struct {
	logKey    note.Verifier
	witnesses []note.Verifier // AddCosignature accepts lines by these keys
	store     *ledger.CosignatureStore

	mu       sync.Mutex
	last     []byte // the checkpoint of the last cosigned note served
	cosigned []byte // that note
}

// Cosign makes the service serve witness cosignatures and accept them:
// GetCheckpoint and WatchCheckpoints return the latest checkpoint with
// every cosignature the log's CosignatureStore holds for its size
// (cosignature.Cosigned), and AddCosignature stores lines by one of witnesses,
// once they verify over the log's own checkpoint of that size
// (ledger.Log.CheckpointAt, cosignature.Verify). logKey must be the log's
// verifier key, which signed its latest checkpoint. Witness key names must
// be unique: a cosignature is stored under its key's name. Without Cosign
// the service serves the log's signature only and refuses AddCosignature.
// Call it before Handler.
func (s *Service) Cosign(logKey note.Verifier, witnesses []note.Verifier) error {
	if _, _, err := cosignature.Open(s.log.Checkpoint(), logKey); err != nil {
		return fmt.Errorf("log key %s+%08x: %w", logKey.Name(), logKey.KeyHash(), err)
	}
	if err := UniqueWitnesses(witnesses); err != nil {
		return err
	}
	s.cosign = &cosigning{logKey: logKey, witnesses: witnesses, store: s.log.CosignatureStore()}
	return nil
}

// UniqueWitnesses refuses two witness keys with the same name: a
// cosignature is stored under its key's name.
func UniqueWitnesses(witnesses []note.Verifier) error {
	seen := make(map[string]bool)
	for _, w := range witnesses {
		if seen[w.Name()] {
			return fmt.Errorf("two witness keys are named %q; a cosignature is stored under its key's name, so each witness needs its own", w.Name())
		}
		seen[w.Name()] = true
	}
	return nil
}

// checkpoint returns the latest checkpoint with its stored cosignatures.
// While the database cannot be read it returns the note it last served
// for that checkpoint, or the checkpoint with the log's signature only.
func (s *Service) checkpoint() ([]byte, error) {
	cp := s.log.Checkpoint()
	if len(cp) == 0 {
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("the ledger has no checkpoint yet; retry shortly"))
	}
	if s.cosign == nil {
		return cp, nil
	}
	c := s.cosign
	cosigned, err := cosignature.Cosigned(cp, c.logKey, c.store.Cosignatures)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		c.last, c.cosigned = cp, cosigned
		return cosigned, nil
	case errors.Is(err, ledger.ErrUnavailable) && bytes.Equal(cp, c.last):
		return c.cosigned, nil
	case errors.Is(err, ledger.ErrUnavailable):
		// The database is down: the log's own signature is what can be
		// served; a client that needs cosignatures asks again.
		s.logger.Warn("serving the checkpoint without its cosignatures: the database is unreachable", "err", err)
		return cp, nil
	}
	return nil, s.toConnect(err)
}

// cosignatureAdded returns a channel closed when a cosignature is next
// stored; nil (never ready) when the service serves none.
func (s *Service) cosignatureAdded() <-chan struct{} {
	if s.cosign == nil {
		return nil
	}
	return s.log.CosignatureAdded()
}

// AddCosignature implements LedgerService.AddCosignature.
func (s *Service) AddCosignature(ctx context.Context, req *connect.Request[ledgerv1.AddCosignatureRequest]) (*connect.Response[ledgerv1.AddCosignatureResponse], error) {
	if s.cosign == nil || len(s.cosign.witnesses) == 0 {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New(
			"this ledger accepts no cosignatures: it trusts no witness key"))
	}
	size, lines := req.Msg.GetTreeSize(), req.Msg.GetCosignature()
	if err := checkCosignature(lines); err != nil {
		return nil, err
	}
	if cur := s.log.Size(); size > cur {
		return nil, connect.NewError(connect.CodeOutOfRange, fmt.Errorf(
			"tree_size %d is beyond the latest checkpoint's size %d; a witness cannot have cosigned it", size, cur))
	}
	cp, err := s.log.CheckpointAt(size)
	if err != nil {
		return nil, s.toConnect(err)
	}
	w, verified, err := s.verifyCosignature(cp, lines)
	if err != nil {
		s.logger.Warn("cosignature refused", "caller", CallerName(ctx), "peer", req.Peer().Addr, "size", size, "err", err)
		return nil, connect.NewError(connect.CodePermissionDenied, err)
	}
	if err := s.cosign.store.Put(w.Name(), size, verified); err != nil {
		return nil, s.toConnect(err)
	}
	s.logger.Info("cosignature added", "caller", CallerName(ctx), "witness", w.Name(), "size", size)
	return connect.NewResponse(&ledgerv1.AddCosignatureResponse{Witness: w.Name()}), nil
}

func checkCosignature(lines []byte) error {
	switch {
	case len(lines) == 0:
		return invalid("cosignature is empty; send the witness's signature line(s) as add-checkpoint returned them")
	case len(lines) > MaxCosignatureBytes:
		return invalid("cosignature is %d bytes, over the %d-byte limit; send one witness's signature line(s)", len(lines), MaxCosignatureBytes)
	}
	return nil
}

// verifyCosignature returns the configured witness whose lines verify
// over cp, and those lines. It fails if a line by a configured key does
// not verify, if there is none, or if lines by two witnesses are sent.
func (s *Service) verifyCosignature(cp, lines []byte) (note.Verifier, []byte, error) {
	var found note.Verifier
	var verified []byte
	for _, w := range s.cosign.witnesses {
		got, err := cosignature.Verify(cp, lines, w)
		switch {
		case errors.Is(err, cosignature.ErrNoCosignature):
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("cosignature for witness %s+%08x: %w", w.Name(), w.KeyHash(), err)
		case found != nil:
			return nil, nil, fmt.Errorf("cosignature holds lines by two witnesses, %s and %s; send each witness's lines in its own call", found.Name(), w.Name())
		}
		found, verified = w, got
	}
	if found == nil {
		return nil, nil, fmt.Errorf("cosignature %q has no line by a witness key this ledger trusts", truncate(string(lines), 200))
	}
	return found, verified, nil
}
