package proxy

import (
	"github.com/bankdoor/bankdoor/internal/jsonobj"
)

// filterInitializeParams drops the agent capabilities the policy does not
// relay (roots, sampling, elicitation unless exposed; experimental always),
// so the server never asks for what the proxy would refuse.
func (r *Relay) filterInitializeParams(params []byte) []byte {
	return r.filterCapabilities(params, clientCapabilities)
}

// filterInitializeResult advertises to the agent only what is relayed:
// tools always, the other server capabilities only when exposed.
func (r *Relay) filterInitializeResult(result []byte) []byte {
	return r.filterCapabilities(result, serverCapabilities)
}

func (r *Relay) filterCapabilities(raw []byte, allowed map[string]string) []byte {
	obj, err := jsonobj.Parse(raw)
	if err != nil {
		return raw // relayed unchanged; the peer's own parser will complain
	}
	for i, m := range obj {
		if m.Name != "capabilities" {
			continue
		}
		caps, err := jsonobj.Parse(m.Value)
		if err != nil {
			continue
		}
		var kept jsonobj.Object
		for _, c := range caps {
			feature, ok := allowed[c.Name]
			if ok && (feature == "" || r.exposes(feature)) {
				kept = append(kept, c)
			}
		}
		obj[i].Value = kept.Marshal()
	}
	return obj.Marshal()
}
