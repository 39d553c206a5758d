package verifier

import "golang.org/x/sys/unix"

// oNoATime is the open flag that leaves a file's access time as it is.
const oNoATime = unix.O_NOATIME

// readsWhole reports whether the directory dirfd is on a file system whose
// reads of a regular file, from its start, return fewer bytes than asked
// for only at the file's end or at a multiple of 4,096 bytes: those that
// read through the page cache (ext4, XFS, Btrfs, F2FS: filemap_read) or
// from it (tmpfs: shmem_file_read_iter). These stop short of the count at
// the file's size, or, with what they have copied, at the page (or
// folio, a multiple of pages, pages a multiple of 4,096 bytes) where an
// I/O error or a fatal signal stopped them. A network or FUSE file system
// may return less than asked for anywhere, so for any other (or if
// statfs fails) readsWhole is false. See reader.readAt, which relies on
// it.
func readsWhole(dirfd int) bool {
	var st unix.Statfs_t
	if unix.Fstatfs(dirfd, &st) != nil {
		return false
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.F2FS_SUPER_MAGIC, unix.TMPFS_MAGIC:
		return true
	}
	return false
}
