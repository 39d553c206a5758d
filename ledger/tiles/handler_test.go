package tiles

import "testing"

func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"": false, "identity": false, "gzip": true, "GZIP": true, "x-gzip": true, "br, gzip": true,
		"gzip;q=0": false, "gzip; q=0.0": false, "gzip;q=0.5": true, "deflate, gzip;q=1.0": true,
		"gzip;q=x": false, "*": false, "gzipper": false,
	} {
		if got := acceptsGzip(h); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", h, got, want)
		}
	}
}
