package attacks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// ArraysVariant is the fixture variant that serves get_transactions_by_ids,
// a read whose ids argument is an array, besides the default bank's five
// tools unchanged.
const ArraysVariant = "arrays"

// byIDs is the arrays variant's tool.
const byIDs = "get_transactions_by_ids"

// byIDsEntry is the allowlist entry Policy adds: the shipped policy's
// account_id, and up to 20 transaction ids as get_transactions lists them.
var byIDsEntry = []string{
	byIDs + ":",
	`  args:`,
	`    account_id: { type: string, required: true, pattern: "acc_[a-z0-9_]{1,32}", max_length: 40 }`,
	`    ids: { type: array, required: true, min_items: 1, max_items: 20, items: { type: string, pattern: "acc_[a-z0-9_]{1,32}_t[0-9]{2}", max_length: 40 } }`,
}

// Policy returns the policy the catalogue runs against: base, a policy
// for the fixture bank such as policies/bankdoor.yaml, with
// get_transactions_by_ids allowed on server bank for the array attacks
// (unpinned: see PinPolicy). The entry is inserted as lines before the
// first tool of bank, whose tools must be a block mapping; the rest of
// base is kept byte for byte. A base that already allows the tool is
// returned as it is.
func Policy(base []byte) ([]byte, error) {
	p, err := policy.Parse("base policy", base)
	if err != nil {
		return nil, err
	}
	bank := p.Servers["bank"]
	if bank == nil || len(bank.Tools) == 0 {
		return nil, errors.New("the base policy allows no tool of server bank; the catalogue is written against policies/bankdoor.yaml")
	}
	if bank.Tools[byIDs] != nil {
		return base, nil
	}
	first := slices.MinFunc(slices.Collect(maps.Values(bank.Tools)), func(a, b *policy.Tool) int {
		return a.Line - b.Line
	})
	start := lineStart(base, first.Line)
	if start < 0 || strings.TrimLeft(string(base[start:start+first.Column-1]), " ") != "" {
		return nil, fmt.Errorf("the tools of server bank in the base policy are not a block mapping (tool %q is not alone at the start of line %d)", first.Name, first.Line)
	}
	var entry bytes.Buffer
	for _, line := range byIDsEntry {
		entry.WriteString(strings.Repeat(" ", first.Column-1) + line + "\n")
	}
	out := slices.Concat(base[:start], entry.Bytes(), base[start:])
	q, err := policy.Parse("catalogue policy", out)
	if err != nil || q.Servers["bank"].Tools[byIDs] == nil || len(q.Servers["bank"].Tools) != len(bank.Tools)+1 {
		return nil, fmt.Errorf("adding %s to the base policy did not give the policy meant (%v)", byIDs, err)
	}
	return out, nil
}

// lineStart returns the byte offset of the 1-based line in b, or -1.
func lineStart(b []byte, line int) int {
	off := 0
	for range line - 1 {
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return off
}

// PinPolicy writes Policy(base) to path and pins every tool it allows on
// server bank with `bankdoor pin --write` against the fixture binary of
// f, run as the arrays variant (f's Env is not used): that variant serves
// the default bank's tools unchanged, so their pins hold for every
// variant.
func PinPolicy(ctx context.Context, bankdoor string, f mcptest.Fixture, base []byte, path string) error {
	data, err := Policy(base)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	f.Env = []string{"BANK_FIXTURE_VARIANT=" + ArraysVariant}
	cmd := exec.CommandContext(ctx, bankdoor, "pin", "--policy", path, "--server", "bank", "--write", "--", f.Bin)
	cmd.Env = mcptest.Env(f.Environ()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("bankdoor pin --write against %s (variant %s): %v\n%s", f.Bin, ArraysVariant, err, out)
	}
	return nil
}

// idsArgs are get_transactions_by_ids's arguments with the given ids.
func idsArgs(ids any) map[string]any {
	return map[string]any{"account_id": "acc_checking", "ids": ids}
}

// manyIDs returns n ids that each match the policy's pattern.
func manyIDs(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("acc_checking_t%02d", i%100)
	}
	return out
}

