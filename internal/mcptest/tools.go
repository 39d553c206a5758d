package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ToolsPage is one page of a tools/list result, its tool definitions
// exactly as the program sent them.
type ToolsPage struct {
	Tools      []json.RawMessage `json:"tools"`
	NextCursor json.RawMessage   `json:"nextCursor"` // nil on the last page
}

// ToolsList sends tools/list as a raw frame, with cursor (raw JSON) if it
// is not nil, and returns the page.
func (s *Session) ToolsList(ctx context.Context, cursor json.RawMessage) (*ToolsPage, error) {
	params := ""
	if cursor != nil {
		params = `,"params":{"cursor":` + string(cursor) + `}`
	}
	resp, err := s.Raw(ctx, []byte(`{"jsonrpc":"2.0","id":`+s.NextID()+`,"method":"tools/list"`+params+`}`))
	if err != nil {
		return nil, err
	}
	var msg struct {
		Result *ToolsPage      `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(resp, &msg); err != nil || msg.Result == nil {
		return nil, fmt.Errorf("tools/list answered %.300s (%v)", resp, err)
	}
	return msg.Result, nil
}

// maxPages bounds ToolDefs, against a server whose cursors never end.
const maxPages = 1000

// ToolDefs walks every page of tools/list with raw frames and returns all
// tool definitions, byte for byte as sent.
func (s *Session) ToolDefs(ctx context.Context) ([]json.RawMessage, error) {
	var defs []json.RawMessage
	var cursor json.RawMessage
	for range maxPages {
		page, err := s.ToolsList(ctx, cursor)
		if err != nil {
			return nil, err
		}
		defs = append(defs, page.Tools...)
		if page.NextCursor == nil {
			return defs, nil
		}
		cursor = page.NextCursor
	}
	return nil, errors.New("tools/list: more than 1000 pages")
}
