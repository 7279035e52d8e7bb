"""The file-system steps of the memory store, none of which follows a symbolic link.

Every path below a tier root is walked one directory at a time with
``openat(O_DIRECTORY | O_NOFOLLOW)``, so a symbolic link planted anywhere
between the root and the target — or as the root itself — is refused rather
than followed, and nothing is created through it. Writes are
temporary file + ``fsync`` + ``rename`` + directory ``fsync``; deletions rename
the directory aside first, under its lock, which a reader holds shared
while it loads the directory through a descriptor checked link-free
(:class:`DirHandle`): a reader sees the whole scope or nothing.

Locks are ``flock`` on a ``.lock`` file in the scope directory plus an
in-process lock per directory: they hold across threads and processes **on a
local file system** (``flock`` is not reliable over NFS or SMB; the store is
for local disks). The store needs POSIX ``dir_fd`` support; elsewhere
:data:`SUPPORTED` is false and every operation reports that instead of acting.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from typing import Final

from okfast.errors import UnsafePathError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

SUPPORTED: Final = (
    fcntl is not None
    and hasattr(os, "O_NOFOLLOW")
    and hasattr(os, "O_DIRECTORY")
    and os.open in os.supports_dir_fd
    and os.mkdir in os.supports_dir_fd
    and os.rename in os.supports_dir_fd
)

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS |= getattr(os, "O_CLOEXEC", 0)
# O_NONBLOCK: a FIFO at a concept's path opens at once and is refused as
# not a regular file, where a blocking open would wait for a writer while
# the scope's lock is held (docs/spec.md §6.3); regular files ignore it.
_FILE_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NONBLOCK", 0)
)
LOCK_NAME = ".lock"
# Something planted at a scope's lock name that no one can lock through:
# every opener refuses it alike (docs/spec.md §6.3), and only an erasure,
# which removes it with the rest, goes on.
_NOT_A_LOCK = f"the scope's lock file {LOCK_NAME} is"
# How a scope's lock file is opened, whatever the access: never through a
# link, and without waiting (a FIFO planted at its name would block the open
# for a writer that never comes; opened at once, it is locked like a file).
_LOCK_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)
TMP_MARK = ".tmp-"
DELETED_PREFIX = ".deleted-"


def _refuse(parent: int, name: str, shown: str) -> UnsafePathError:
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except OSError:
        return UnsafePathError(f"{shown} cannot be opened as a directory")
    if stat.S_ISLNK(st.st_mode):
        return UnsafePathError(f"{shown} is a symbolic link; memory never follows links")
    return UnsafePathError(f"{shown} is not a directory")


#: Linux names each open descriptor under ``/proc/self/fd``: a directory
#: loaded by that name is the one the descriptor holds.
_PROC_FD: Final = os.path.isdir("/proc/self/fd")


class DirHandle:
    """A scope directory, open, checked link-free from the tier root, and
    the name a bundle is loaded and refreshed through: ``/proc/self/fd/N``
    where there is one, so the load reads that very directory whatever is
    put at its name meanwhile (a link to another scope's, docs/spec.md §6.3);
    elsewhere its path. The descriptor closes when the last reference goes:
    a refresh under way holds one, so its name never points at another
    descriptor."""

    def __init__(self, fd: int, path: str) -> None:
        st = os.fstat(fd)
        self.fd = fd
        self.key = (st.st_dev, st.st_ino)
        self.path = f"/proc/self/fd/{fd}" if _PROC_FD else path
        weakref.finalize(self, os.close, fd)


def open_root(root: str) -> int | None:
    """The tier root as a directory fd; ``None`` when missing; a link is refused."""
    try:
        return os.open(root, _DIR_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            kind = "a symbolic link" if os.path.islink(root) else "not a directory"
            raise UnsafePathError(f"tier root {root} is {kind}") from e
        raise


def open_chain(root_fd: int, parts: Sequence[str], *, create: bool) -> int | None:
    """Walk ``parts`` below ``root_fd`` without following links; the last
    directory's fd, or ``None`` when one is missing and ``create`` is false.
    Created directories are private (0700) and made durable in their parent."""
    fd = os.dup(root_fd)
    try:
        for i, name in enumerate(parts):
            shown = "/".join(parts[: i + 1])
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    return None
                nxt = _make(fd, name, shown)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise _refuse(fd, name, shown) from e
                if e.errno == errno.ENAMETOOLONG and not create:
                    # No directory can have that name (a scope id past 238
                    # bytes): missing, as every other absent scope is.
                    return None
                raise
            os.close(fd)
            fd = nxt
        out, fd = fd, -1
        return out
    finally:
        if fd >= 0:
            os.close(fd)


def _make(parent: int, name: str, shown: str) -> int:
    """Directory ``name`` in ``parent``, made when missing, opened. A delete
    may rename it aside between the two: it is made again."""
    for _ in range(8):
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=parent)
        # Made here, or by a writer racing this one, which may not have made
        # it durable yet: a write acknowledged below it must not rest on an
        # entry still only in memory (§6.3).
        os.fsync(parent)
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            continue
        except OSError as e:
            raise _refuse(parent, name, shown) from e
    raise _refuse(parent, name, shown)


def same_directory(a: int, b: int) -> bool:
    sa, sb = os.fstat(a), os.fstat(b)
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


class _Locks:
    """One ``threading.Lock`` per directory identity, dropped when unused."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: weakref.WeakValueDictionary[tuple[int, int], threading.Lock] = (
            weakref.WeakValueDictionary()
        )

    def get(self, key: tuple[int, int]) -> threading.Lock:
        with self._guard:
            lock = self._locks.get(key)
            if lock is None:
                lock = threading.Lock()
                self._locks[key] = lock
            return lock