func arrayAttack(id, desc string, args any, rule string) Attack {
	return Attack{ID: id, Description: desc, Variant: ArraysVariant, Tool: byIDs, Args: args, Rule: rule}
}

// rawArrayAttack is a raw tools/call of get_transactions_by_ids with the
// given arguments.
func rawArrayAttack(id, desc, arguments, rule string, unsafe bool) Attack {
	a := rawAttack(id, desc, callFrame(`{"name":"`+byIDs+`","arguments":`+arguments+`}`), rule, unsafe)
	a.Variant = ArraysVariant
	return a
}

// hiddenItem is an object item that the arrays variant's
// get_transactions_by_ids reads as a transfer.
func hiddenItem() map[string]any {
	return map[string]any{"action": "transfer", "to_account": "acc_mallory", "amount_cents": 100000}
}

// arrayAttacks send get_transactions_by_ids, whose ids the policy allows
// as 1 to 20 strings of a pattern, what an array argument must refuse.
func arrayAttacks() []Attack {
	nested := arrayAttack("arrays.object-item", "an object among the ids, which the bank reads as a transfer", idsArgs([]any{"acc_checking_t01", hiddenItem()}), "args.nested")
	nested.Unsafe = true
	return []Attack{
		nested,
		arrayAttack("arrays.nested-array", "an array of ids inside the array of ids", idsArgs([]any{[]any{"acc_checking_t01", "acc_checking_t02"}}), "args.nested"),
		arrayAttack("arrays.object-for-array", "an object with index keys where the array goes", idsArgs(map[string]any{"0": "acc_checking_t01"}), "args.nested"),
		arrayAttack("arrays.array-for-string", "account_id as an array of accounts", map[string]any{"account_id": []any{"acc_checking", "acc_savings"}, "ids": []any{"acc_checking_t01"}}, "args.nested"),
		arrayAttack("arrays.string-for-array", "ids as one string", idsArgs("acc_checking_t01"), "args.type"),
		arrayAttack("arrays.null", "ids null: null is of no type", idsArgs(nil), "args.type"),
		arrayAttack("arrays.null-item", "a null among the ids", idsArgs([]any{"acc_checking_t01", nil}), "args.type"),
		arrayAttack("arrays.mixed-types", "a number and a boolean among the ids", idsArgs([]any{"acc_checking_t01", 7, true}), "args.type"),
		arrayAttack("arrays.empty", "no ids, below min_items 1", idsArgs([]any{}), "args.min_items"),
		arrayAttack("arrays.too-many", "21 ids, one past max_items 20", idsArgs(manyIDs(21)), "args.max_items"),
		arrayAttack("arrays.huge", "3000 ids, within the 64 KiB limit on arguments", idsArgs(manyIDs(3000)), "args.max_items"),
		arrayAttack("arrays.huge-bytes", "5000 ids, more than the 64 KiB limit on arguments", idsArgs(manyIDs(5000)), "args.too_large"),
		arrayAttack("arrays.item-pattern", "an id with SQL after it", idsArgs([]any{"acc_checking_t01", "acc_checking_t02'; DROP TABLE accounts;--"}), "args.pattern"),
		arrayAttack("arrays.item-newline", "an id followed by a newline", idsArgs([]any{"acc_checking_t01\n"}), "args.pattern"),
		rawArrayAttack("arrays.duplicate-in-item", "an object among the ids naming action twice, transfer last (last one wins on the bank)",
			`{"account_id":"acc_checking","ids":["acc_checking_t01",{"action":"none",`+smuggleJSON+`,"action":"transfer"}]}`, "args.duplicate", true),
		rawArrayAttack("arrays.lone-surrogate-item", `a lone surrogate \ud800 in an id`,
			`{"account_id":"acc_checking","ids":["acc_checking_t01","acc_checking_t0\ud800"]}`, "args.encoding", false),
	}
}
