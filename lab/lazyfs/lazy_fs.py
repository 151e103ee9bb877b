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

    /usr/bin/python3 lazy_fs.py <backing dir> <mount point>     # foreground; unmount with fusermount -u

Needs Debian's python3-fusepy and fuse (lab/setup.sh installs them).
"""

import errno
import os
import sys

from fusepy import FUSE, FuseOSError, Operations


class Shadow:
    """A file's content as the writers see it, and the lowest offset not yet on the backing file."""

    def __init__(self, data: bytes):
        self.data = bytearray(data)
        self.dirty_from = len(data)


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
        lost = sum(len(s.data) - s.dirty_from for s in self.shadows.values() if len(s.data) > s.dirty_from)
        self.shadows.clear()
        print(f'lazy_fs: power loss, {lost} unsynced bytes dropped', flush=True)

    # ---- metadata ----

    def getattr(self, path, fh=None):
        if path == '/.power-loss':
            self.power_loss()
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

    def mkdir(self, path, mode):
        return os.mkdir(self._full(path), mode)

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
        shadow.dirty_from = min(shadow.dirty_from, offset)
        return len(data)

    def truncate(self, path, length, fh=None):
        shadow = self._shadow(path)
        del shadow.data[length:]
        if length > len(shadow.data):
            shadow.data.extend(b'\0' * (length - len(shadow.data)))
        shadow.dirty_from = min(shadow.dirty_from, length)

    def fsync(self, path, datasync, fh):
        shadow = self.shadows.pop(path, None)
        if shadow is None:
            return 0
        fd = os.open(self._full(path), os.O_WRONLY)
        try:
            os.pwrite(fd, bytes(shadow.data[shadow.dirty_from:]), shadow.dirty_from)
            os.ftruncate(fd, len(shadow.data))
            os.fsync(fd)
        finally:
            os.close(fd)
        return 0

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        return 0


def main() -> None:
    # One thread (nothreads): the operations never run concurrently, so the shadows need no lock.
    backing, mount = sys.argv[1], sys.argv[2]
    fs = LazyFS(os.path.realpath(backing))
    FUSE(fs, mount, foreground=True, nothreads=True, allow_other=True, direct_io=True, attr_timeout=0,
         entry_timeout=0, negative_timeout=0)


if __name__ == '__main__':
    main()
