"""What the command line may write, and how: paths that must not overlap, recognising our own outputs, atomic
writes.

Users' files are sacred. The rules (:mod:`g2cons_plugins.cli` applies them before any work):

- **No overlap.** The input(s) and every output path (``--out``, ``--graph``, ``--report``, derived defaults) are
  resolved (symlinks followed); no two may be equal or one inside the other (:func:`check_disjoint`).
- **Replace only what g2cons wrote.** A *folder* g2cons creates (a core input folder, ``select --root``'s
  ``PROJECT/g2cons/``) holds a marker, :data:`MARKER` (``.g2cons-output``: JSON without a suffix, so no host file
  pattern reads it as input), listing every file in it with its SHA-256; an existing non-empty output folder may be
  replaced only if its marker lists every file in it, unchanged (:func:`check_replaceable_folder`). A *single file*
  is written into the user's folder with no marker beside it: an existing file may be replaced only when its
  SHA-256 is still the one g2cons wrote there. g2cons keeps that record outside the user's folder, in its state
  folder (:func:`state_dir`: ``$G2CONS_STATE_DIR``, else ``$XDG_STATE_HOME/g2cons``, else
  ``~/.local/state/g2cons``; one small JSON per output path, :func:`write_output_file` writes both), or the caller
  proves it (``select`` lists the SHA-256 of a data file it wrote in its stamped report). A file the user edited
  is refused even when it carries g2cons's stamp (:func:`recognised_output`: a stamp g2cons writes at its start,
  :data:`STAMP`, or the exact header of an export CSV): the error names the file and says it changed since
  g2cons wrote it. A file named :data:`MARKER` that g2cons did not write is never replaced, and no output may
  take that name. Anything else is refused, naming the path: nothing the user made is deleted or overwritten.
- **Atomic.** Files are written to a temporary sibling, flushed, and renamed into place
  (:func:`atomic_write_text`); folders are built aside and renamed in (:func:`staged_folder`). File modes follow
  the umask.
- **Nothing left behind.** A folder built aside (``.NAME.tmp-*``) and an old output set aside during the swap
  (``.NAME.old-*``) carry a stamp, :data:`STAGING` (who made them: process id and host). A run killed in the
  middle (``kill -9``, power loss) can leave them beside ``NAME``, and ``NAME`` itself missing when it died
  between the two renames of the swap; the next run puts things back before it starts
  (:func:`recover_interrupted`): the previous output is restored when ``NAME`` is missing, and the unfinished
  build and the set-aside copy are removed, each said in one line. Only folders recognisably g2cons's are
  touched (the stamp of a process that is no longer running, or g2cons's marker listing every file, unchanged);
  anything else is left where it is, and said.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError, PersistError

MARKER = ".g2cons-output"  # JSON, but no .json suffix: host file patterns (.*\\.json$) never pick it up
_MARKER_KIND = "g2cons-output"
STAGING = ".g2cons-staging"  # in a folder g2cons builds aside, or sets an old output aside in: who made it
_STAGING_KIND = "g2cons-staging"
STAMP = "g2cons_output"  # how a single-file output says it is g2cons's: first JSON key, XML comment, PNG text...
_HEAD_BYTES = 8192  # a stamp is looked for in a file's first bytes only
# the exact header lines of `g2cons export --format csv` (edges, nodes): CSV has no room for a stamp
EXPORT_CSV_HEADERS = (
    b"source,target,kind,weight,dice,co,cosine",
    b"id,kind,pagerank,df,sentences,name_share,is_name,n_tokens,kept",
)


# ---------------------------------------------------------------------------------------------- modes
def current_umask() -> int:
    """The process umask (read by setting and restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_umask(path: str | Path, directory: bool = False) -> None:
    """Give ``path`` the mode a plain ``open``/``mkdir`` would (``mkstemp``/``mkdtemp`` make 0600/0700)."""
    os.chmod(path, (0o777 if directory else 0o666) & ~current_umask())


def make_temp_dir(parent: Path, prefix: str) -> Path:
    """A fresh hidden folder in ``parent`` (same file system as the target), with umask permissions."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    apply_umask(tmp, directory=True)
    return tmp


# ---------------------------------------------------------------------------------------------- hashing, writing
def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# a full disk, a full quota, a file over the file system's or the process's size limit (ulimit -f)
NO_ROOM = tuple(getattr(errno, n) for n in ("ENOSPC", "EFBIG", "EDQUOT") if hasattr(errno, n))


def no_room_error(e: BaseException, path: Path, kept: str) -> PersistError | None:
    """For a write that ran out of room (:data:`NO_ROOM`): a :class:`~g2cons_plugins.errors.PersistError` naming
    ``path`` (the file or folder being written) and what stays intact (``kept``); None for any other failure."""
    if not isinstance(e, OSError) or isinstance(e, PersistError) or e.errno not in NO_ROOM:
        return None
    fix = "make room" if e.errno != errno.EFBIG else "raise the file size limit (ulimit -f) or write elsewhere"
    return PersistError(f"{path}: cannot write it: {e.strerror or e}; {kept}: {fix} and run again")


def atomic_write_bytes(path: str | Path, data: bytes) -> str:
    """Write ``data`` to ``path`` atomically (temporary sibling, fsync, rename); returns its SHA-256. A full disk
    or a file size limit raises a :class:`~g2cons_plugins.errors.PersistError` naming ``path`` (which is left as
    it was)."""
    path = Path(path)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        apply_umask(name)
        os.replace(name, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(name)
        kept = f"{path} is as it was" if os.path.lexists(path) else f"{path} was not created"
        failed = no_room_error(e, path, f"nothing was written in its place ({kept}, the partial copy removed)")
        if failed is not None:
            raise failed from e
        raise
    return sha256_bytes(data)


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> str:
    """:func:`atomic_write_bytes` of ``text`` encoded with ``encoding``."""
    return atomic_write_bytes(path, text.encode(encoding))


# ---------------------------------------------------------------------------------------------- markers
def _marker_files(folder: Path) -> dict[str, str] | None:
    """The marker's files (relative path -> SHA-256); None when ``folder`` holds no marker, or one g2cons did not
    write (not our JSON): see :func:`foreign_marker`."""
    file = folder / MARKER
    if file.is_symlink() or not file.is_file():
        return None
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    files = data.get("files") if isinstance(data, dict) and data.get("kind") == _MARKER_KIND else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        return None
    return {str(k): v for k, v in files.items()}


def read_marker(folder: Path) -> dict[str, str]:
    """The files (relative path -> SHA-256) that g2cons recorded as written in ``folder``; {} without a marker
    (or with one that is not g2cons's)."""
    return _marker_files(folder) or {}


def foreign_marker(folder: Path) -> bool:
    """True when ``folder`` holds something named :data:`MARKER` that g2cons did not write (it is the user's)."""
    return os.path.lexists(folder / MARKER) and _marker_files(folder) is None


def marker_text(files: Mapping[str, str], command: str = "") -> str:
    """The marker's JSON for ``files`` (relative path -> SHA-256)."""
    body: dict[str, Any] = {"kind": _MARKER_KIND, "command": command, "files": dict(sorted(files.items()))}
    return json.dumps(body, indent=1, ensure_ascii=False) + "\n"


def record_written(folder: Path, files: Mapping[str, str], command: str = "") -> None:
    """Add ``files`` (relative path -> SHA-256) to ``folder``'s marker when ``folder`` already holds one of ours
    (a folder g2cons made, or one an earlier version marked); never creates a marker in a user's folder: a single
    file output is recognised by its content instead (:func:`recognised_output`)."""
    listed = _marker_files(folder)
    if listed is not None:
        atomic_write_text(folder / MARKER, marker_text({**listed, **files}, command))


def json_stamp(kind: str) -> dict[str, str]:
    """The first key of a JSON object g2cons writes as a single file: ``{"g2cons_output": kind, ...}``."""
    return {STAMP: kind}


def xml_stamp(kind: str) -> str:
    """A comment g2cons puts right after the XML declaration of a GraphML/GEXF/SVG file it writes."""
    return f"<!-- {STAMP}: {kind} -->"


def stamp_xml(data: bytes, kind: str) -> bytes:
    """``data`` (an XML document: GraphML, GEXF, SVG) with :func:`xml_stamp` right after its declaration."""
    comment = xml_stamp(kind).encode("utf-8")
    if data.startswith(b"<?xml"):
        end = data.index(b"?>") + 2
        return data[:end] + b"\n" + comment + data[end:]
    return comment + b"\n" + data


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(_HEAD_BYTES)
    except OSError:
        return b""


_JSON_STAMP = re.compile(rb'^\s*\{\s*"' + STAMP.encode() + rb'"\s*:\s*"')


def recognised_output(path: Path) -> bool:
    """True when ``path`` is, by its content, a file g2cons wrote: a JSON object whose first key is :data:`STAMP`,
    an XML (GraphML/GEXF/SVG) or HTML file with g2cons's stamp near its start, a PNG with g2cons's ``Software``
    text, or a CSV whose header is exactly an export header (:data:`EXPORT_CSV_HEADERS`)."""
    if path.is_symlink() or not path.is_file():
        return False
    head = _head(path)
    suffix = path.suffix.lower()
    if suffix == ".json":
        return _JSON_STAMP.match(head) is not None
    if suffix in (".graphml", ".gexf", ".xml", ".svg", ".html", ".htm"):
        return f"<!-- {STAMP}: ".encode() in head[:2048] or f'name="generator" content="{STAMP}'.encode() in head
    if suffix == ".png":
        return head.startswith(b"\x89PNG\r\n\x1a\n") and b"tEXtSoftware\x00" + STAMP.encode() in head
    if suffix == ".csv":
        first = head.split(b"\n", 1)[0].rstrip(b"\r")
        return first in EXPORT_CSV_HEADERS
    return False


# ---------------------------------------------------------------------------------------------- written records
STATE_ENV = "G2CONS_STATE_DIR"
_RECORD_KIND = "g2cons-written"


def state_dir() -> Path:
    """Where g2cons keeps what it must remember between runs (the SHA-256 of each single-file output it wrote):
    ``$G2CONS_STATE_DIR``, else ``$XDG_STATE_HOME/g2cons``, else ``%LOCALAPPDATA%/g2cons`` on Windows, else
    ``~/.local/state/g2cons``. Never inside a user's project."""
    if os.environ.get(STATE_ENV):
        return Path(os.environ[STATE_ENV])
    if os.environ.get("XDG_STATE_HOME"):
        return Path(os.environ["XDG_STATE_HOME"]) / "g2cons"
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "g2cons"
    return Path.home() / ".local" / "state" / "g2cons"


def _real(path: Path) -> str:
    return os.path.realpath(os.path.abspath(path))


def _record_path(path: Path) -> Path:
    key = sha256_bytes(_real(path).encode("utf-8", "surrogateescape"))
    return state_dir() / "written" / f"{key}.json"


def remember_output(path: str | Path, digest: str, command: str = "") -> None:
    """Record that g2cons wrote ``path`` with SHA-256 ``digest`` (in :func:`state_dir`, atomically). When the
    record cannot be written (a read-only home), nothing fails: a rerun then refuses to replace the file, which is
    the safe side."""
    path = Path(path)
    body = {"kind": _RECORD_KIND, "path": _real(path), "sha256": digest, "command": command}
    rec = _record_path(path)
    with contextlib.suppress(OSError):
        rec.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(rec, json.dumps(body, ensure_ascii=False) + "\n")


def remembered_digest(path: str | Path) -> str | None:
    """The SHA-256 g2cons recorded when it last wrote ``path``; None when it has no record of writing it."""
    path = Path(path)
    try:
        data = json.loads(_record_path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    ok = isinstance(data, dict) and data.get("kind") == _RECORD_KIND and data.get("path") == _real(path)
    digest = data.get("sha256") if ok else None
    return digest if isinstance(digest, str) else None


def written_unchanged(path: Path) -> bool:
    """True when g2cons wrote ``path`` and its content is still exactly what it wrote (same SHA-256)."""
    digest = remembered_digest(path)
    return digest is not None and path.is_file() and not path.is_symlink() and sha256_file(path) == digest


def write_output_file(path: str | Path, data: bytes, command: str) -> str:
    """The way the command line writes a single-file output: atomically (:func:`atomic_write_bytes`), its SHA-256
    recorded (:func:`remember_output`, and in its folder's marker when the folder is g2cons's), so that a rerun
    replaces it only while nobody changed it. Returns the SHA-256."""
    path = Path(path)
    digest = atomic_write_bytes(path, data)
    record_written(path.parent, {path.name: digest}, command)
    remember_output(path, digest, command)
    return digest


def _owned(path: Path) -> bool:
    """Listed, unchanged, in the marker of its folder (folders g2cons made; single files of earlier versions)."""
    folder = path.parent
    digest = read_marker(folder).get(path.name)
    return digest is not None and path.is_file() and not path.is_symlink() and sha256_file(path) == digest


def check_replaceable_file(path: Path, flag: str, recognise: Callable[[Path], bool] | None = None) -> None:
    """Fail unless ``path`` is absent, or a file g2cons wrote there and nobody changed since: its SHA-256 equal
    to g2cons's record (:func:`written_unchanged`), to ``recognise``'s proof (the caller's), or to its folder's
    marker. A stamped file (:func:`recognised_output`) whose content is not what g2cons wrote (edited) is refused
    as well, saying so. A path named :data:`MARKER` is refused."""
    if path.name == MARKER:
        raise InputError(f"{flag} {path}: {MARKER} is the name of g2cons's own marker file; choose another name")
    if not os.path.lexists(path):
        return
    if path.is_dir() and not path.is_symlink():
        raise InputError(f"{flag} {path}: is a folder; give a file path")
    if path.is_symlink():
        raise InputError(f"{flag} {path}: is a symbolic link; g2cons never writes through one: choose another path")
    if written_unchanged(path) or (recognise is not None and recognise(path)) or _owned(path):
        return
    if remembered_digest(path) is not None or recognised_output(path):
        why = (
            "has changed since g2cons wrote it (its SHA-256 is not the one g2cons recorded)"
            if remembered_digest(path) is not None
            else "looks like a g2cons output, but g2cons has no record of writing this content here (edited since, "
            "or written by an earlier version, elsewhere, or moved)"
        )
        raise InputError(
            f"{flag} {path}: {why}; g2cons never overwrites a file that may hold your edits: keep it, or delete "
            f"or move it yourself, or give another {flag} path"
        )
    raise InputError(
        f"{flag} {path}: exists and is not an earlier output of g2cons (g2cons recognises its own files by their "
        "content); g2cons never overwrites a file it did not create: remove it or choose another path"
    )


def foreign_entries(folder: Path, owned_dir: Callable[[Path], bool] | None = None) -> list[str]:
    """Entries of ``folder`` (relative paths) that its marker does not prove g2cons wrote, unchanged. A subfolder
    for which ``owned_dir`` is true is g2cons's whole (a graph the CLI saved, which ``add`` may have changed); one
    none of whose files the marker lists is judged by its own marker, when it has one of ours (an output folder
    inside an earlier output)."""
    foreign: list[str] = []

    def scan(base: Path, listed: dict[str, str], here: Path) -> None:
        for p in sorted(here.iterdir()):
            top, rel = p.relative_to(folder).as_posix(), p.relative_to(base).as_posix()
            if p.is_dir() and not p.is_symlink():
                if owned_dir is not None and owned_dir(p):
                    continue
                if any(k.startswith(rel + "/") for k in listed):
                    scan(base, listed, p)
                elif (own := _marker_files(p)) is not None:
                    scan(p, own, p)
                else:
                    foreign.append(top + "/")
            elif p == base / MARKER:
                continue
            elif rel not in listed or p.is_symlink() or sha256_file(p) != listed[rel]:
                foreign.append(top)

    scan(folder, read_marker(folder), folder)
    return foreign


def check_replaceable_folder(folder: Path, flag: str, owned_dir: Callable[[Path], bool] | None = None) -> None:
    """Fail unless ``folder`` is absent, empty, or an earlier g2cons output whose marker lists every file in it,
    unchanged (``owned_dir``: see :func:`foreign_entries`). A :data:`MARKER` g2cons did not write is refused."""
    if not os.path.lexists(folder):
        return
    if not folder.is_dir() or folder.is_symlink():
        raise InputError(f"{flag} {folder}: exists and is not a folder")
    if not any(folder.iterdir()):
        return
    if foreign_marker(folder):
        raise InputError(
            f"{flag} {folder}: {folder / MARKER} was not written by g2cons (it is not g2cons's marker); g2cons never "
            "replaces what it did not create: move it or choose another path"
        )
    if not (folder / MARKER).is_file():
        raise InputError(
            f"{flag} {folder}: folder is not empty and is not an earlier g2cons output (no {MARKER}); "
            "g2cons never deletes what it did not create: choose another path"
        )
    foreign = foreign_entries(folder, owned_dir)
    if foreign:
        raise InputError(
            f"{flag} {folder}: holds files g2cons did not write (or that changed since): {foreign[:5]}; "
            "g2cons never deletes what it did not create: move them or choose another path"
        )


def staging_dir(out: Path, role: str = "tmp") -> Path:
    """A fresh hidden sibling of ``out`` (``.NAME.tmp-*`` to build in, ``.NAME.old-*`` to set the old output
    aside in) holding the :data:`STAGING` stamp, so that a later run recognises it if this one is killed."""
    folder = make_temp_dir(out.parent, f".{out.name}.{role}-")
    body = {"kind": _STAGING_KIND, "role": role, "target": out.name, "pid": os.getpid(), "host": socket.gethostname()}
    (folder / STAGING).write_text(json.dumps(body) + "\n", encoding="utf-8")
    return folder


def publish_folder(tmp: Path, out: Path, recheck: Callable[[], None]) -> None:
    """Move the finished folder ``tmp`` to ``out`` (same file system): a rename when ``out`` is absent; otherwise
    ``recheck()`` (``out`` still ours, right before the swap), the old folder renamed aside, ``tmp`` renamed in, the
    old one removed (the old one is put back if the second rename fails; nothing is left aside if the first one
    fails). ``tmp``'s :data:`STAGING` stamp is removed first: the published folder holds only the output."""
    if not os.path.lexists(out):
        (tmp / STAGING).unlink(missing_ok=True)
        os.replace(tmp, out)
        return
    recheck()
    (tmp / STAGING).unlink(missing_ok=True)
    old = staging_dir(out, "old")
    try:
        os.replace(out, old / out.name)
    except BaseException:  # refused (EBUSY, EXDEV...): nothing moved, nothing left aside
        shutil.rmtree(old, ignore_errors=True)
        raise
    try:
        os.replace(tmp, out)
    except BaseException:
        os.replace(old / out.name, out)
        shutil.rmtree(old, ignore_errors=True)
        raise
    shutil.rmtree(old / out.name, ignore_errors=True)  # only g2cons's own earlier files (checked by recheck)
    shutil.rmtree(old, ignore_errors=True)  # its stamp last: a run killed meanwhile leaves it recognisable


def _staging_stamp(folder: Path) -> dict[str, Any] | None:
    """``folder``'s :data:`STAGING` stamp, if it holds one of g2cons's."""
    file = folder / STAGING
    if file.is_symlink() or not file.is_file():
        return None
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and data.get("kind") == _STAGING_KIND else None


def _running(stamp: dict[str, Any]) -> bool:
    """True when the process that made a stamp may still be running (same host, live pid; another host: assumed
    running, nothing is touched)."""
    if stamp.get("host") != socket.gethostname():
        return True
    pid = stamp.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, another user's
        return True
    return True


def _complete_output(folder: Path, owned_dir: Callable[[Path], bool] | None) -> bool:
    """An output folder of g2cons's, whole: its marker lists every file in it, unchanged."""
    return _marker_files(folder) is not None and not foreign_entries(folder, owned_dir)


def recover_interrupted(out: Path, owned_dir: Callable[[Path], bool] | None = None) -> list[str]:
    """Put back what a run killed while it wrote the folder ``out`` left (see the module doc), and say what was
    done (each line also a warning, which the command line prints as one line). ``owned_dir``: see
    :func:`foreign_entries`. A staging folder of a run still going on is left alone."""
    parent = out.parent
    if not parent.is_dir():
        return []
    said: list[str] = []

    def say(text: str) -> None:
        said.append(text)
        warnings.warn(text, stacklevel=3)

    olds: list[tuple[Path, Path | None, bool]] = []  # (folder aside, previous output whole in it, anything in it)
    for p in sorted(parent.iterdir()):
        role = next((r for r in ("old", "tmp") if p.name.startswith(f".{out.name}.{r}-")), "")
        if not role or p.is_symlink() or not p.is_dir():
            continue
        stamp = _staging_stamp(p)
        if stamp is not None and (stamp.get("target") != out.name or _running(stamp)):
            continue  # another output's, or a run still going on
        names = {q.name for q in p.iterdir()} - {STAGING}
        if role == "tmp":
            if stamp is not None or not names or _complete_output(p, owned_dir):
                shutil.rmtree(p, ignore_errors=True)
                say(f"{p}: removed the unfinished copy of {out} that an interrupted g2cons run left")
                continue
        elif names <= {out.name}:
            prev = p / out.name
            whole = bool(names) and prev.is_dir() and not prev.is_symlink() and _complete_output(prev, owned_dir)
            if stamp is not None or whole or not names:  # stamped: set aside by g2cons after checking it was its own
                olds.append((p, prev if whole else None, bool(names)))
                continue
        say(
            f"{p}: left where it is: named like an interrupted g2cons run's folder, but g2cons cannot recognise "
            "what it holds as its own; move or delete it yourself"
        )
    for folder, whole_prev, anything in olds:
        if whole_prev is not None and not os.path.lexists(out):
            os.replace(whole_prev, out)
            say(f"{out}: restored the previous output, which an interrupted g2cons run had set aside in {folder}")
        elif anything:
            say(f"{folder}: removed the previous output of {out} that an interrupted g2cons run had set aside")
        else:
            say(f"{folder}: removed an empty folder that an interrupted g2cons run left")
        shutil.rmtree(folder, ignore_errors=True)
    return said


@contextlib.contextmanager
def staged_folder(out: Path, command: str, recheck: Callable[[], None]) -> Iterator[Path]:
    """All or nothing: yields a fresh hidden sibling of ``out`` to build the folder in; when the block ends, a
    :data:`MARKER` listing every file in it (with its SHA-256) is added and the folder is published at ``out``
    (:func:`publish_folder`). If the block fails, the sibling is removed and ``out`` is untouched."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = staging_dir(out)
    try:
        yield tmp
        files = {
            p.relative_to(tmp).as_posix(): sha256_file(p)
            for p in sorted(tmp.rglob("*"))
            if p.is_file() and not p.is_symlink() and p not in (tmp / MARKER, tmp / STAGING)
        }
        atomic_write_text(tmp / MARKER, marker_text(files, command))
        publish_folder(tmp, out, recheck)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# ---------------------------------------------------------------------------------------------- overlap
def _resolved(p: Path) -> Path:
    return Path(os.path.realpath(p))


def check_disjoint(inputs: Mapping[str, Path | Iterable[Path] | None], outputs: Mapping[str, Path | None]) -> None:
    """Fail (naming both paths) when an output equals or contains or lies inside an input or another output.

    ``inputs``/``outputs``: flag or role (``"INPUT"``, ``"--out"``) -> path (or several paths for inputs)."""
    named: list[tuple[str, Path, Path, bool]] = []
    for role, value in inputs.items():
        paths = [value] if isinstance(value, (str, Path)) else list(value or [])
        named.extend((role, Path(p), _resolved(Path(p)), False) for p in paths)
    named.extend((role, Path(p), _resolved(Path(p)), True) for role, p in outputs.items() if p is not None)
    for i, (ra, pa, a, out_a) in enumerate(named):
        for rb, pb, b, out_b in named[i + 1 :]:
            if not (out_a or out_b):
                continue  # two inputs may overlap: both are only read
            if a == b:
                raise InputError(f"{ra} {pa} and {rb} {pb} are the same path; outputs must be separate")
            if a in b.parents or b in a.parents:
                outer, inner = ((ra, pa), (rb, pb)) if a in b.parents else ((rb, pb), (ra, pa))
                raise InputError(
                    f"{inner[0]} {inner[1]} is inside {outer[0]} {outer[1]}; inputs and outputs must not contain "
                    "one another"
                )
