package proxy

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// FuzzReadEvents: readEvents never panics, never returns more data than
// it read, and reads back what an event writer wrote: each message,
// newlines and all, as one event.
func FuzzReadEvents(f *testing.F) {
	f.Add("data: {}\n\n", "a\nb")
	f.Add(": comment\nevent: other\ndata: x\n\nid: 3\ndata:y\n\n", "")
	f.Add("data: a\ndata: b\n\r\n", "{\"k\":\n1}")
	f.Fuzz(func(t *testing.T, stream, msg string) {
		n := 0
		readEvents(strings.NewReader(stream), func(data []byte) error {
			n += len(data)
			return nil
		})
		if n > len(stream) {
			t.Fatalf("read %d bytes of data from a %d-byte stream", n, len(stream))
		}
		if strings.ContainsRune(msg, '\r') {
			return // a bare CR is not a line end to this reader; the relay never writes one
		}
		var w bytes.Buffer
		fmt.Fprintf(&w, "event: message\ndata: %s\n\n", strings.ReplaceAll(msg, "\n", "\ndata: "))
		var got []string
		readEvents(&w, func(data []byte) error { got = append(got, string(data)); return nil })
		if len(got) != 1 || got[0] != msg {
			t.Fatalf("wrote the event %q, read %q", msg, got)
		}
	})
}
