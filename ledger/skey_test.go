package ledger

import (
	"encoding/base64"
	"fmt"
)

// skeyString formats a note signer key: PRIVATE+KEY+name+hash+base64(1 || seed).
func skeyString(name string, hash uint32, seed []byte) string {
	return fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", name, hash, base64.StdEncoding.EncodeToString(append([]byte{1}, seed...)))
}
