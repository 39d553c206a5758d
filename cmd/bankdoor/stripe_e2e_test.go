package main_test

// End-to-end tests with a real third-party payment server: Stripe's MCP
// server (@stripe/mcp 0.2.5, installed from the committed lock by
// internal/stripemcp) behind the built bankdoor binary with the shipped
// preset policies/stripe.yaml. There is no network here (and Stripe would
// refuse the dummy key if there were), so every call the server makes
// fails with Stripe's own error; what the tests watch is whether a call
// reaches the server and whether the server's HTTP client tries to reach
// Stripe, as observe.js records it (see package internal/stripemcp).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/internal/stripemcp"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// stripePolicy is the Stripe preset as shipped.
const stripePolicy = "../../policies/stripe.yaml"

// stripeReads are the server's 10 reads, which the preset allows, each
// called with arguments the preset accepts, in the order the server lists
// them.
func stripeReads() []*mcp.CallToolParams {
	const cus, price = "cus_NffrFeUfNV2Hib", "price_1MoBy5LkdIwHu7ixZhnattbh"
	return []*mcp.CallToolParams{
		{Name: "list_customers", Arguments: map[string]any{"limit": 3, "email": "jenny.rosen@example.com"}},
		{Name: "list_products", Arguments: map[string]any{"limit": 5}},
		{Name: "list_prices", Arguments: map[string]any{"product": "prod_NWjs8kKbJWmuuc", "limit": 2}},
		{Name: "list_invoices", Arguments: map[string]any{"customer": cus, "limit": 10}},
		{Name: "retrieve_balance"},
		{Name: "list_payment_intents", Arguments: map[string]any{"customer": cus, "limit": 3}},
		{Name: "list_subscriptions", Arguments: map[string]any{"customer": cus, "price": price, "status": "active", "limit": 1}},
		{Name: "search_stripe_documentation", Arguments: map[string]any{"question": "How do I list the refunds of a charge?", "language": "go"}},
		{Name: "list_coupons", Arguments: map[string]any{"limit": 100}},
		{Name: "list_disputes", Arguments: map[string]any{"charge": "ch_3MmlLrLkdIwHu7ix0snN0B15", "payment_intent": "pi_3MtwBwLkdIwHu7ix28a3tqPa", "limit": 10}},
	}
}

// stripeWrite is one of the server's 12 writes, called with arguments its
// schema accepts, and the request Stripe's client makes for it.
type stripeWrite struct {
	call         *mcp.CallToolParams
	method, path string
}

func stripeWrites() []stripeWrite {
	const cus, price, inv, sub = "cus_NffrFeUfNV2Hib", "price_1MoBy5LkdIwHu7ixZhnattbh", "in_1MtHbELkdIwHu7ixl4OzzPMv", "sub_1MowQVLkdIwHu7ixeRlqHVzs"
	w := func(name string, args map[string]any, method, path string) stripeWrite {
		return stripeWrite{&mcp.CallToolParams{Name: name, Arguments: args}, method, path}
	}
	return []stripeWrite{
		w("create_customer", map[string]any{"name": "Mallory", "email": "mallory@example.com"}, "POST", "/v1/customers"),
		w("create_product", map[string]any{"name": "Gold"}, "POST", "/v1/products"),
		w("create_price", map[string]any{"product": "prod_NWjs8kKbJWmuuc", "unit_amount": 999, "currency": "usd"}, "POST", "/v1/prices"),
		w("create_payment_link", map[string]any{"price": price, "quantity": 1}, "POST", "/v1/payment_links"),
		w("create_invoice", map[string]any{"customer": cus, "days_until_due": 1}, "POST", "/v1/invoices"),
		w("create_invoice_item", map[string]any{"customer": cus, "price": price, "invoice": inv}, "POST", "/v1/invoiceitems"),
		w("finalize_invoice", map[string]any{"invoice": inv}, "POST", "/v1/invoices/"+inv+"/finalize"),
		w("create_refund", map[string]any{"payment_intent": "pi_3MtwBwLkdIwHu7ix28a3tqPa", "amount": 100000}, "POST", "/v1/refunds"),
		w("cancel_subscription", map[string]any{"subscription": sub}, "DELETE", "/v1/subscriptions/"+sub),
		w("update_subscription", map[string]any{"subscription": sub, "proration_behavior": "always_invoice"}, "POST", "/v1/subscriptions/"+sub),
		w("create_coupon", map[string]any{"name": "Free", "amount_off": 100000, "currency": "usd"}, "POST", "/v1/coupons"),
		w("update_dispute", map[string]any{"dispute": "dp_1MtJUT2eZvKYlo2CNaw2HvEv", "submit": true}, "POST", "/v1/disputes/dp_1MtJUT2eZvKYlo2CNaw2HvEv"),
	}
}