_LOCKS = _Locks()

#: The lock files this process holds open (locked or being locked): a
#: child forked meanwhile closes its copies, since a ``flock`` belongs to the
#: open file and would be held for as long as the child lives, and starts
#: with in-process locks of its own, since one a parent's thread held would
#: be held forever in a child without that thread (docs/spec.md §6.3).
_HELD: set[int] = set()
#: Held while a lock file is opened and counted, or uncounted and closed,
#: and across a fork: a child never inherits one open but not yet counted.
_COUNTING = threading.Lock()


def _forked() -> None:
    global _LOCKS, _COUNTING
    _LOCKS = _Locks()
    _COUNTING = threading.Lock()
    for fd in list(_HELD):
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=lambda: _COUNTING.acquire(),
        after_in_parent=lambda: _COUNTING.release(),
        after_in_child=_forked,
    )


def _open_lock(dir_fd: int, flags: int) -> int:
    """The directory's lock file opened with ``flags`` (``_LOCK_FLAGS`` added),
    counted as held until :func:`_close_lock`."""
    with _COUNTING:
        try:
            fd = os.open(LOCK_NAME, flags | _LOCK_FLAGS, 0o600, dir_fd=dir_fd)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.EMLINK):
                raise UnsafePathError(f"{_NOT_A_LOCK} a symbolic link (never followed)") from e
            if e.errno == errno.EISDIR:
                raise UnsafePathError(f"{_NOT_A_LOCK} a directory") from e
            raise
        if stat.S_ISDIR(os.fstat(fd).st_mode):  # opened for reading: no EISDIR
            os.close(fd)
            raise UnsafePathError(f"{_NOT_A_LOCK} a directory")
        _HELD.add(fd)
    return fd


def _close_lock(fd: int) -> None:
    with _COUNTING:
        _HELD.discard(fd)
        os.close(fd)


@contextlib.contextmanager
def locked(dir_fd: int, *, shared: bool = False, erasing: bool = False) -> Iterator[bool]:
    """Lock of one scope directory: exclusive (in-process, then ``flock``),
    or shared (``flock`` only: each holder opens the lock file on its own,
    so a shared and an exclusive holder exclude each other across threads
    as across processes). A writer holds the directories above its own
    shared, so a delete of one of them waits for it (docs/spec.md §6.3).
    Yields ``False``, holding nothing, when the directory was removed (a
    delete got there first): the caller starts again, as for one renamed.
    A lock name that is no file refuses the lock (``UnsafePathError``) but
    to an ``erasing`` holder, for whom the in-process lock is enough: no
    reader, writer or other delete can lock through that name either."""
    with contextlib.ExitStack() as stack:
        if not shared:
            st = os.fstat(dir_fd)
            stack.enter_context(_LOCKS.get((st.st_dev, st.st_ino)))
        try:
            fd = _open_lock(dir_fd, os.O_RDWR | os.O_CREAT)
        except FileNotFoundError:
            yield False
            return
        except UnsafePathError:
            if not erasing or shared:
                raise
            yield True
            return
        # Closing releases the flock.
        stack.callback(_close_lock, fd)
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield True


