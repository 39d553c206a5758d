package bundle

import (
	"context"

	"github.com/bankdoor/bankdoor/ledger"
)

// LogSource is a Source that reads an open ledger.Log, such as the
// embedded ledger's .bankdoor/ledger.db.
func LogSource(l *ledger.Log) Source { return logSource{l} }

type logSource struct{ l *ledger.Log }

func (s logSource) Checkpoint(context.Context) ([]byte, error) { return s.l.Checkpoint(), nil }

func (s logSource) AgentHead(ctx context.Context, keyID string) (uint64, bool, error) {
	h, ok, err := s.l.Head(ctx, keyID)
	return h.Index, ok, err
}

func (s logSource) Entries(_ context.Context, start, count uint64) ([][]byte, error) {
	return s.l.Entries(start, count)
}

func (s logSource) InclusionProof(_ context.Context, index, size uint64) ([][]byte, error) {
	return s.l.InclusionProof(index, size)
}