// installStripe installs the server, failing t with npm's error if it
// cannot: the registry is needed once, and CI has it.
func installStripe(t *testing.T) *stripemcp.Server {
	t.Helper()
	start := time.Now()
	s, err := stripemcp.Install(testContext(t, 5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s installed (or found installed) in %v: %s", stripemcp.Package, stripemcp.Version, time.Since(start).Round(time.Millisecond), s.Dir)
	return s
}

// stripeSide is one way of reaching the server, straight or through the
// proxy, and the file its observer writes.
type stripeSide struct {
	s      *mcptest.Session
	events string
}

// startStripe starts the observed server, behind the proxy with the
// preset if w is not nil, and connects the SDK client to it.
func startStripe(t *testing.T, srv *stripemcp.Server, w *world) stripeSide {
	t.Helper()
	events := filepath.Join(t.TempDir(), "events")
	argv := srv.ObservedArgv()
	env := []string{stripemcp.ObserveEnv + "=" + events}
	var cmd *exec.Cmd
	if w == nil {
		cmd = exec.Command(argv[0], argv[1:]...)
	} else {
		cmd = exec.Command(built.bankdoor, append([]string{"proxy", "--policy", w.policy, "--server", "stripe", "--receipts", w.receipts, "--"}, argv...)...)
		env = append(env, "BANKDOOR_HOME="+w.home)
	}
	cmd.Env = mcptest.Env(env...)
	return stripeSide{start(t, cmd, &mcptest.Options{ConnectTimeout: time.Minute}), events}
}

// log returns what the server's observer has recorded so far.
func (sd stripeSide) log(t *testing.T) []stripemcp.Event {
	t.Helper()
	evs, err := stripemcp.ReadEvents(sd.events)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// newStripeWorld makes a key and a receipts directory for the shipped
// preset.
func newStripeWorld(t *testing.T) *world {
	t.Helper()
	dir := t.TempDir()
	policyPath, err := filepath.Abs(stripePolicy)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, home: filepath.Join(dir, "home"), receipts: filepath.Join(dir, "receipts"), policy: policyPath}
	w.bankdoor(0, "keygen", "--dir", w.home)
	w.pub = filepath.Join(w.home, "bankdoor.pub.pem")
	return w
}

// TestE2EStripe puts Stripe's real MCP server behind the proxy with the
// shipped preset, beside a control session straight to another instance,
// and checks that
//
//   - tools/list through the proxy is exactly the 10 reads, byte for byte
//     as the server lists them;
//   - each of the 12 writes, called straight, reaches the server and makes
//     Stripe's client try its request (the control), while through the
//     proxy it is denied with a receipt that bankdoor verify accepts and
//     neither reaches the server nor makes any request;
//   - each read passes through, reaches the server, makes its request, and
//     comes back as the server answered it straight.
func TestE2EStripe(t *testing.T) {
	t.Parallel()
	srv := installStripe(t)
	w := newStripeWorld(t)
	ctx := testContext(t, 4*time.Minute)
	began := time.Now()
	direct, proxied := startStripe(t, srv, nil), startStripe(t, srv, w)

	checkStripeListing(t, ctx, direct, proxied)
	controlStripeWrites(t, ctx, direct)
	denyStripeWrites(t, ctx, w, proxied)
	passStripeReads(t, ctx, direct, proxied)
	t.Logf("TestE2EStripe after the install: %v", time.Since(began).Round(time.Millisecond))
}

// checkStripeListing: the server lists 22 tools, the preset allows the 10
// reads, and the proxy lists those, as the server sent them.
func checkStripeListing(t *testing.T, ctx context.Context, direct, proxied stripeSide) {
	all := rawToolDefs(t, ctx, direct.s)
	var reads, names []string
	for _, r := range stripeReads() {
		reads = append(reads, r.Name)
	}
	for _, d := range all {
		var tool struct{ Name string }
		if err := json.Unmarshal([]byte(d), &tool); err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	var writes []string
	for _, wr := range stripeWrites() {
		writes = append(writes, wr.call.Name)
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(append(slices.Clone(reads), writes...))), slices.Sorted(slices.Values(names))); diff != "" {
		t.Fatalf("the server's tools are not the 10 reads and 12 writes (-want +got):\n%s", diff)
	}
	p, err := policy.Load(stripePolicy)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(reads)), sortedToolNames(p, "stripe")); diff != "" {
		t.Errorf("%s allows (-reads +allowed):\n%s", stripePolicy, diff)
	}
	want := filterDefs(t, all, reads)
	if diff := cmp.Diff(want, rawToolDefs(t, ctx, proxied.s)); diff != "" {
		t.Errorf("tools/list through the proxy is not the reads' definitions byte for byte (-want +got):\n%s", diff)
	}
}

