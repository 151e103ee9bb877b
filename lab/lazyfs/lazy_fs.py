#!/usr/bin/python3
"""A FUSE filesystem that loses un-fsynced writes on demand (T13, power loss), after LazyFS.

kill -9 of a server keeps every write it made: the kernel's page cache holds them and writes them back later. A
power cut loses what was not fsynced. This filesystem mirrors a backing directory, but a file's written data stays
in this process's memory until the file is fsynced (or fdatasynced); a power cut drops every unsynced byte, as it
drops the page cache. Metadata operations (create, rename, unlink) reach the backing directory at once, like a
journalled filesystem's metadata. The lab kills the server, cuts the power (`stat <mount>/.power-loss`: the stat
fails, and every unsynced byte is gone), and starts the server again on the mount. The mount bypasses the
kernel's page cache (direct_io, no attribute caching), or the kernel would serve the dropped bytes from its own
cache.

    /usr/bin/python3 lazy_fs.py <backing dir> <mount point> [--page-cache]    # foreground; fusermount -u

Needs Debian's python3-fusepy and fuse (lab/setup.sh installs them).
"""

import errno
import os
import sys

from fusepy import FUSE, FuseOSError, Operations, fuse_get_context


PAGE = 4096


class Shadow:
    """A file's content as the writers see it, and the pages of it not yet on the backing file.

    It outlives an fsync: reloading a database's whole redo log or WAL segment after every commit's fsync would
    make each commit cost a read of the file. Dirty pages, not one low-water offset, so an fsync after scattered
    page writes (InnoDB, PostgreSQL) writes those pages, not everything from the lowest one to the end.
    """

    def __init__(self, data: bytes):
        self.data = bytearray(data)
        self.dirty: set[int] = set()
        # The length on the backing file: a size change (append, truncate) is unsynced until an fsync.
        self.synced_size = len(data)

    def touch(self, start: int, end: int) -> None:
        self.dirty.update(range(start // PAGE, (max(end, start + 1) - 1) // PAGE + 1))

    def unsynced(self) -> int:
        return len(self.dirty) * PAGE + abs(len(self.data) - self.synced_size)


class LazyFS(Operations):
    def __init__(self, root: str):
        self.root = root
        self.shadows: dict[str, Shadow] = {}

    def _full(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip('/'))

    def _shadow(self, path: str) -> Shadow:
        shadow = self.shadows.get(path)
        if shadow is None:
            with open(self._full(path), 'rb') as f:
                shadow = Shadow(f.read())
            self.shadows[path] = shadow
        return shadow

    def power_loss(self) -> None:
        lost = sum(s.unsynced() for s in self.shadows.values())
        self.shadows.clear()
        print(f'lazy_fs: power loss, {lost} unsynced bytes dropped', flush=True)

    def writeback(self) -> None:
        """Writes every file's unsynced data to disk, as the kernel writes back dirty pages some 30 s old."""
        written = sum(s.unsynced() for s in self.shadows.values())
        for path in list(self.shadows):
            self.fsync(path, False, None)
        print(f'lazy_fs: writeback, {written} unsynced bytes written', flush=True)

    # ---- metadata ----

    def getattr(self, path, fh=None):
        if path == '/.power-loss':
            self.power_loss()
            raise FuseOSError(errno.ENOENT)
        if path == '/.writeback':
            self.writeback()
            raise FuseOSError(errno.ENOENT)
        st = os.lstat(self._full(path))
        attrs = {key: getattr(st, key) for key in (
            'st_atime', 'st_ctime', 'st_gid', 'st_mode', 'st_mtime', 'st_nlink', 'st_size', 'st_uid')}
        shadow = self.shadows.get(path)
        if shadow is not None:
            attrs['st_size'] = len(shadow.data)
        return attrs

    def readdir(self, path, fh):
        return ['.', '..', *os.listdir(self._full(path))]

    def access(self, path, mode):
        if not os.access(self._full(path), mode):
            raise FuseOSError(errno.EACCES)

    def chmod(self, path, mode):
        return os.chmod(self._full(path), mode)

    def chown(self, path, uid, gid):
        return os.chown(self._full(path), uid, gid)

    def _own(self, path):
        # Created as its caller (the server's user), not as this root process: PostgreSQL refuses a data dir
        # that is not its own.
        uid, gid, _pid = fuse_get_context()
        os.chown(self._full(path), uid, gid)

    def mkdir(self, path, mode):
        os.mkdir(self._full(path), mode)
        self._own(path)

    def rmdir(self, path):
        return os.rmdir(self._full(path))

    def unlink(self, path):
        self.shadows.pop(path, None)
        return os.unlink(self._full(path))

    def rename(self, old, new):
        os.rename(self._full(old), self._full(new))
        self.shadows.pop(new, None)
        shadow = self.shadows.pop(old, None)
        if shadow is not None:
            self.shadows[new] = shadow

    def utimens(self, path, times=None):
        return os.utime(self._full(path), times)

    def statfs(self, path):
        st = os.statvfs(self._full(path))
        return {key: getattr(st, key) for key in (
            'f_bavail', 'f_bfree', 'f_blocks', 'f_bsize', 'f_favail', 'f_ffree', 'f_files', 'f_flag', 'f_frsize',
            'f_namemax')}

    # ---- data ----

    def create(self, path, mode, fi=None):
        fd = os.open(self._full(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        os.close(fd)
        self._own(path)
        self.shadows[path] = Shadow(b'')
        return 0

    def open(self, path, flags):
        if flags & os.O_TRUNC:
            self.truncate(path, 0)
        return 0

    def read(self, path, size, offset, fh):
        shadow = self.shadows.get(path)
        if shadow is not None:
            return bytes(shadow.data[offset:offset + size])
        with open(self._full(path), 'rb') as f:
            f.seek(offset)
            return f.read(size)

    def write(self, path, data, offset, fh):
        shadow = self._shadow(path)
        if offset > len(shadow.data):
            shadow.data.extend(b'\0' * (offset - len(shadow.data)))
        shadow.data[offset:offset + len(data)] = data
        shadow.touch(offset, offset + len(data))
        return len(data)

    def truncate(self, path, length, fh=None):
        shadow = self._shadow(path)
        old = len(shadow.data)
        del shadow.data[length:]
        if length > len(shadow.data):
            shadow.data.extend(b'\0' * (length - len(shadow.data)))
            shadow.touch(old, length)

    def fsync(self, path, datasync, fh):
        shadow = self.shadows.get(path)
        if shadow is None or (not shadow.dirty and shadow.synced_size == len(shadow.data)):
            return 0
        fd = os.open(self._full(path), os.O_WRONLY)
        try:
            for page in sorted(shadow.dirty):
                start = page * PAGE
                if start < len(shadow.data):
                    os.pwrite(fd, bytes(shadow.data[start:start + PAGE]), start)
            os.ftruncate(fd, len(shadow.data))
            os.fsync(fd)
        finally:
            os.close(fd)
        shadow.dirty.clear()
        shadow.synced_size = len(shadow.data)
        return 0

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        return 0


def main() -> None:
    # One thread (nothreads): the operations never run concurrently, so the shadows need no lock.
    backing, mount = sys.argv[1], sys.argv[2]
    # --page-cache: for a server that mmaps its files (etcd's bbolt), which FUSE refuses under direct_io
    # (ENODEV). Without it, FUSE still writes through to this process at once, and drops a file's cached pages
    # when the file is opened again, which a restarted server does: it reads what survived the power cut.
    direct_io = '--page-cache' not in sys.argv[3:]
    fs = LazyFS(os.path.realpath(backing))
    FUSE(fs, mount, foreground=True, nothreads=True, allow_other=True, direct_io=direct_io, attr_timeout=0,
         entry_timeout=0, negative_timeout=0)


if __name__ == '__main__':
    main()
