package main

import (
	"fmt"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/proxy/policy"
	"github.com/bankdoor/bankdoor/verifier"
)

func cmdVerify(e *env, args []string) int {
	fs := newFlags(e, "verify", "verify DIR --pub PEM [--policy P]")
	pubPath := fs.String("pub", "", "the agent's public key (SPKI PEM, bankdoor.pub.pem) (required)")
	policyPath := fs.String("policy", "", "also require every receipt's policy_sha256 to be this policy file's")
	pos, _, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return fail(e, exitUsage, "verify: give exactly one receipts directory, e.g. bankdoor verify .bankdoor/receipts --pub bankdoor.pub.pem")
	}
	if !required(e, fs, "pub") {
		return exitUsage
	}
	pub, err := agentkey.LoadPublic(*pubPath)
	if err != nil {
		return fail(e, exitUsage, "verify: --pub: %v", err)
	}
	var opts verifier.Options
	if *policyPath != "" {
		p, err := policy.Load(*policyPath)
		if err != nil {
			return fail(e, exitUsage, "verify: --policy: %v", err)
		}
		opts.PolicySHA256 = p.SHA256
	}
	rep, err := verifier.VerifyDir(pos[0], pub, opts)
	if err != nil {
		return fail(e, exitFailure, "verify: FAILED: %v", err)
	}
	fmt.Fprintf(e.stdout, "%s: ok: %d receipts, seq %d..%d, key_id %s, head %x\n",
		pos[0], len(rep.Receipts), rep.FirstSeq, rep.LastSeq, rep.KeyID, rep.Head)
	return exitOK
}