func sortedToolNames(p *policy.Policy, server string) []string {
	var names []string
	for name := range p.Servers[server].Tools {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// callAll makes the calls at once on s and returns their results (or
// errors), in the calls' order.
func callAll(ctx context.Context, s *mcptest.Session, calls []*mcp.CallToolParams) ([]*mcp.CallToolResult, []error) {
	res, errs := make([]*mcp.CallToolResult, len(calls)), make([]error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { res[i], errs[i] = s.Client().CallTool(ctx, c) })
	}
	wg.Wait()
	return res, errs
}

// controlStripeWrites calls every write straight: each reaches the server
// and makes Stripe's client attempt its request, and the answer is the
// server's own failure. Without this, the absence of requests through the
// proxy would prove nothing.
func controlStripeWrites(t *testing.T, ctx context.Context, direct stripeSide) {
	writes := stripeWrites()
	var calls []*mcp.CallToolParams
	for _, wr := range writes {
		calls = append(calls, wr.call)
	}
	res, errs := callAll(ctx, direct.s, calls)
	evs := direct.log(t)
	for i, wr := range writes {
		if errs[i] != nil || !strings.Contains(resultText(res[i]), "Failed to") {
			t.Errorf("control %s: %s, %v; want the server's own failure", wr.call.Name, resultText(res[i]), errs[i])
		}
		if !slices.ContainsFunc(evs, func(e stripemcp.Event) bool { return e.Kind == "rpc" && e.Tool == wr.call.Name }) {
			t.Errorf("control %s: the server's observer saw no tools/call of it", wr.call.Name)
		}
		if !slices.ContainsFunc(evs, func(e stripemcp.Event) bool {
			return e.Kind == "http" && e.Host == "api.stripe.com" && e.Method == wr.method && e.Path == wr.path
		}) {
			t.Errorf("control %s: Stripe's client made no %s api.stripe.com%s; events:\n%s", wr.call.Name, wr.method, wr.path, eventLines(evs))
		}
	}
}

// denyStripeWrites calls every write through the proxy: each is denied
// with its receipt, the server's observer sees neither the call nor any
// request, and bankdoor verify accepts the receipts.
func denyStripeWrites(t *testing.T, ctx context.Context, w *world, proxied stripeSide) {
	var receipts []string
	for _, wr := range stripeWrites() {
		_, err := proxied.s.Client().CallTool(ctx, wr.call)
		rc, rule := stripeDenial(t, w, err)
		t.Logf("%s: denied, %s, receipt %s", wr.call.Name, rule, rc)
		receipts = append(receipts, rc)
	}
	for _, e := range proxied.log(t) {
		if e.Outbound() || e.Method == "tools/call" {
			t.Errorf("through the proxy, the server's observer saw %v while only writes were called", e)
		}
	}
	names, err := mcptest.Receipts(w.receipts)
	if err != nil || !slices.Equal(names, receipts) || len(names) != len(stripeWrites()) {
		t.Errorf("receipts %q (%v), want one per write: %q", names, err, receipts)
	}
	if code, out := w.verify(w.receipts, "--policy", w.policy); code != 0 {
		t.Errorf("bankdoor verify: exit status %d, want 0\n%s", code, out)
	}
}

// stripeDenial checks that err is bankdoor's denial, by the allowlist or
// by the write words, and that its receipt records the same rule; it
// returns the receipt's name and the rule.
func stripeDenial(t *testing.T, w *world, err error) (string, string) {
	t.Helper()
	var we *jsonrpc.Error
	var data struct{ Rule, Receipt string }
	if !errors.As(err, &we) || json.Unmarshal(we.Data, &data) != nil {
		t.Errorf("want a JSON-RPC error from bankdoor, got %v", err)
		return "", ""
	}
	if data.Rule != "tool.not_allowed" && data.Rule != "name.write_word" {
		t.Errorf("denied with %q, want tool.not_allowed or name.write_word", we.Message)
	}
	rc, rerr := mcptest.ReadReceipt(w.receipts, data.Receipt)
	if rerr != nil || rc.Rule != data.Rule || rc.Decision != "deny" {
		t.Errorf("receipt %q of the denial: %+v, %v; want a deny recording %s", data.Receipt, rc, rerr, data.Rule)
	}
	return data.Receipt, data.Rule
}

// passStripeReads calls every read through the proxy, one at a time: each
// reaches the server, which makes its request (Stripe's client for the
// API, fetch for the documentation search), and the answer is the one the
// server gives straight.
func passStripeReads(t *testing.T, ctx context.Context, direct, proxied stripeSide) {
	reads := stripeReads()
	want, errs := callAll(ctx, direct.s, reads)
	for i, r := range reads {
		if errs[i] != nil {
			t.Fatalf("direct %s: %v", r.Name, errs[i])
		}
		before := len(proxied.log(t))
		got, err := proxied.s.Client().CallTool(ctx, r)
		if err != nil {
			t.Errorf("%s through the proxy: %v", r.Name, err)
			continue
		}
		evs := proxied.log(t)[before:]
		if !slices.ContainsFunc(evs, func(e stripemcp.Event) bool { return e.Kind == "rpc" && e.Tool == r.Name }) ||
			!slices.ContainsFunc(evs, func(e stripemcp.Event) bool { return e.Outbound() && strings.HasSuffix(e.Host, "stripe.com") }) {
			t.Errorf("%s through the proxy: the server's observer saw\n%s\nwant the call and a request to Stripe", r.Name, eventLines(evs))
		}
		// The documentation search answers from a search service when
		// the network is up, and may not answer twice alike.
		if r.Name == "search_stripe_documentation" && !strings.Contains(resultText(want[i]), "Failed to") {
			continue
		}
		if diff := cmp.Diff(marshal(t, want[i]), marshal(t, got)); diff != "" {
			t.Errorf("%s: through the proxy the answer differs from the server's straight (-straight +proxied):\n%s", r.Name, diff)
		}
	}
}

// resultText is the text of a tool result's content.
func resultText(r *mcp.CallToolResult) string {
	if r == nil {
		return "(no result)"
	}
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func eventLines(evs []stripemcp.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "\t%v\n", e)
	}
	return b.String()
}

// TestE2EStripePresetPinned: the shipped preset's pins are those of the
// locked install, exactly as bankdoor pin --write writes them: pinning a
// copy against the installed server leaves it byte for byte unchanged.
func TestE2EStripePresetPinned(t *testing.T) {
	t.Parallel()
	srv := installStripe(t)
	shipped, err := os.ReadFile(stripePolicy)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	path := filepath.Join(t.TempDir(), "stripe.yaml")
	if err := os.WriteFile(path, shipped, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runBankdoor(t, home, append([]string{"pin", "--policy", path, "--server", "stripe", "--write", "--"}, srv.Argv()...)...)
	if code != 0 {
		t.Fatalf("bankdoor pin --write: exit status %d\n%s", code, out)
	}
	pinned, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(shipped), string(pinned)); diff != "" {
		t.Errorf("%s's pins are not the installed server's; pin it again, reviewing the definitions (-shipped +pinned):\n%s", stripePolicy, diff)
	}
}
