// Package tlogpolicy reads C2SP transparency log policy files
// (https://c2sp.org/tlog-policy): which logs and witnesses a verifier
// trusts, and the quorum of witnesses a checkpoint needs.
//
// A policy is lines ending in "\n", their items separated by spaces and
// tabs; empty lines and lines starting with "#" are ignored:
//
//	log <vkey> [<url>]                  a trusted log; the vkey's name is its origin
//	witness <name> <vkey> [<url>]       a trusted witness (cosignature/v1 vkey, or Ed25519)
//	group <name> all|any|<k> <name>...  witnessed when k of its members are
//	quorum <name>                       the witness or group that must witness; "none": no witness
//
// A group or the quorum names only witnesses and groups defined on lines
// before it, each member once; names are one namespace and "none" is
// reserved; k is decimal, 1 <= k <= the members. Two keys that wrap the
// same public key are one signer whatever their names and key types
// (cosignature.KeySet): two logs or two witnesses with one key, or a
// witness with a log's key, are refused. Exactly one quorum line. Only tab,
// newline, printable ASCII and bytes with the high bit set may appear;
// names are compared as bytes. A [Policy] implements
// cosignature.Trust, as `bankdoor verify --policy-file` uses it; the
// URLs are kept but not used.
package tlogpolicy

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
)

// Limits of what Parse accepts (the spec asks for at least 32 of each).
const (
	MaxLogs      = 64
	MaxWitnesses = 256
	MaxGroups    = 256
	MaxSize      = 256 << 10
)

// Policy is a parsed policy file.
type Policy struct {
	Logs      []Entry
	Witnesses []Entry
	quorum    *node // nil: quorum none
	verifiers []note.Verifier
	logs      []note.Verifier
}

// Entry is a log or witness line.
type Entry struct {
	Name string // the witness's name in the policy; a log's origin
	VKey string
	URL  string // "" when the line has none
}

// node is a witness (key set) or a group of nodes, witnessed when at
// least k of its members are.
type node struct {
	key     string // a witness's "name+hash", as cosignature.Cosigner.Key
	k       int
	members []*node
}

func (n *node) witnessed(cosigned map[string]bool) bool {
	if n.members == nil {
		return cosigned[n.key]
	}
	got := 0
	for _, m := range n.members {
		if m.witnessed(cosigned) {
			got++
		}
	}
	return got >= n.k
}

// Parse strictly parses a policy file. An error names the line.
func Parse(data []byte) (*Policy, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("tlog-policy: %d bytes, more than %d", len(data), MaxSize)
	}
	if i := bytes.IndexFunc(data, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' || r == 0x7f }); i >= 0 {
		return nil, fmt.Errorf("tlog-policy: byte %d is the control character %#02x: only tab and newline are allowed", i, data[i])
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return nil, errors.New("tlog-policy: the last line does not end in a newline")
	}
	p := &Policy{}
	names := map[string]*node{}
	var keys cosignature.KeySet
	groups, quorums := 0, 0
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i, line := range lines {
		n := i + 1
		f := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		fail := func(format string, a ...any) error {
			return fmt.Errorf("tlog-policy: line %d: %s", n, fmt.Sprintf(format, a...))
		}
		switch f[0] {
		case "log":
			if len(f) < 2 || len(f) > 3 {
				return nil, fail("want log <vkey> [<url>]")
			}
			v, err := cosignature.NewLogVerifier(f[1])
			if err != nil {
				return nil, fail("%v", err)
			}
			if err := keys.Add(f[1], true, fmt.Sprintf("line %d", n)); err != nil {
				return nil, fail("%v", err)
			}
			if len(p.Logs) == MaxLogs {
				return nil, fail("more than %d logs", MaxLogs)
			}
			p.Logs = append(p.Logs, Entry{Name: v.Name(), VKey: f[1], URL: at(f, 2)})
			p.logs = append(p.logs, v)
		case "witness":
			if len(f) < 3 || len(f) > 4 {
				return nil, fail("want witness <name> <vkey> [<url>]")
			}
			if err := newName(names, f[1]); err != nil {
				return nil, fail("%v", err)
			}
			v, err := cosignature.NewWitnessVerifier(f[2])
			if err != nil {
				return nil, fail("witness %s: %v", f[1], err)
			}
			if err := keys.Add(f[2], false, fmt.Sprintf("line %d", n)); err != nil {
				return nil, fail("witness %s: %v", f[1], err)
			}
			if len(p.Witnesses) == MaxWitnesses {
				return nil, fail("more than %d witnesses", MaxWitnesses)
			}
			names[f[1]] = &node{key: fmt.Sprintf("%s+%08x", v.Name(), v.KeyHash())}
			p.Witnesses = append(p.Witnesses, Entry{Name: f[1], VKey: f[2], URL: at(f, 3)})
			p.verifiers = append(p.verifiers, v)
		case "group":
			if len(f) < 4 {
				return nil, fail("want group <name> all|any|<k> <name>...")
			}
			if err := newName(names, f[1]); err != nil {
				return nil, fail("%v", err)
			}
			if groups == MaxGroups {
				return nil, fail("more than %d groups", MaxGroups)
			}
			g := &node{}
			seen := map[string]bool{}
			for _, m := range f[3:] {
				switch {
				case m == "none":
					return nil, fail("group %s: none cannot be a member", f[1])
				case seen[m]:
					return nil, fail("group %s: %s is listed twice", f[1], m)
				case names[m] == nil:
					return nil, fail("group %s: %s is not a witness or group defined on an earlier line", f[1], m)
				}
				seen[m] = true
				g.members = append(g.members, names[m])
			}
			switch k := f[2]; k {
			case "all":
				g.k = len(g.members)
			case "any":
				g.k = 1
			default:
				v, err := strconv.Atoi(k)
				if err != nil || strconv.Itoa(v) != k || v < 1 || v > len(g.members) {
					return nil, fail("group %s: threshold %q is not all, any or a decimal from 1 to its %d members", f[1], k, len(g.members))
				}
				g.k = v
			}
			names[f[1]] = g
			groups++
		case "quorum":
			if len(f) != 2 {
				return nil, fail("want quorum <name>")
			}
			if quorums++; quorums > 1 {
				return nil, fail("a second quorum line: a policy has exactly one")
			}
			if f[1] != "none" {
				if p.quorum = names[f[1]]; p.quorum == nil {
					return nil, fail("quorum %s is not none or a witness or group defined on an earlier line", f[1])
				}
			}
		default:
			return nil, fail("%q is not log, witness, group or quorum", f[0])
		}
	}
	if quorums == 0 {
		return nil, errors.New("tlog-policy: no quorum line: a policy has exactly one (quorum none for no witnesses)")
	}
	return p, nil
}

