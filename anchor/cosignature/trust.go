package cosignature

import "github.com/transparency-dev/formats/log"

// Trust decides which checkpoints a verifier trusts: a [*Policy] (one log
// key and a quorum of witnesses) or a C2SP tlog-policy file (package
// tlogpolicy: several logs, witness groups).
type Trust interface {
	// Verify checks the log's signature and the witnesses' quorum, with
	// the errors Policy.Verify gives.
	Verify(checkpoint []byte) (*Verified, error)
	// VerifyLog checks only the log's signature, as Open does.
	VerifyLog(checkpoint []byte) (*log.Checkpoint, error)
}

// VerifyLog checks the log's signature on checkpoint and parses it, as
// Open does with the policy's log key.
func (p *Policy) VerifyLog(checkpoint []byte) (*log.Checkpoint, error) {
	cp, _, err := Open(checkpoint, p.Log)
	return cp, err
}
