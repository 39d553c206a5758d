package tiles

import (
	"bytes"
	"compress/gzip"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
)

// Cache-Control values (see the package doc).
const (
	cacheImmutable  = "public, max-age=31536000, immutable"
	cacheCheckpoint = "no-cache"
	cacheError      = "no-store"
)

// A Log is what Handler serves.
type Log interface {
	Source
	// Checkpoint returns the signed checkpoint note to serve.
	Checkpoint() ([]byte, error)
	// Size returns the tree size up to which tiles are served: at least
	// the size of any checkpoint Checkpoint has returned.
	Size() uint64
}

// Handler serves l's checkpoint, tiles and entry bundles at /checkpoint,
// /tile/<L>/<N>[.p/<W>] and /tile/entries/<N>[.p/<W>] (see the package
// doc); mount it at those paths. Failures to read l are logged to
// logger (nil discards) and answered with 500.
func Handler(l Log, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &handler{log: l, logger: logger}
}

type handler struct {
	log    Log
	logger *slog.Logger
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		fail(w, http.StatusMethodNotAllowed, "method "+r.Method+" is not allowed: the tlog-tiles API is read-only; use GET or HEAD")
		return
	}
	if r.URL.Path == "/checkpoint" {
		h.checkpoint(w)
		return
	}
	t, err := ParsePath(strings.TrimPrefix(r.URL.Path, "/"))
	if err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	b, err := Read(h.log, t, h.log.Size())
	switch {
	case errors.Is(err, ErrNotFound):
		fail(w, http.StatusNotFound, err.Error())
		return
	case err != nil:
		h.logger.Error("tlog-tiles: reading a tile", "path", r.URL.Path, "err", err)
		fail(w, http.StatusInternalServerError, "the tile could not be read; the server's log says why")
		return
	}
	if t.Entries {
		w.Header().Set("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			h.writeGzip(w, b)
			return
		}
	}
	write(w, "application/octet-stream", cacheImmutable, b)
}

// writeGzip answers with b gzipped (Content-Encoding: gzip), as the spec
// asks of entry bundles for a client that accepts it. Fastest level:
// receipts are JSON with much in common, so it still saves most bytes.
func (h *handler) writeGzip(w http.ResponseWriter, b []byte) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed) // a valid level: no error
	zw.Write(b)                                        // to memory: no error
	if err := zw.Close(); err != nil {
		h.logger.Error("tlog-tiles: compressing an entry bundle", "err", err)
		fail(w, http.StatusInternalServerError, "the entry bundle could not be compressed")
		return
	}
	w.Header().Set("Content-Encoding", "gzip")
	write(w, "application/octet-stream", cacheImmutable, buf.Bytes())
}

// acceptsGzip reports whether an Accept-Encoding header (RFC 9110
// section 12.5.3) lists gzip (or x-gzip) with a weight above 0.
func acceptsGzip(header string) bool {
	for part := range strings.SplitSeq(header, ",") {
		coding, params, _ := strings.Cut(part, ";")
		if c := strings.ToLower(strings.TrimSpace(coding)); c != "gzip" && c != "x-gzip" {
			continue
		}
		k, v, _ := strings.Cut(strings.TrimSpace(params), "=")
		if strings.TrimSpace(k) != "q" {
			return true
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return err == nil && q > 0
	}
	return false
}

func (h *handler) checkpoint(w http.ResponseWriter) {
	cp, err := h.log.Checkpoint()
	if err != nil {
		h.logger.Error("tlog-tiles: reading the checkpoint", "err", err)
		fail(w, http.StatusInternalServerError, "the checkpoint could not be read; the server's log says why")
		return
	}
	write(w, "text/plain; charset=utf-8", cacheCheckpoint, cp)
}

func write(w http.ResponseWriter, contentType, cache string, b []byte) {
	hd := w.Header()
	hd.Set("Content-Type", contentType)
	hd.Set("Cache-Control", cache)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

func fail(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Cache-Control", cacheError)
	http.Error(w, msg, code)
}
