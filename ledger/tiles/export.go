package tiles

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bankdoor/bankdoor/internal/atomicfile"
)

// Export writes checkpoint, a signed checkpoint of the tree of size, and
// every tile and entry bundle of that tree (ForSize), as read returns
// them, under dir, at the paths Handler serves them: dir/checkpoint, dir/tile/0/000 and so on,
// files of mode 0644 in directories of mode 0755. Each file is written
// whole under a temporary name, synced, then given its name (package
// atomicfile), so a crash leaves no part of a tile under a tile's name;
// the checkpoint is written last, so a directory with a checkpoint holds
// every tile it needs. Export refuses to replace a file (fs.ErrExist);
// give it an empty directory. It returns the number of tiles and
// bundles written.
//
// To export a stored log, read is [Read] of its Source at size; a mirror
// of a served log reads and verifies each tile from it.
func Export(ctx context.Context, dir string, read func(Tile) ([]byte, error), checkpoint []byte, size uint64) (int, error) {
	n := 0
	made := map[string]bool{}
	for t := range ForSize(size) {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		b, err := read(t)
		if err != nil {
			return n, err
		}
		if err := create(dir, t.Path(), b, made); err != nil {
			return n, err
		}
		n++
	}
	return n, create(dir, "checkpoint", checkpoint, made)
}

// create writes a file at rel under dir, making its directory first if
// made does not record it.
func create(dir, rel string, b []byte, made map[string]bool) error {
	path := filepath.Join(dir, filepath.FromSlash(rel))
	if d := filepath.Dir(path); !made[d] {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("exporting %s: %w", rel, err)
		}
		made[d] = true
	}
	return atomicfile.Create(path, b, 0o644)
}