@contextlib.contextmanager
def read_locked(dir_fd: int) -> Iterator[None]:
    """A reader's shared lock of a scope directory: a delete (which holds it
    exclusively until the directory is gone) and a write wait for the read,
    and the read for them, so a reader sees the scope whole or, once a delete
    began, nothing. Nothing is created: with no lock file (never written by
    okfast, or removed last by a delete that emptied the directory) the read
    goes on unlocked."""
    try:
        fd = _open_lock(dir_fd, os.O_RDONLY)
    except FileNotFoundError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        _close_lock(fd)


def lock_chain(root_fd: int, parts: Sequence[str], held: contextlib.ExitStack) -> int | None:
    """The directory ``parts`` below ``root_fd`` (created when missing),
    locked exclusively under shared locks of the scope directories above it
    (``parts[:2]`` on: the first part is the tier's folder, which no delete
    removes), taken top down and kept by ``held``. Each is checked, once
    locked, to be the one its parent holds under its name: ``None`` when one
    was renamed aside (deleted) before its lock was taken, and the caller
    starts again. Once this returns a directory, none of the chain can be
    renamed until ``held`` closes."""
    fd = open_chain(root_fd, parts[:1], create=True)
    assert fd is not None
    held.callback(os.close, fd)
    for depth in range(2, len(parts) + 1):
        # Below a parent that is live and locked (or the tier's folder).
        nxt = open_chain(fd, parts[depth - 1 : depth], create=True)
        assert nxt is not None
        held.callback(os.close, nxt)
        if not held.enter_context(locked(nxt, shared=depth < len(parts))):
            return None
        if not still_at(fd, parts[depth - 1], nxt):
            return None
        if depth == len(parts):
            # What a killed delete of this scope left beside it.
            sweep_aside(fd)
        fd = nxt
    return fd


def still_at(parent: int, name: str, locked_fd: int) -> bool:
    """Whether ``locked_fd`` is still the directory ``parent`` holds as
    ``name``: a delete may have renamed it aside while its lock was awaited."""
    now = open_chain(parent, [name], create=False)
    if now is None:
        return False
    try:
        return same_directory(locked_fd, now)
    finally:
        os.close(now)


def read_file(dir_fd: int, name: str) -> bytes | None:
    """A regular file's bytes, ``None`` when absent; a link is refused."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EMLINK):
            raise UnsafePathError(f"{name} is a symbolic link; memory never follows links") from e
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePathError(f"{name} is not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def replace_file(dir_fd: int, name: str, data: bytes) -> None:
    """Atomically and durably make ``name`` hold ``data``: a temporary file in the
    same directory, written and fsynced, renamed over ``name``, directory fsynced."""
    # Not derived from ``name``: a name of up to 252 bytes plus a suffix would
    # pass the file system's 255 (docs/spec.md §6.3).
    tmp = f"{TMP_MARK}{os.getpid()}-{secrets.token_hex(8)}"
    fd = os.open(
        tmp,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
        dir_fd=dir_fd,
    )
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    os.fsync(dir_fd)


def sweep(dir_fd: int) -> None:
    """Remove what a killed writer left behind: temporary files. Call with
    the directory's lock held."""
    with os.scandir(dir_fd) as it:
        names = [e.name for e in it if TMP_MARK in e.name and e.name.startswith(".")]
    for n in names:
        with contextlib.suppress(OSError):
            os.unlink(n, dir_fd=dir_fd)


#: Directories :func:`sweep_aside` found nothing aside in, by (device,
#: inode): their (mtime, ctime) then. Each write and delete sweeps its parent,
#: and listing a tenant of 64,000 users cost 30 ms a write; a directory whose
#: times have not moved holds no entry made since (docs/spec.md §6.3). Only
#: an mtime at least _SETTLED_NS old is kept: a rename aside in the clock tick
#: of the look would leave a newer one as it was.
_CLEAN: dict[tuple[int, int], tuple[int, int]] = {}
_SETTLED_NS: Final = 2_000_000_000
_CLEAN_MAX: Final = 1 << 16