func at(f []string, i int) string {
	if i < len(f) {
		return f[i]
	}
	return ""
}

// newName checks that name may be defined.
func newName(names map[string]*node, name string) error {
	switch {
	case name == "none":
		return errors.New("none is a reserved name")
	case names[name] != nil:
		return fmt.Errorf("%s is defined twice: witnesses and groups share one namespace", name)
	}
	return nil
}

// withLog calls try with each of the policy's logs whose name is the
// checkpoint's origin (several logs may share one) until one's signature
// verifies, that is until try fails with an error that does not wrap
// cosignature.ErrLogSignature, or succeeds; it returns try's last error.
func (p *Policy) withLog(checkpoint []byte, try func(l note.Verifier) error) error {
	origin, _, _ := bytes.Cut(checkpoint, []byte("\n"))
	err := fmt.Errorf("%w: the checkpoint's origin %q is none of the policy's %d log(s)", cosignature.ErrLogSignature, origin, len(p.logs))
	if len(p.logs) == 0 {
		err = fmt.Errorf("%w: the policy names no log", cosignature.ErrLogSignature)
	}
	for _, l := range p.logs {
		if l.Name() != string(origin) {
			continue
		}
		if err = try(l); !errors.Is(err, cosignature.ErrLogSignature) {
			return err
		}
	}
	return err
}

// VerifyLog checks that the checkpoint is signed by a log of the policy
// (of the origin it names).
func (p *Policy) VerifyLog(checkpoint []byte) (*log.Checkpoint, error) {
	var cp *log.Checkpoint
	err := p.withLog(checkpoint, func(l note.Verifier) (err error) {
		cp, _, err = cosignature.Open(checkpoint, l)
		return err
	})
	if err != nil {
		return nil, err
	}
	return cp, nil
}

// Verify checks the log's signature and that the witnesses whose
// cosignatures verify satisfy the quorum. A cosignature line by a known
// witness that does not verify is an error, as with cosignature.Policy.
func (p *Policy) Verify(checkpoint []byte) (*cosignature.Verified, error) {
	var v *cosignature.Verified
	err := p.withLog(checkpoint, func(l note.Verifier) (err error) {
		v, err = (&cosignature.Policy{Log: l, Witnesses: p.verifiers}).Verify(checkpoint)
		return err
	})
	if err != nil {
		return nil, err
	}
	if p.quorum == nil {
		return v, nil
	}
	cosigned := map[string]bool{}
	var by []string
	for _, c := range v.Cosigners {
		cosigned[c.Key] = true
		by = append(by, c.Key)
	}
	if !p.quorum.witnessed(cosigned) {
		if len(by) == 0 {
			by = []string{"none"}
		}
		return v, fmt.Errorf("%w: the policy's quorum is not met for %s size %d (cosigned by: %s)", cosignature.ErrQuorum, v.Origin, v.Size, strings.Join(by, ", "))
	}
	return v, nil
}
