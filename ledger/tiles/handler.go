package tiles

import (
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
	write(w, "application/octet-stream", cacheImmutable, b)
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
