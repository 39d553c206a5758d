package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/proxy/policy"
	"github.com/bankdoor/bankdoor/verifier"
	"github.com/bankdoor/bankdoor/verifier/bundle"
)

// verifyTimeout bounds the online checks against a ledger.
const verifyTimeout = 5 * time.Minute

func cmdVerify(e *env, args []string) int {
	fs := newFlags(e, "verify", "verify DIR --pub PEM [--policy P] [--checkpoint FILE (--log-key VKEY [--witness-key VKEY]... [--witness-quorum N] | --policy-file F) | --ledger URL --log-key VKEY]")
	pubPath := fs.String("pub", "", "the agent's public key (SPKI PEM, bankdoor.pub.pem) (required)")
	policyPath := fs.String("policy", "", "also require every receipt's policy_sha256 to be this policy file's")
	var remote remoteFlags
	remote.register(fs.FlagSet, "also prove every receipt is in the ledger at this URL (bankdoor ledger serve), against its signed checkpoint")
	var anchor policyFlags
	anchor.register(fs.FlagSet, "the ledger's verifier key, <origin>+<hash>+<key>: the line of its .vkey file (with --ledger or --checkpoint)")
	policyFile := fs.String("policy-file", "", "offline, with --checkpoint: a C2SP tlog-policy file (c2sp.org/tlog-policy) naming the trusted logs, witnesses and quorum, instead of --log-key, --witness-key and --witness-quorum")
	cpPath := fs.String("checkpoint", "", "offline: prove against this checkpoint note (a bundle's checkpoint file, or one from GetCheckpoint) that no receipt it covers is missing; with --log-key and the witnesses' --witness-key")
	pos, _, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return fs.usageErr("verify takes exactly one receipts directory (got %d arguments)", len(pos))
	}
	if !required(fs, "pub") {
		return exitUsage
	}
	pub, err := agentkey.LoadPublic(*pubPath)
	if err != nil {
		return fail(e, exitUsage, "--pub: %w", err)
	}
	if *cpPath != "" || len(anchor.witnesses) > 0 || flagSet(fs.FlagSet, "witness-quorum") || *policyFile != "" {
		if remote.url != "" {
			return exitErr(e, exitUsage, hint(errors.New("--checkpoint and --ledger do not go together"),
				"--checkpoint is the offline check, --ledger the online one: give one of them"))
		}
		return verifyAnchored(e, pos[0], pub, *policyPath, *cpPath, *policyFile, &anchor)
	}
	online, err := onlineCheck(&remote, anchor.logKey)
	if err != nil {
		return exitErr(e, exitUsage, err)
	}
	opts, err := verifyOptions(*policyPath)
	if err != nil {
		return exitErr(e, exitUsage, err)
	}
	if bundle.IsBundle(pos[0]) {
		return exitErr(e, exitUsage, hint(fmt.Errorf("%s is an export bundle", pos[0]),
			"verify it with --checkpoint %s --log-key VKEY [--witness-key VKEY]..., or its receipts alone with bankdoor verify %s",
			filepath.Join(pos[0], bundle.CheckpointFile), filepath.Join(pos[0], bundle.ReceiptsDir)))
	}
	rep, err := verifier.VerifyDir(pos[0], pub, opts)
	if err != nil {
		return exitErr(e, exitFailure, verifyError(err))
	}
	fmt.Fprintf(e.stdout, "%s: ok: %d receipts, seq %d..%d, key_id %s, head %x\n",
		pos[0], len(rep.Receipts), rep.FirstSeq, rep.LastSeq, rep.KeyID, rep.Head)
	if online == nil {
		return exitOK
	}
	return online(e, rep)
}

// verifyError says that verification failed if err is a verifier's
// finding, rather than a file it could not read.
func verifyError(err error) error {
	var ve *verifier.Error
	var me *verifier.MissingError
	var nl *verifier.NotInLogError
	if errors.As(err, &ve) || errors.As(err, &me) || errors.As(err, &nl) || errors.Is(err, cosignature.ErrLogSignature) ||
		errors.Is(err, cosignature.ErrQuorum) || errors.Is(err, cosignature.ErrBadCosignature) || errors.Is(err, cosignature.ErrMalformed) {
		return fmt.Errorf("verification failed: %w", err)
	}
	return err
}

// verifyOptions returns the options the --policy flag asks for.
func verifyOptions(policyPath string) (verifier.Options, error) {
	var opts verifier.Options
	if policyPath != "" {
		p, err := policy.Load(policyPath)
		if err != nil {
			return opts, fmt.Errorf("--policy: %w", err)
		}
		opts.PolicySHA256 = p.SHA256
	}
	return opts, nil
}

// onlineCheck checks the --ledger and --log-key flags and returns the
// check to run after the offline one, or nil if there is none.
func onlineCheck(remote *remoteFlags, logKey string) (func(*env, *verifier.Report) int, error) {
	if remote.url == "" {
		if logKey != "" || remote.ca != "" || remote.tokenEnv != "" {
			return nil, hint(errors.New("--log-key, --ledger-ca and --ledger-token-env need --ledger or --checkpoint"),
				"give the ledger's URL with --ledger (the online check), or its checkpoint with --checkpoint FILE (offline)")
		}
		return nil, nil
	}
	if logKey == "" {
		return nil, hint(errors.New("--ledger needs --log-key VKEY"),
			"give the ledger's verifier key: bankdoor ledger keygen prints it and writes it to FILE.vkey")
	}
	v, err := ledger.LoadVerifier(logKey)
	if err != nil {
		return nil, hint(fmt.Errorf("--log-key: %w", err), `pass the key itself, e.g. --log-key "$(cat ledger.key.vkey)"`)
	}
	client, err := remote.client()
	if err != nil {
		return nil, err
	}
	return func(e *env, rep *verifier.Report) int {
		ctx, cancel := context.WithTimeout(context.Background(), verifyTimeout)
		defer cancel()
		lr, err := verifier.VerifyInLog(ctx, rep, client, v)
		var ve *verifier.Error
		var nl *verifier.NotInLogError
		switch {
		case errors.As(err, &ve) || errors.As(err, &nl):
			return fail(e, exitFailure, "verification failed: --ledger %s: %w", remote.url, err)
		case err != nil:
			return exitErr(e, exitFailure, ledgerHint(fmt.Errorf("--ledger %s: %w", remote.url, err)))
		}
		fmt.Fprintf(e.stdout, "%s: ok: %d receipts in the log %s, checkpoint size %d, root %x\n",
			rep.Dir, len(rep.Receipts), lr.Origin, lr.Size, lr.Root)
		return exitOK
	}, nil
}
