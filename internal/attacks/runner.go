package attacks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/internal/mcptest"
)

// Session is a live MCP session to send attacks through: the SDK client
// for the attacks it can send, and a raw side for the frames it cannot. A
// stdio session (*mcptest.Session) and a session with bankdoor proxy
// --listen (*mcptest.HTTPSession) are both one.
type Session interface {
	// Client returns the SDK client session.
	Client() *mcp.ClientSession
	// NextID returns a fresh raw id as JSON text, for a frame's $ID.
	NextID() string
	// Raw sends one frame and returns the JSON-RPC answer to it.
	Raw(ctx context.Context, line []byte) ([]byte, error)
	// RawNoReply sends a frame that gets no answer (a notification).
	RawNoReply(line []byte) error
	// Unsolicited returns the answers that came back without being asked
	// for, such as an answer to a notification, once every frame sent
	// before the call has been answered or handled.
	Unsolicited(ctx context.Context) ([][]byte, error)
}

// Target is a live session to send attacks through.
type Target struct {
	Session Session
	State   string // the fixture bank's state file
	// Receipts is the proxy's receipts directory; "" for a control run
	// straight to the fixture.
	Receipts string
	// Timeout bounds one attack; 0 means 30 seconds.
	Timeout time.Duration
}

func (t *Target) timeout() time.Duration {
	if t.Timeout <= 0 {
		return 30 * time.Second
	}
	return t.Timeout
}

// Result is what happened to one attack.
type Result struct {
	Attack Attack
	// Rule is the rule id the answer named (its error data, else its
	// message); for a notification, the rule of the receipt it left.
	Rule string
	// Code is the JSON-RPC error code of the answer, 0 if there was none.
	Code int64
	// Message is the answer's error message, or a description of an
	// answer that was not an error.
	Message string
	// Receipt is the receipt file the answer named (for a notification:
	// the receipt that appeared), and ReceiptRule the rule recorded in it.
	Receipt     string
	ReceiptRule string
	// Reached lists the messages the bank logged while the attack ran:
	// empty unless the attack (or part of it) reached the bank.
	Reached []mcptest.LogEntry
	// Moved is the sum of the absolute balance changes, in cents.
	Moved int64
	// Answered lists the lines the proxy wrote in answer to a notification
	// (JSON-RPC never answers one); empty for other attacks.
	Answered [][]byte
	// Err is set if the attack could not be run or its outcome not read.
	Err error
}

// Problems lists what is wrong with a result of a run through the proxy:
// every attack must be denied with its rule, name a receipt that records
// that rule, never reach the bank and move nothing. Empty means it held.
func (r *Result) Problems() []string {
	var p []string
	if r.Err != nil {
		p = append(p, "harness: "+r.Err.Error())
	}
	switch {
	case r.Rule == "":
		p = append(p, "not denied: "+r.Message)
	case r.Rule != r.Attack.Rule:
		p = append(p, fmt.Sprintf("denied with rule %s, want %s (%s)", r.Rule, r.Attack.Rule, r.Message))
	}
	switch {
	case r.Receipt == "":
		p = append(p, "no receipt named")
	case r.ReceiptRule != r.Attack.Rule:
		p = append(p, fmt.Sprintf("receipt %s records rule %q, want %s", r.Receipt, r.ReceiptRule, r.Attack.Rule))
	}
	switch {
	case r.Attack.Forwarded && len(r.Reached) == 0:
		p = append(p, "an allowed request whose answer is refused must reach the bank; it did not")
	case !r.Attack.Forwarded && len(r.Reached) > 0:
		p = append(p, fmt.Sprintf("reached the bank: %v", r.Reached))
	}
	if r.Moved != 0 {
		p = append(p, fmt.Sprintf("moved %d cents", r.Moved))
	}
	if len(r.Answered) > 0 {
		p = append(p, "a notification was answered: "+short(bytes.Join(r.Answered, []byte(" | "))))
	}
	return p
}

// Run sends the attacks through t one by one and returns one result each.
func Run(ctx context.Context, t Target, attacks []Attack) []Result {
	out := make([]Result, len(attacks))
	for i, a := range attacks {
		out[i] = runOne(ctx, &t, a)
	}
	return out
}

// Control sends the Unsafe attacks among attacks straight to a fixture
// session (t.Receipts is ignored) and returns their results; Moved says
// whether the bank moved money.
func Control(ctx context.Context, t Target, attacks []Attack) []Result {
	t.Receipts = ""
	var out []Result
	for _, a := range attacks {
		if a.Unsafe {
			out = append(out, runOne(ctx, &t, a))
		}
	}
	return out
}

