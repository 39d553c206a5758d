package rpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"connectrpc.com/connect"

	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// Request limits.
const (
	// MaxAppendReceipts is the most receipts one Append may carry.
	MaxAppendReceipts = 1000
	// MaxRequestBytes caps a request message on the wire: a full Append,
	// 1000 receipts of receipt.MaxSize bytes, base64-encoded in the JSON
	// codec (4/3 of the bytes), with room for the framing.
	MaxRequestBytes = MaxAppendReceipts*receipt.MaxSize*4/3 + 1<<20
	// MaxReadRequestBytes caps the message of every other request: a
	// leaf hash and a few numbers, or AddCosignature's lines
	// (MaxCosignatureBytes, base64-encoded in the JSON codec).
	MaxReadRequestBytes = MaxCosignatureBytes*4/3 + 1<<10
)

// Service serves one ledger.Log as bankdoor.ledger.v1.LedgerService.
type Service struct {
	log    *ledger.Log
	logger *slog.Logger
	cosign *cosigning // nil: the log's signature only; set by Cosign

	stopOnce sync.Once
	stop     chan struct{} // closed by Stop: ends watches, fails health
}

// New returns a Service over l. A nil logger discards.
func New(l *ledger.Log, logger *slog.Logger) *Service {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Service{log: l, logger: logger, stop: make(chan struct{})}
}

// CompressMinBytes is the size from which an answer is compressed for a
// client that accepts compression: smaller ones (Append's answers,
// checkpoints, proofs) cost more to compress than they save, and were 11%
// of the server's CPU under an append load when every answer was gzipped.
const CompressMinBytes = 1024

// Handler returns the path prefix and the HTTP handler that serve the
// service with the Connect, gRPC and gRPC-Web protocols, behind auth's
// checks (nil: none). An Append message may be MaxRequestBytes long on the
// wire, any other request MaxReadRequestBytes. opts are added to the
// handlers' options (interceptors for metrics or traces).
func (s *Service) Handler(auth *Auth, opts ...connect.HandlerOption) (string, http.Handler) {
	if auth == nil {
		auth = &Auth{}
	}
	small := connect.WithCompressMinBytes(CompressMinBytes)
	path, appendH := ledgerv1connect.NewLedgerServiceHandler(s, append([]connect.HandlerOption{connect.WithReadMaxBytes(MaxRequestBytes), small}, opts...)...)
	_, readH := ledgerv1connect.NewLedgerServiceHandler(s, append([]connect.HandlerOption{connect.WithReadMaxBytes(MaxReadRequestBytes), small}, opts...)...)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == ledgerv1connect.LedgerServiceAppendProcedure {
			appendH.ServeHTTP(w, r)
			return
		}
		readH.ServeHTTP(w, r)
	})
	return path, auth.Middleware(h)
}

// Stop ends every WatchCheckpoints stream and makes Health report 503, so
// that an http.Server can shut down: call it before Server.Shutdown.
// Unary calls in flight are not affected.
func (s *Service) Stop() { s.stopOnce.Do(func() { close(s.stop) }) }

func (s *Service) stopped() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// Health answers GET with 200 and the log's size as JSON,
// {"status":"ok","size":N}, or 503 once Stop was called.
func (s *Service) Health() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed; use GET", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if s.stopped() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, `{"status":"stopping"}`)
			return
		}
		fmt.Fprintf(w, "{\"status\":\"ok\",\"size\":%d}\n", s.log.Size())
	})
}

// Append implements LedgerService.Append.
func (s *Service) Append(ctx context.Context, req *connect.Request[ledgerv1.AppendRequest]) (*connect.Response[ledgerv1.AppendResponse], error) {
	rs := req.Msg.GetReceipts()
	if err := checkAppend(rs); err != nil {
		return nil, err
	}
	idx, err := s.log.Append(ctx, rs)
	if err != nil {
		s.logger.Warn("append refused", "caller", CallerName(ctx), "peer", req.Peer().Addr, "receipts", len(rs), "err", err)
		return nil, s.toConnect(err)
	}
	if s.logger.Enabled(ctx, slog.LevelDebug) { // spares every call the attributes' allocations
		s.logger.Debug("append", "caller", CallerName(ctx), "receipts", len(rs), "first", idx[0])
	}
	return connect.NewResponse(&ledgerv1.AppendResponse{Indexes: idx}), nil
}