def sweep_aside(parent_fd: int) -> None:
    """Remove the directories a delete renamed aside in ``parent_fd`` and
    did not finish removing (it was killed): each whose lock no live delete
    holds (a delete holds it until the directory is gone)."""
    st = os.fstat(parent_fd)
    key, stamp = (st.st_dev, st.st_ino), (st.st_mtime_ns, st.st_ctime_ns)
    if _CLEAN.get(key) == stamp:
        return
    with os.scandir(parent_fd) as it:
        names = [e.name for e in it if e.name.startswith(DELETED_PREFIX)]
    if not names and time.time_ns() - st.st_mtime_ns >= _SETTLED_NS:
        if len(_CLEAN) >= _CLEAN_MAX:
            _CLEAN.clear()
        _CLEAN[key] = stamp
    for n in names:
        with contextlib.suppress(OSError):
            fd = os.open(n, _DIR_FLAGS, dir_fd=parent_fd)
            try:
                lock = _probe_lock(fd)
                if lock is None:
                    continue
                try:
                    remove_tree(parent_fd, n)
                finally:
                    if lock >= 0:
                        _close_lock(lock)
            finally:
                os.close(fd)


def _probe_lock(dir_fd: int, *, wait: bool = False) -> int | None:
    """The directory's lock file, locked exclusively (``-1``: it has none, or
    its name is no file — a directory, a link — which no reader can hold, as
    readers open it as this does); without ``wait``, ``None`` when someone
    holds it."""
    try:
        lock = _open_lock(dir_fd, os.O_RDWR)
    except OSError:
        return -1
    try:
        fcntl.flock(lock, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        _close_lock(lock)
        return None
    return lock


def remove_tree(parent_fd: int, name: str, *, held: bool = True) -> None:
    """Remove a directory tree by fds; links inside are unlinked, never
    followed. Its lock file goes last, so a delete's lock is held while it
    empties the directory; one made meanwhile by a writer that had the
    directory open before the rename (and starts again once it sees it
    moved) is removed on another pass. What another remover removed first
    is not missed. The caller holds the top directory's lock (``held``);
    each directory below is locked before it is emptied, so a read of a
    scope below (a tenant's user, a user's session) that began before the
    rename finishes first: it sees the scope whole, or, once the remover
    has it, nothing (docs/spec.md §6.3)."""
    fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    lock = -1
    try:
        if not held:
            taken = _probe_lock(fd, wait=True)  # waiting: never None
            lock = -1 if taken is None else taken
        for _ in range(_REMOVE_PASSES):
            with os.scandir(fd) as it:
                entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
            entries.sort(key=lambda e: e[0] == LOCK_NAME)
            for n, is_dir in entries:
                with contextlib.suppress(FileNotFoundError):
                    if is_dir:
                        remove_tree(fd, n, held=False)
                    else:
                        os.unlink(n, dir_fd=fd)
            try:
                os.rmdir(name, dir_fd=parent_fd)
                return
            except FileNotFoundError:
                return
            except OSError as e:
                if e.errno != errno.ENOTEMPTY:
                    raise
        os.rmdir(name, dir_fd=parent_fd)
    finally:
        if lock >= 0:
            _close_lock(lock)
        os.close(fd)


#: Passes of :func:`remove_tree` over a directory that entries reappear in.
_REMOVE_PASSES = 16


def holds_files(dir_fd: int) -> bool:
    """Whether the tree below ``dir_fd`` holds anything but directories,
    lock files and what killed writers or deletes left (temporary files,
    directories renamed aside): memory, or a file put there by hand."""
    with os.scandir(dir_fd) as it:
        entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
    for name, is_dir in entries:
        if name.startswith(DELETED_PREFIX) or (name.startswith(".") and TMP_MARK in name):
            continue
        if not is_dir:
            if name != LOCK_NAME:
                return True
            continue
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            continue
        try:
            if holds_files(fd):
                return True
        finally:
            os.close(fd)
    return False


def delete_aside(parent_fd: int, name: str) -> bool:
    """Rename ``name`` aside (atomic: readers see it whole or not at all), make
    the rename durable, then remove it. ``False`` when there was nothing."""
    aside = f"{DELETED_PREFIX}{secrets.token_hex(8)}"
    try:
        os.rename(name, aside, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
    except FileNotFoundError:
        return False
    os.fsync(parent_fd)
    # Gone already: a sweep saw it as left behind (the lock file goes last).
    with contextlib.suppress(FileNotFoundError):
        remove_tree(parent_fd, aside)
    return True
