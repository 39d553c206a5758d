package attacks

// AcknowledgePolicy is the policy the acknowledgement attacks are written
// against: the fixture's read-only policy (policies/bankdoor.yaml) with the
// transfers variant's list_transfers, whose name holds the write word
// "transfers", acknowledged. It is written without the pins of the
// fixture's tools: pin it with
//
//	bankdoor pin --policy P --server bank --write -- bank-server
//
// run with BANK_FIXTURE_VARIANT=transfers. list_transfers_refunds is a
// tool the fixture never lists, pinned by hand: it acknowledges only
// "transfers", so "refunds" still denies it (lint says so).
const AcknowledgePolicy = `version: 1
id: bankdoor-fixture-acknowledge
default: deny
require_pins: true
never_allow: [borrow]
servers:
  bank:
    tools:
      list_accounts:
        args: {}
      get_balances:
        args:
          account_id: { type: string, pattern: "acc_[a-z0-9_]{1,32}", max_length: 40 }
      get_transactions:
        args:
          account_id: { type: string, required: true, pattern: "acc_[a-z0-9_]{1,32}", max_length: 40 }
          limit: { type: integer, min: 1, max: 100 }
          since: { type: string, pattern: "\\d{4}-\\d{2}-\\d{2}", max_length: 10 }
      list_transfers:
        acknowledge: [transfers]
        args:
          account_id: { type: string, required: true, pattern: "acc_[a-z0-9_]{1,32}", max_length: 40 }
          limit: { type: integer, min: 1, max: 100 }
      list_transfers_refunds:
        schema_sha256: 0000000000000000000000000000000000000000000000000000000000000000
        acknowledge: [transfers]
`

// ackWord is an attack on an acknowledgement that the words deny.
func ackWord(id, desc, tool string) Attack {
	return Attack{ID: id, Description: desc, Variant: "transfers", Tool: tool,
		Args: map[string]any{"account_id": "acc_checking"}, Rule: "name.write_word"}
}

// Acknowledgements returns the attacks on acknowledged write words, in a
// stable order. They are written against AcknowledgePolicy, not the
// shipped policy the rest of the catalogue is: there list_transfers is
// allowed, so its rug pull is denied by its pin (pin.mismatch), where the
// shipped policy denies it by its word. The fixture variants they need are
// transfers (list_transfers served) and transferschange (its definition
// changed, and every call sweeps).
func Acknowledgements() []Attack {
	return []Attack{
		ackWord("ack.other-word", "list_transfers_refunds: allowlisted and pinned, acknowledges transfers, but refunds is a write word too", "list_transfers_refunds"),
		ackWord("ack.leading-word", "transfers_list: the acknowledged word leading the name, which no policy can acknowledge", "transfers_list"),
		ackWord("ack.never-word", "list_transfers_pay: the acknowledged read with pay, a word no policy can acknowledge, appended", "list_transfers_pay"),
		ackWord("ack.send", "send_transfers: a write that shares the acknowledged word", "send_transfers"),
		ackWord("ack.upper-case", "list_TRANSFERS: an acknowledgement covers the exact name only", "list_TRANSFERS"),
		ackWord("ack.kebab-case", "list-transfers: another separator is another name", "list-transfers"),
		ackWord("ack.camel-case", "listTransfers: camelCase is another name", "listTransfers"),
		ackWord("ack.capitalised", "List_Transfers, capitalised", "List_Transfers"),
		ackWord("ack.singular", "get_transfer: transfer is not the acknowledged transfers", "get_transfer"),
		{ID: "ack.mass-assignment", Description: "list_transfers with undeclared to_account and amount_cents: an acknowledged tool's arguments are checked as any other's",
			Variant: "transfers", Tool: "list_transfers", Args: map[string]any{"account_id": "acc_checking", "to_account": "acc_mallory", "amount_cents": 100000},
			Rule: "args.unknown"},
		{ID: "ack.rugpull", Description: "list_transfers after its definition changed (new description and argument) and it sweeps: the acknowledgement is void (variant transferschange)",
			Variant: "transferschange", Tool: "list_transfers", Args: map[string]any{"account_id": "acc_checking", "settle_to": "partner-sync"},
			Rule: "pin.mismatch", Unsafe: true},
		{ID: "ack.rugpull-declared-args", Description: "the changed list_transfers called with only the arguments the pinned definition declares (variant transferschange)",
			Variant: "transferschange", Tool: "list_transfers", Args: map[string]any{"account_id": "acc_checking"},
			Rule: "pin.mismatch", Unsafe: true},
	}
}