func checkAppend(rs [][]byte) error {
	if len(rs) == 0 {
		return invalid("receipts is empty; send at least one receipt file")
	}
	if len(rs) > MaxAppendReceipts {
		return invalid("receipts holds %d receipts, over the limit of %d per call; split the batch", len(rs), MaxAppendReceipts)
	}
	for i, r := range rs {
		if len(r) == 0 {
			return invalid("receipts[%d] is empty; send the receipt file's bytes", i)
		}
		if len(r) > receipt.MaxSize {
			return invalid("receipts[%d] is %d bytes, over the %d-byte receipt limit; it is not a receipt file", i, len(r), receipt.MaxSize)
		}
	}
	return nil
}

// GetCheckpoint implements LedgerService.GetCheckpoint.
func (s *Service) GetCheckpoint(ctx context.Context, req *connect.Request[ledgerv1.GetCheckpointRequest]) (*connect.Response[ledgerv1.GetCheckpointResponse], error) {
	cp, err := s.checkpoint()
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ledgerv1.GetCheckpointResponse{Checkpoint: cp}), nil
}

// GetInclusionProof implements LedgerService.GetInclusionProof.
func (s *Service) GetInclusionProof(ctx context.Context, req *connect.Request[ledgerv1.GetInclusionProofRequest]) (*connect.Response[ledgerv1.GetInclusionProofResponse], error) {
	size, err := s.treeSize("tree_size", req.Msg.GetTreeSize())
	if err != nil {
		return nil, err
	}
	index, err := s.leafIndex(req.Msg)
	if err != nil {
		return nil, err
	}
	if index >= size {
		return nil, connect.NewError(connect.CodeOutOfRange, fmt.Errorf(
			"leaf %d is not in the tree of size %d; prove it in a larger tree once a checkpoint covers it", index, size))
	}
	hashes, err := s.log.InclusionProof(index, size)
	if err != nil {
		return nil, s.toConnect(err)
	}
	return connect.NewResponse(&ledgerv1.GetInclusionProofResponse{Index: index, TreeSize: size, Hashes: hashes}), nil
}

// leafIndex resolves the request's leaf: its index, or the index of its
// leaf hash.
func (s *Service) leafIndex(m *ledgerv1.GetInclusionProofRequest) (uint64, error) {
	switch leaf := m.GetLeaf().(type) {
	case *ledgerv1.GetInclusionProofRequest_Index:
		return leaf.Index, nil
	case *ledgerv1.GetInclusionProofRequest_LeafHash:
		if n := len(leaf.LeafHash); n != 32 {
			return 0, invalid("leaf_hash is %d bytes, want 32 (the RFC 6962 leaf hash: SHA-256 of 0x00 and the receipt file)", n)
		}
		index, err := s.log.LeafIndex(leaf.LeafHash)
		if err != nil {
			return 0, s.toConnect(err)
		}
		return index, nil
	}
	return 0, invalid("set leaf_hash or index to say which leaf to prove")
}

// treeSize returns the size asked for in field, 0 meaning the latest
// checkpoint's, and refuses sizes beyond it.
func (s *Service) treeSize(field string, n uint64) (uint64, error) {
	size := s.log.Size()
	if n == 0 {
		n = size
	}
	if n > size {
		return 0, connect.NewError(connect.CodeOutOfRange, fmt.Errorf(
			"%s %d is beyond the latest checkpoint's size %d; ask for at most %d, or 0 for the latest", field, n, size, size))
	}
	if n == 0 {
		return 0, connect.NewError(connect.CodeOutOfRange, fmt.Errorf("the log is empty; there is nothing to prove until a receipt is appended"))
	}
	return n, nil
}

