package proxy

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
	"github.com/bankdoor/bankdoor/proxy/pin"
)

// listing is the relay's own reading of the server's tools/list, which
// check 5 compares with the pins. Only callLoop reads or writes it, so it
// has no lock of its own; Relay.gen, under Relay.mu, says whether it is
// still fresh. It is fresh while gen has not moved since the walk began:
// no forwarded call has been answered since, and the server has not said
// its list changed.
type listing struct {
	ok      bool
	gen     uint64
	tools   map[string]listedTool
	cursors []jsontext.Value // the cursor of each page; nil for the first
	fetches []int            // when each page was last read, counted in reads
	reads   int              // pages read in this walk, re-reads included
}

// parsedPage is a page the relay has parsed, kept by the cursor it was
// read with, so that a page whose bytes did not change is not parsed and
// hashed again (JCS of every definition, twice, is most of a listing's
// cost to the relay).
type parsedPage struct {
	sum  [32]byte // SHA-256 of the result's bytes
	list *pin.List
}

// listedTool is one tool of the listing and the page it is on.
type listedTool struct {
	sum  string // schema_sha256 of its definition
	def  string // definition_sha256
	page int
}

// livePins are the pins of the tools of a listing, for gate.Call.
type livePins struct{ schema, definition map[string]string }

// maxWalks bounds how many times the relay lists the server for one call
// while the listing keeps going stale under it.
const maxWalks = 3

// livePins returns the pins of the server's tools from a listing that is
// fresh, and in which the page holding tool was the last page the server
// answered: the server's last word on that tool before the call.
func (r *Relay) livePins(ctx context.Context, tool string) (livePins, error) {
	for range maxWalks {
		if !r.fresh() {
			if err := r.walk(ctx); err != nil {
				return livePins{}, err
			}
			if !r.fresh() {
				continue
			}
		}
		t, listed := r.pins.tools[tool]
		if listed && r.pins.fetches[t.page] != r.pins.reads {
			if err := r.reread(ctx, tool, t.page); err != nil {
				return livePins{}, err
			}
			if !r.fresh() {
				continue
			}
		}
		live := livePins{make(map[string]string, len(r.pins.tools)), make(map[string]string, len(r.pins.tools))}
		for name, t := range r.pins.tools {
			live.schema[name], live.definition[name] = t.sum, t.def
		}
		return live, nil
	}
	return livePins{}, fmt.Errorf("the tool list went stale during each of %d listings (the server kept answering calls or saying its list changed)", maxWalks)
}

// fresh reports whether the listing may still decide a call.
func (r *Relay) fresh() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pins.ok && r.pins.gen == r.gen
}

// prefetch lists the server right after a forwarded call was answered, so
// that the agent's next call finds a fresh listing; a failure is left for
// that call to meet.
func (r *Relay) prefetch(ctx context.Context) {
	if r.agentEOF.Load() && len(r.calls) == 0 {
		return
	}
	if err := r.walk(ctx); err != nil && !r.closing.Load() && ctx.Err() == nil {
		r.log.Warn("listing the server's tools after a call failed; the next call tries again", "err", err)
	}
}

// walk reads every page of the server's tools/list into r.pins. A name
// listed twice is an error: a server that does so could show one
// definition and serve another.
func (r *Relay) walk(ctx context.Context) error {
	r.mu.Lock()
	gen := r.gen
	r.mu.Unlock()
	l := listing{gen: gen, tools: make(map[string]listedTool)}
	var cursor jsontext.Value
	for n := range pin.MaxPages {
		page, err := r.listPage(ctx, cursor)
		if err != nil {
			r.pins = listing{}
			return err
		}
		l.cursors = append(l.cursors, cursor)
		l.reads++
		l.fetches = append(l.fetches, l.reads)
		for _, t := range page.Tools {
			if _, twice := l.tools[t.Name]; twice {
				r.pins = listing{}
				return fmt.Errorf("tools/list names tool %q twice", truncate(t.Name, 128))
			}
			l.tools[t.Name] = listedTool{sum: t.SHA256, def: t.Definition, page: n}
		}
		if page.NextCursor == nil || string(page.NextCursor) == "null" {
			l.ok = true
			r.pins = l
			return nil
		}
		cursor = page.NextCursor
	}
	r.pins = listing{}
	return fmt.Errorf("tools/list has more than %d pages", pin.MaxPages)
}

// reread reads the page that held tool again, after every other page, and
// takes tool's definition from it.
func (r *Relay) reread(ctx context.Context, tool string, n int) error {
	page, err := r.listPage(ctx, r.pins.cursors[n])
	if err != nil {
		r.pins = listing{}
		return err
	}
	r.pins.reads++
	r.pins.fetches[n] = r.pins.reads
	for _, t := range page.Tools {
		if t.Name == tool {
			r.pins.tools[tool] = listedTool{sum: t.SHA256, def: t.Definition, page: n}
			return nil
		}
	}
	// The page no longer holds the tool: the list moved under the walk.
	r.pins.ok = false
	return nil
}

// listPage reads one page of the server's tools/list.
func (r *Relay) listPage(ctx context.Context, cursor jsontext.Value) (*pin.List, error) {
	params := []byte("{}")
	if cursor != nil {
		params = jsonobj.Object{{Name: "cursor", Value: cursor}}.Marshal()
	}
	resp, err := r.call(ctx, "tools/list", params, r.cfg.ListTimeout)
	if err != nil {
		return nil, err
	}
	if resp.Result == nil {
		return nil, errors.New("the bank server answered tools/list with no result")
	}
	sum := sha256.Sum256(resp.Result)
	if p, ok := r.parsed[string(cursor)]; ok && p.sum == sum {
		return p.list, nil
	}
	l, err := pin.ParseList(resp.Result)
	if err != nil {
		return nil, err
	}
	if len(r.parsed) >= pin.MaxPages {
		clear(r.parsed)
	}
	r.parsed[string(cursor)] = parsedPage{sum: sum, list: l}
	return l, nil
}
