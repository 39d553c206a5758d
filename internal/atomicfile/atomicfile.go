// Package atomicfile writes a whole file under its name so that a reader,
// another process or a crash sees either what was there before or all of
// the new content, never part of it.
//
// The data goes to a temporary file in the same directory (named
// ".NAME.tmp-RANDOM"), which is given its mode, written, synced and
// closed; it then takes its name, and the directory is synced so that the
// name survives a crash:
//
//   - Write renames the temporary file over the name, replacing whatever
//     file was there.
//   - Create hard-links the temporary file to the name, which fails if the
//     name exists, then removes the temporary name. Of several processes
//     creating the same file at once, exactly one succeeds and the others
//     get an error wrapping fs.ErrExist: the file on disk is the one the
//     winner wrote. (A check for the name followed by a rename would let
//     the last of them silently replace the first one's file.)
//
// Both need a file system with POSIX rename and, for Create, hard links.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes data to path with mode perm, replacing any file there.
func Write(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, os.Rename)
}

// Create writes data to path with mode perm if, and only if, nothing is
// at path; otherwise it returns an error wrapping fs.ErrExist and leaves
// path alone.
func Create(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, func(tmp, path string) error {
		err := os.Link(tmp, path)
		os.Remove(tmp)
		return err
	})
}

// write puts data in a synced temporary file beside path, then lets
// publish give it its name, then syncs the directory.
func write(path string, data []byte, perm os.FileMode, publish func(tmp, path string) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			if !errors.Is(err, fs.ErrExist) {
				err = fmt.Errorf("write %s: %w", path, err)
			}
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := publish(f.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", path, fs.ErrExist)
		}
		return err
	}
	return SyncDir(dir)
}

// SyncDir syncs the directory dir, so that names created, renamed or
// removed in it survive a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