func runOne(ctx context.Context, t *Target, a Attack) Result {
	ctx, cancel := context.WithTimeout(ctx, t.timeout())
	defer cancel()
	r := Result{Attack: a}
	if err := warmup(ctx, t, a); err != nil {
		r.Err = err
		return r
	}
	before, err := mcptest.ReadState(t.State)
	if err != nil {
		r.Err = err
		return r
	}
	receiptsBefore, err := mcptest.Receipts(t.Receipts)
	if err != nil {
		r.Err = err
		return r
	}
	switch {
	case a.NoReply:
		r.Err = sendNotification(ctx, t, a, &r, len(receiptsBefore))
	case a.Raw():
		r.Err = sendRaw(ctx, t, a, &r)
	default:
		r.Err = sendCall(ctx, t, a, &r)
	}
	after, err := mcptest.ReadState(t.State)
	if err != nil {
		r.Err = errors.Join(r.Err, err)
		return r
	}
	if len(after.Log) > len(before.Log) {
		r.Reached = after.Log[len(before.Log):]
	}
	r.Moved = mcptest.Moved(before.Accounts, after.Accounts)
	if t.Receipts != "" && r.Receipt != "" {
		if rc, err := mcptest.ReadReceipt(t.Receipts, r.Receipt); err != nil {
			r.Err = errors.Join(r.Err, err)
		} else {
			r.ReceiptRule = rc.Rule
		}
	}
	return r
}

// warmup sends the attack's warmup calls; each must be answered with a
// result.
func warmup(ctx context.Context, t *Target, a Attack) error {
	for _, c := range a.Warmup {
		res, err := t.Session.Client().CallTool(ctx, &mcp.CallToolParams{Name: c.Tool, Arguments: c.Args})
		if err != nil || res.IsError {
			return fmt.Errorf("warmup call %s: %v (result %+v)", c.Tool, err, res)
		}
	}
	return nil
}

// frame returns the attack's line with a fresh raw id in place of $ID.
func frame(t *Target, a Attack) []byte {
	return bytes.Replace(a.Frame, []byte("$ID"), []byte(t.Session.NextID()), 1)
}

func sendCall(ctx context.Context, t *Target, a Attack, r *Result) error {
	res, err := t.Session.Client().CallTool(ctx, &mcp.CallToolParams{Name: a.Tool, Arguments: a.Args})
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we):
		r.setError(we.Code, we.Message, we.Data)
		return nil
	case err != nil:
		r.Message = "no answer: " + err.Error()
		return err
	}
	b, _ := json.Marshal(res)
	r.Message = "answered with a result: " + short(b)
	return nil
}

func sendRaw(ctx context.Context, t *Target, a Attack, r *Result) error {
	resp, err := t.Session.Raw(ctx, frame(t, a))
	if err != nil {
		r.Message = "no answer: " + err.Error()
		return err
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal(resp, &msg); err != nil {
		r.Message = "answered with a line that is not JSON-RPC: " + short(resp)
		return nil
	}
	if msg.Error != nil {
		r.setError(msg.Error.Code, msg.Error.Message, msg.Error.Data)
		return nil
	}
	r.Message = "answered with a result: " + short(msg.Result)
	return nil
}

// sendNotification sends a notification. Through the proxy it waits for
// the receipt it must leave; in a control run it pings the bank, whose
// log is written in the order messages arrive, so that the notification
// has been read when the state is compared.
func sendNotification(ctx context.Context, t *Target, a Attack, r *Result, receipts int) error {
	if err := t.Session.RawNoReply(frame(t, a)); err != nil {
		return err
	}
	if t.Receipts == "" {
		return t.Session.Client().Ping(ctx, nil)
	}
	names, err := mcptest.WaitReceipts(ctx, t.Receipts, receipts)
	if err != nil {
		r.Message = "no receipt appeared"
		return err
	}
	r.Receipt = names[len(names)-1]
	rc, err := mcptest.ReadReceipt(t.Receipts, r.Receipt)
	if err != nil {
		return err
	}
	r.Rule = rc.Rule
	r.Message = "no answer expected (notification)"
	r.Answered, err = t.Session.Unsolicited(ctx)
	return err
}

// denialData is the data member of a bankdoor denial.
type denialData struct {
	Rule    string `json:"rule"`
	Reason  string `json:"reason"`
	Receipt string `json:"receipt"`
}

func (r *Result) setError(code int64, message string, data json.RawMessage) {
	r.Code, r.Message = code, message
	var d denialData
	if len(data) > 0 && json.Unmarshal(data, &d) == nil && d.Rule != "" {
		r.Rule, r.Receipt = d.Rule, d.Receipt
		return
	}
	// Without data, read the message: "bankdoor denied …: RULE: REASON
	// (receipt NNNNNN.json)".
	re := regexp.MustCompile(`^bankdoor denied .*?: ([a-z_]+\.[a-z_]+): .*\(receipt ([0-9]+\.json)\)$`)
	if m := re.FindStringSubmatch(message); m != nil {
		r.Rule, r.Receipt = m[1], m[2]
	}
}

func short(b []byte) string {
	const max = 200
	if len(b) > max {
		return fmt.Sprintf("%q… (%d bytes)", b[:max], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// AgentOptions are the SDK client options of the agent the catalogue is
// sent as, through the proxy and in control runs: its user approves
// whatever an elicitation asks (action accept, approve true), so an answer
// that asks the user to act does what it asks if it reaches them.
func AgentOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}}
}