// GetConsistencyProof implements LedgerService.GetConsistencyProof.
func (s *Service) GetConsistencyProof(ctx context.Context, req *connect.Request[ledgerv1.GetConsistencyProofRequest]) (*connect.Response[ledgerv1.GetConsistencyProofResponse], error) {
	to, err := s.treeSize("to_size", req.Msg.GetToSize())
	if err != nil {
		return nil, err
	}
	from := req.Msg.GetFromSize()
	if from == 0 || from > to {
		return nil, invalid("from_size %d must be from 1 to to_size %d; a consistency proof is between two non-empty trees, the smaller first", from, to)
	}
	hashes, err := s.log.ConsistencyProof(from, to)
	if err != nil {
		return nil, s.toConnect(err)
	}
	return connect.NewResponse(&ledgerv1.GetConsistencyProofResponse{FromSize: from, ToSize: to, Hashes: hashes}), nil
}

// GetEntries implements LedgerService.GetEntries. It returns at most
// ledger.MaxEntries entries and none beyond the latest checkpoint.
func (s *Service) GetEntries(ctx context.Context, req *connect.Request[ledgerv1.GetEntriesRequest]) (*connect.Response[ledgerv1.GetEntriesResponse], error) {
	start, count := req.Msg.GetStart(), req.Msg.GetCount()
	size := s.log.Size()
	if start >= size {
		return nil, connect.NewError(connect.CodeOutOfRange, fmt.Errorf(
			"start %d is not below the latest checkpoint's size %d; ask for a start below it (GetCheckpoint has the size)", start, size))
	}
	if count == 0 || count > ledger.MaxEntries {
		count = ledger.MaxEntries
	}
	count = min(count, size-start)
	entries, err := s.log.Entries(start, count)
	if err != nil {
		return nil, s.toConnect(err)
	}
	return connect.NewResponse(&ledgerv1.GetEntriesResponse{Entries: entries}), nil
}

// GetAgentHead implements LedgerService.GetAgentHead.
func (s *Service) GetAgentHead(ctx context.Context, req *connect.Request[ledgerv1.GetAgentHeadRequest]) (*connect.Response[ledgerv1.GetAgentHeadResponse], error) {
	id := req.Msg.GetKeyId()
	if !isKeyID(id) {
		return nil, invalid("key_id %q is not 16 lower-case hex digits, as in receipts", truncate(id, 64))
	}
	h, ok, err := s.log.Head(ctx, id)
	if err != nil {
		return nil, s.toConnect(err)
	}
	resp := &ledgerv1.GetAgentHeadResponse{}
	if ok {
		resp = &ledgerv1.GetAgentHeadResponse{Found: true, Seq: h.Seq, ReceiptSha256: h.SHA256[:], Index: h.Index}
	}
	return connect.NewResponse(resp), nil
}

func isKeyID(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// WatchCheckpoints implements LedgerService.WatchCheckpoints: the latest
// checkpoint, then each new one, and the checkpoint again when a
// cosignature of it is stored, until the client goes away, the log closes
// or Stop is called. A slow client skips to the newest note.
func (s *Service) WatchCheckpoints(ctx context.Context, req *connect.Request[ledgerv1.WatchCheckpointsRequest], stream *connect.ServerStream[ledgerv1.WatchCheckpointsResponse]) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := s.log.Watch(ctx)
	var last []byte
	for {
		added := s.cosignatureAdded()
		select {
		case <-ctx.Done():
			return nil
		case <-s.stop:
			return connect.NewError(connect.CodeUnavailable, errors.New("the ledger server is shutting down; watch again when it is back"))
		case _, ok := <-ch:
			if !ok {
				return connect.NewError(connect.CodeUnavailable, errors.New("the ledger closed; watch again when it is back"))
			}
		case <-added:
		}
		cp, err := s.checkpoint()
		if err != nil {
			return err
		}
		if bytes.Equal(cp, last) {
			continue
		}
		if err := stream.Send(&ledgerv1.WatchCheckpointsResponse{Checkpoint: cp}); err != nil {
			return err
		}
		last = cp
	}
}
