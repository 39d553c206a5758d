package ledger

import "context"

// A Source reads a Log with the context-taking methods of a remote
// ledger's Connect client, so that an export reads either the same way:
// it is a verifier/bundle.Source. It lives here, not in the verifier, so
// that the offline verifier links no store.
type Source struct{ l *Log }

// Source returns l as a Source.
func (l *Log) Source() Source { return Source{l} }

// Checkpoint returns the latest checkpoint note.
func (s Source) Checkpoint(context.Context) ([]byte, error) { return s.l.Checkpoint(), nil }

// AgentHead returns the leaf index of keyID's last receipt, or found false.
func (s Source) AgentHead(ctx context.Context, keyID string) (index uint64, found bool, err error) {
	h, ok, err := s.l.Head(ctx, keyID)
	return h.Index, ok, err
}

// Entries returns up to count entries from leaf index start.
func (s Source) Entries(_ context.Context, start, count uint64) ([][]byte, error) {
	return s.l.Entries(start, count)
}

// InclusionProof returns the inclusion proof of leaf index at size.
func (s Source) InclusionProof(_ context.Context, index, size uint64) ([][]byte, error) {
	return s.l.InclusionProof(index, size)
}
