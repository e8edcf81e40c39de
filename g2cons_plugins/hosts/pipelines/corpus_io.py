"""Read a host pipeline's input, chunk it the way the host does, and write selected chunks back in that format.

Input kinds (:func:`read_corpus`):

- ``folder``: a directory of ``.txt``/``.md`` files, searched recursively (MS GraphRAG's ``input/`` layout,
  or the files one would pass to LightRAG's ``insert``); a single ``.txt``/``.md`` file is a folder of one.
  Document id: the file's path relative to the folder (``sub/a.txt``).
- ``csv``: a CSV file with a text column (``text_column``, default ``"text"``; MS GraphRAG's CSV input).
  Document id: the ``id`` column when there is one, else a content hash.
- ``jsonl``: one JSON object per line with a text field; ``json``: a JSON list of such objects.
  Document id: the ``id`` field when there is one, else a content hash.

Chunking (:func:`chunk_documents`) is MS GraphRAG's token splitter: windows of ``chunk_tokens`` cl100k tokens
that start every ``chunk_tokens - chunk_overlap`` tokens (default 1,200 / 100, also LightRAG's default sizes).
A document that fits in one window is one chunk, its own text, with the document id as chunk id; a longer one
gives chunks ``"{doc_id}#{k}"`` (text decoded from the token window). ``chunk_tokens=0`` never splits.

Writers (:func:`write_selection`) write the kept chunks in the input's format: a one-chunk document is written
exactly as it was read (same file name, same row/record with all its other fields); a split document gives one
file (``a.part0003.txt``) / row / record per kept chunk, the other fields copied and the id field (when there is
one) set to the chunk id. Every written text is the chunk's text byte for byte, so the token counts of the
selection report are the cl100k counts of what is written. Files are written to a temporary sibling first and
moved into place at the end: a failure leaves no half-written output. An existing output is replaced only when
g2cons wrote it (see :mod:`g2cons_plugins.storage.outputs`): a folder output holds a ``.g2cons-output`` marker listing
its files; a file output has no marker beside it: the selection report written with it lists its SHA-256.

Text must be valid Unicode: a lone surrogate (``"\\ud800"`` in JSON) is refused with an error naming the record,
before any work.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import hashlib
import io
import itertools
import json
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ...chunks import Chunk, content_id
from ...errors import InputError
from ...storage.outputs import (
    MARKER,
    apply_umask,
    check_replaceable_file,
    check_replaceable_folder,
    marker_text,
    no_room_error,
    publish_folder,
    recognised_output,
    recover_interrupted,
    sha256_bytes,
    sha256_file,
    staging_dir,
)
from ...text import TiktokenTokenizer, Tokenizer, get_tokenizer

Kind = Literal["folder", "csv", "jsonl", "json"]
TEXT_SUFFIXES = (".txt", ".md")
JSONL_SUFFIXES = (".jsonl", ".ndjson")
DEFAULT_CHUNK_TOKENS = 1200
DEFAULT_CHUNK_OVERLAP = 100
#: The streaming readers (:func:`stream_corpus`) read a JSONL or CSV file this many bytes at a time.
BLOCK_BYTES = 1 << 18


@dataclass
class Document:
    """One input document: a file of a folder, a CSV row, or a JSON record."""

    id: str
    text: str
    record: dict[str, Any] = field(default_factory=dict)  # CSV row / JSON object, all fields, for writing back
    path: str | None = None  # folder input: path relative to the folder


@dataclass
class Corpus:
    """What :func:`read_corpus` read: the documents and what is needed to write them back."""

    kind: Kind
    path: Path
    documents: list[Document]
    text_column: str = "text"
    id_column: str | None = None  # the id field/column, when the input has one
    fieldnames: list[str] = field(default_factory=list)  # CSV header
    encoding: str = "utf-8"


_Docs = Iterator["Document | None"]  # a reader's records: None for one skipped (empty, --skip-empty)


def detect_kind(path: Path) -> Kind:
    """``folder`` for a directory or a .txt/.md file; ``csv``, ``jsonl`` or ``json`` by suffix."""
    if path.is_dir():
        return "folder"
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        return "folder"
    if suffix == ".csv":
        return "csv"
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if suffix == ".json":
        return "json"
    raise InputError(
        f"{path}: unknown input kind; give a folder of .txt/.md files, a .txt/.md file, a .csv, a .jsonl or a .json"
    )


def _check_exists(path: Path) -> None:
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")


def check_text(text: str, where: str, what: str = "text") -> None:
    """Fail, naming ``where``, when ``text`` is not valid Unicode (a lone surrogate cannot be encoded)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InputError(
            f"{where}: {what} holds a lone surrogate ({text[e.start]!r} at character {e.start}), which is not valid "
            "Unicode text; fix the input"
        ) from None


# byte order marks of the wide Unicode encodings (UTF-32 first: its LE mark starts with UTF-16's)
_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def _check_bom(head: bytes, where: str, encoding: str) -> None:
    """Fail when ``head`` (a file's first bytes) starts with the byte order mark of a wide encoding."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            raise InputError(
                f"{where}: {name} text (it starts with a {name} byte order mark), read as {encoding}: re-save it "
                f"as UTF-8, or give its encoding (--encoding {name.lower()}; GraphRAG: input.encoding)"
            )


def _decode(data: bytes, where: str, encoding: str) -> str:
    """``data`` decoded with ``encoding``. A UTF-16/UTF-32 file (byte order mark) read as another encoding is named
    as such (re-save it as UTF-8, or give its encoding), not called binary; NUL bytes otherwise mean binary."""
    try:
        codec = codecs.lookup(encoding).name
    except LookupError:
        raise InputError(f"unknown text encoding {encoding!r}") from None
    wide = codec.startswith(("utf-16", "utf-32"))
    if not wide:
        _check_bom(data, where, encoding)
        if b"\x00" in data:
            raise InputError(f"{where}: binary file (contains NUL bytes); only text files can be read")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as e:
        raise InputError(
            f"{where}: not valid {encoding} text (byte {e.start}); a binary file, or pass --encoding"
        ) from None
    if wide and "\x00" in text:
        raise InputError(f"{where}: binary file (contains NUL characters); only text files can be read")
    return text


def _progress(items: Iterable[Any], show: bool, desc: str, total: int | None = None) -> Iterable[Any]:
    if not show:
        return items
    from tqdm.auto import tqdm

    bar: Iterable[Any] = tqdm(items, desc=desc, total=total, unit="doc", file=sys.stderr)
    return bar


def _names(paths: Sequence[Path], base: Path, n: int = 5) -> str:
    shown = ", ".join(p.relative_to(base).as_posix() for p in paths[:n])
    return shown + (f", ... ({len(paths) - n} more)" if len(paths) > n else "")


def _text_files(folder: Path) -> list[Path]:
    """The .txt/.md files under ``folder`` (hidden ones left out); any other file (a PDF, an image) is named in a
    warning: it is not read, and the user should know."""
    files: list[Path] = []
    other: list[Path] = []
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts):
            (files if p.suffix.lower() in TEXT_SUFFIXES else other).append(p)
    if not files:
        extra = (
            f"; {len(other)} other file(s), not read: {_names(other, folder)} (convert them to .txt)" if other else ""
        )
        raise InputError(f"{folder}: no .txt or .md files in this folder (searched recursively){extra}")
    if other:
        warnings.warn(
            f"{folder}: {len(other)} file(s) skipped, only .txt/.md files are read: {_names(other, folder)}; "
            "convert them to .txt to include them",
            stacklevel=3,
        )
    return files


def _folder_docs(
    path: Path,
    encoding: str,
    skip_empty: bool,
    show_progress: bool,
    state: ReadState,
    files: Sequence[Path] | None = None,
) -> Iterator[Document]:
    if files is None:
        if path.is_dir():
            base, files = path, _text_files(path)
        else:
            base, files = path.parent, [path]
    else:
        base = path
    found = False
    for f in _progress(files, show_progress, "read", len(files)):
        try:
            data = f.read_bytes()
        except OSError as e:
            raise InputError(f"{f}: cannot read ({e.strerror or e})") from None
        state.bytes_read += len(data)
        text = _decode(data, str(f), encoding)
        del data
        rel = f.relative_to(base).as_posix()
        if not text.strip():
            if skip_empty:
                warnings.warn(f"{f}: empty file skipped", stacklevel=2)
                continue
            raise InputError(f"{f}: empty file (no text); remove it or pass --skip-empty")
        found = True
        yield Document(id=rel, text=text, path=rel)
    if not found:
        raise InputError(f"{path}: every file is empty")


def _read_folder(
    path: Path, encoding: str, skip_empty: bool, show_progress: bool, files: Sequence[Path] | None = None
) -> Corpus:
    docs = list(_folder_docs(path, encoding, skip_empty, show_progress, ReadState(), files))
    return Corpus(kind="folder", path=path, documents=docs, encoding=encoding)


def _record_doc(rec: Any, where: str, text_column: str, id_column: str | None, skip_empty: bool) -> Document | None:
    if not isinstance(rec, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(rec).__name__}")
    if text_column not in rec:
        raise InputError(
            f"{where}: no {text_column!r} field (fields: {sorted(rec)}); pass --text-column to name the text field"
        )
    text = rec[text_column]
    if not isinstance(text, str):
        raise InputError(f"{where}: field {text_column!r} must be a string, got {type(text).__name__}")
    if "\x00" in text:
        raise InputError(f"{where}: text contains NUL bytes (binary data is not text)")
    check_text(text, where, f"field {text_column!r}")
    if not text.strip():
        if skip_empty:
            warnings.warn(f"{where}: empty text skipped", stacklevel=3)
            return None
        raise InputError(f"{where}: empty text; remove it or pass --skip-empty")
    rid = rec.get(id_column) if id_column else None
    doc_id = str(rid) if rid not in (None, "") else content_id(text)
    check_text(doc_id, where, f"id field {id_column!r}")
    return Document(id=doc_id, text=text, record=rec)


def _byte_bar(path: Path, show: bool) -> Any:
    """A progress bar over the bytes of ``path`` (None unless ``show``)."""
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=path.stat().st_size, desc="read", unit="B", unit_scale=True, file=sys.stderr)


def _text_blocks(path: Path, encoding: str, state: ReadState, show_progress: bool) -> Iterator[str]:
    """The text of ``path``, decoded :data:`BLOCK_BYTES` at a time with the checks of :func:`_decode` and its
    errors (a byte order mark of another encoding, NUL bytes, invalid bytes: the byte's offset in the file)."""
    try:
        codec = codecs.lookup(encoding)
    except LookupError:
        raise InputError(f"unknown text encoding {encoding!r}") from None
    wide = codec.name.startswith(("utf-16", "utf-32"))
    decoder = codec.incrementaldecoder("strict")
    where = str(path)
    try:
        fh = path.open("rb")
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror or e})") from None
    bar = _byte_bar(path, show_progress)
    try:
        with fh:
            while True:
                first = state.bytes_read == 0
                data = fh.read(max(BLOCK_BYTES, 4) if first else BLOCK_BYTES)
                if first and not wide:
                    _check_bom(data, where, encoding)  # a whole mark is in the first read
                if not wide and b"\x00" in data:
                    raise InputError(f"{where}: binary file (contains NUL bytes); only text files can be read")
                pending = len(decoder.getstate()[0])
                try:
                    text = decoder.decode(data, not data)
                except UnicodeDecodeError as e:
                    raise InputError(
                        f"{where}: not valid {encoding} text (byte {state.bytes_read - pending + e.start}); a "
                        "binary file, or pass --encoding"
                    ) from None
                if wide and "\x00" in text:
                    raise InputError(f"{where}: binary file (contains NUL characters); only text files can be read")
                state.bytes_read += len(data)
                if bar is not None:
                    bar.update(len(data))
                if text:
                    yield text
                if not data:
                    return
    finally:
        if bar is not None:
            bar.close()


def _lines(blocks: Iterable[str]) -> Iterator[str]:
    """The lines of the text ``blocks`` make, as ``text.split("\\n")`` gives them (the last one, even empty)."""
    rest = ""
    for block in blocks:
        lines = (rest + block).split("\n")
        rest = lines.pop()
        yield from lines
    yield rest


def _csv_lines(blocks: Iterable[str]) -> Iterator[str]:
    """The lines of the text ``blocks`` make, ends kept, split as ``io.StringIO(text, newline="")`` splits them
    (``\\n``, ``\\r\\n`` or ``\\r``): what the csv module reads."""
    rest = ""
    for block in blocks:
        lines = io.StringIO(rest + block, newline="").readlines()
        rest = lines.pop() if lines and not lines[-1].endswith("\n") else ""  # "...\r" may be followed by "\n"
        yield from lines
    if rest:
        yield rest


def _jsonl_docs(path: Path, text_column: str, encoding: str, skip_empty: bool, state: ReadState, show: bool) -> _Docs:
    records = False
    for n, line in enumerate(_lines(_text_blocks(path, encoding, state, show)), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{path}:{n}: not valid JSON ({e.msg})") from None
        records = True
        if isinstance(rec, dict) and "id" in rec:
            state.id_column = "id"
        # "id" whether or not another record has one: a record without it gets the content id either way
        yield _record_doc(rec, f"{path}:{n}", text_column, "id", skip_empty)
    if not records:
        raise InputError(f"{path}: empty file (no records)")


def _json_docs(path: Path, text_column: str, encoding: str, skip_empty: bool, state: ReadState, show: bool) -> _Docs:
    """A JSON list is parsed whole (the one input not read a record at a time)."""
    data = path.read_bytes()
    state.bytes_read = len(data)
    text = _decode(data, str(path), encoding)
    del data
    if not text.strip():
        raise InputError(f"{path}: empty file (no records)")
    try:
        records = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON ({e.msg}, line {e.lineno})") from None
    del text
    if isinstance(records, dict):
        records = [records]
    if not isinstance(records, list) or not records:
        raise InputError(f"{path}: expected a non-empty JSON list of objects")
    state.id_column = "id" if any(isinstance(r, dict) and "id" in r for r in records) else None
    for i, r in enumerate(_progress(records, show, "read", len(records))):
        yield _record_doc(r, f"{path}[{i}]", text_column, state.id_column, skip_empty)


def _csv_docs(path: Path, text_column: str, encoding: str, skip_empty: bool, state: ReadState, show: bool) -> _Docs:
    blocks = _text_blocks(path, encoding, state, show)
    head: list[str] = []  # the blocks up to the first one with text (an input of white space only is empty)
    for block in blocks:
        head.append(block)
        if block.strip():
            break
    else:
        raise InputError(f"{path}: empty file (no header, no rows)")
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    reader = csv.DictReader(_csv_lines(itertools.chain(head, blocks)))
    del head
    try:
        fieldnames = list(reader.fieldnames or [])
    except csv.Error as e:
        raise InputError(f"{path}: not valid CSV ({e})") from None
    if text_column not in fieldnames:
        raise InputError(f"{path}: no column {text_column!r} (columns: {fieldnames}); pass --text-column")
    state.fieldnames = fieldnames
    state.id_column = id_col = "id" if "id" in fieldnames else None
    rows = 0
    try:
        for n, row in enumerate(reader, 1):
            if None in row:
                raise InputError(f"{path} row {n}: more fields than the header has columns")
            rows = n
            yield _record_doc(dict(row), f"{path} row {n}", text_column, id_col, skip_empty)
    except csv.Error as e:
        raise InputError(f"{path}: not valid CSV ({e})") from None
    if not rows:
        raise InputError(f"{path}: a header but no rows")


def _unique(docs: _Docs, path: Path) -> Iterator[Document]:
    """``docs`` without the records skipped (None), each id once: an id again with the same text is kept once (a
    warning), with another text it fails. A digest of each text is kept, not the text."""
    seen: dict[str, bytes] = {}
    for d in docs:
        if d is None:
            continue
        digest = hashlib.blake2b(d.text.encode("utf-8"), digest_size=16).digest()
        known = seen.get(d.id)
        if known is not None:
            if known != digest:
                raise InputError(f"{path}: id {d.id!r} appears twice with different text")
            warnings.warn(f"{path}: document {d.id!r} appears twice with the same text; kept once", stacklevel=3)
            continue
        seen[d.id] = digest
        yield d
    if not seen:
        raise InputError(f"{path}: every record is empty")


_READERS = {"jsonl": _jsonl_docs, "json": _json_docs, "csv": _csv_docs}


@dataclass
class ReadState:
    """What a :class:`CorpusStream` has read so far; it changes as the documents are read."""

    documents: int = 0  # documents given
    characters: int = 0  # of their texts
    bytes_read: int = 0  # of the input (read ahead of the documents given by up to one block)
    id_column: str | None = None  # the id field/column: CSV from the header, JSON(L) once a record has one
    fieldnames: list[str] = field(default_factory=list)  # CSV header, once read


class CorpusStream:
    """An input read one document at a time (:func:`stream_corpus`), with :func:`read_corpus`'s checks and errors
    (each raised when its document is reached). Iterate it once; :attr:`state` says what was read so far."""

    def __init__(
        self, kind: Kind, path: Path, text_column: str, encoding: str, skip_empty: bool, show_progress: bool
    ) -> None:
        self.kind, self.path, self.text_column, self.encoding = kind, path, text_column, encoding
        self.skip_empty, self.show_progress = skip_empty, show_progress
        self.state = ReadState()
        self._started = False

    def __iter__(self) -> Iterator[Document]:
        if self._started:
            raise RuntimeError(f"{self.path}: a CorpusStream is read once; call stream_corpus again")
        self._started = True
        return self._documents()

    def _documents(self) -> Iterator[Document]:
        st = self.state
        if self.kind == "folder":
            docs: Iterator[Document] = _folder_docs(self.path, self.encoding, self.skip_empty, self.show_progress, st)
        else:
            read = _READERS[self.kind]
            records = read(self.path, self.text_column, self.encoding, self.skip_empty, st, self.show_progress)
            docs = _unique(records, self.path)
        for d in docs:
            st.documents += 1
            st.characters += len(d.text)
            yield d

    def input_bytes(self) -> int:
        """The size of the input in bytes (a folder: of the .txt/.md files it reads)."""
        if self.kind != "folder" or self.path.is_file():
            return self.path.stat().st_size
        with warnings.catch_warnings():  # the files left out are named when the documents are read
            warnings.simplefilter("ignore")
            return sum(f.stat().st_size for f in _text_files(self.path))


def stream_corpus(
    path: str | Path,
    text_column: str = "text",
    encoding: str = "utf-8",
    skip_empty: bool = False,
    show_progress: bool = False,
) -> CorpusStream:
    """The documents of a folder of .txt/.md files, a .txt/.md file, a CSV, a JSONL or a JSON list (see module
    doc), read one at a time: a folder file by file, a JSONL or CSV file :data:`BLOCK_BYTES` at a time (progress
    in bytes where ``show_progress``); a JSON list is parsed whole (JSON has no record boundaries to stop at).
    Nothing but the current document is held, and a digest per document id (to find an id given twice).

    The path and its kind are checked at once; everything else as :func:`read_corpus` checks it, with the same
    errors, raised when the document at fault is reached (so an input with several faults may report another
    one first: the reader stops at the first it meets)."""
    path = Path(path)
    _check_exists(path)
    return CorpusStream(detect_kind(path), path, text_column, encoding, skip_empty, show_progress)


def read_corpus(
    path: str | Path,
    text_column: str = "text",
    encoding: str = "utf-8",
    skip_empty: bool = False,
    show_progress: bool = False,
) -> Corpus:
    """Read a folder of .txt/.md files, a .txt/.md file, a CSV, a JSONL or a JSON list (see module doc): every
    document of :func:`stream_corpus`, held.

    Raises InputError, naming the file (and line or row), for: a missing path; a folder without .txt/.md files;
    an empty file or record (unless ``skip_empty``); a binary file; a missing text column; invalid JSON/CSV.
    """
    stream = stream_corpus(path, text_column, encoding, skip_empty, show_progress)
    docs = list(stream)
    if stream.kind == "folder":
        return Corpus(kind="folder", path=stream.path, documents=docs, encoding=encoding)
    st = stream.state
    return Corpus(stream.kind, stream.path, docs, text_column, st.id_column, st.fieldnames, encoding)


def path_id(path: str | Path) -> str:
    """The document id of a file given by path (``g2cons add``/``remove``): the path as given, normalised
    (``./new//a.txt`` -> ``new/a.txt``), with ``/`` separators."""
    return Path(os.path.normpath(path)).as_posix()


def read_many(
    paths: Sequence[str | Path],
    text_column: str = "text",
    encoding: str = "utf-8",
    skip_empty: bool = False,
    show_progress: bool = False,
) -> list[Corpus]:
    """Read several inputs (``g2cons add``). A .txt/.md file, or a file found in a given folder, keeps its path
    as given, normalised (:func:`path_id`), as document id: ``g2cons remove DIR new/report.txt`` takes the same
    path, and two ``report.txt`` in different folders do not collide. CSV/JSON records keep their ``id``."""
    corpora: list[Corpus] = []
    loose: list[Path] = []
    for p in map(Path, paths):
        _check_exists(p)
        if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES:
            loose.append(p)
        elif p.is_dir():
            c = read_corpus(p, text_column, encoding, skip_empty, show_progress)
            for d in c.documents:
                d.id = path_id(p / (d.path or d.id))
            corpora.append(c)
        else:
            corpora.append(read_corpus(p, text_column, encoding, skip_empty, show_progress))
    if loose:
        docs: list[Document] = []
        for p in loose:
            for d in _read_folder(p, encoding, skip_empty, False).documents:
                d.id = path_id(p)
                docs.append(d)
        corpora.append(Corpus(kind="folder", path=loose[0].parent, documents=docs, encoding=encoding))
    seen: dict[str, str] = {}
    for c in corpora:
        for d in c.documents:
            if d.id in seen:
                raise InputError(f"document {d.id!r} is given twice ({seen[d.id]} and {c.path}); give it once")
            seen[d.id] = str(c.path)
    return corpora


# ---------------------------------------------------------------------------------------------- chunking
def split_tokens(text: str, tokenizer: Tokenizer, chunk_tokens: int, chunk_overlap: int) -> list[str]:
    """MS GraphRAG's ``split_single_text_on_tokens``: token windows of ``chunk_tokens`` every
    ``chunk_tokens - chunk_overlap`` tokens, decoded. A text that fits in one window is returned as is."""
    if chunk_tokens <= 0:
        return [text]
    if isinstance(tokenizer, TiktokenTokenizer) and len(text.encode("utf-8", "surrogatepass")) <= chunk_tokens:
        return [text]  # byte-level BPE: no token is shorter than a byte, so it fits (nothing to encode)
    ids = tokenizer.encode(text)
    if len(ids) <= chunk_tokens:
        return [text]
    step = chunk_tokens - chunk_overlap
    out = []
    start = 0
    while start < len(ids):
        end = min(start + chunk_tokens, len(ids))
        out.append(tokenizer.decode(ids[start:end]))
        if end == len(ids):
            break
        start += step
    return out


def check_chunking(chunk_tokens: int, chunk_overlap: int) -> None:
    if chunk_tokens < 0:
        raise InputError(f"--chunk-tokens must be >= 0 (0 = one chunk per document), got {chunk_tokens}")
    if chunk_overlap < 0 or (chunk_tokens > 0 and chunk_overlap >= chunk_tokens):
        raise InputError(f"--chunk-overlap must be in [0, chunk tokens), got {chunk_overlap}")


def document_chunks(
    docs: Iterable[Document],
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    tokenizer: Tokenizer | None = None,
) -> Iterator[Chunk]:
    """The chunks of ``docs`` one document at a time, as :func:`chunk_documents` makes them (a streaming build
    reads, chunks and stores them as they come). The sizes are checked at once."""
    check_chunking(chunk_tokens, chunk_overlap)
    return _document_chunks(docs, chunk_tokens, chunk_overlap, tokenizer or get_tokenizer())


def _document_chunks(docs: Iterable[Document], size: int, overlap: int, tok: Tokenizer) -> Iterator[Chunk]:
    for d in docs:
        pieces = split_tokens(d.text, tok, size, overlap)
        if len(pieces) == 1:
            yield Chunk(id=d.id, text=pieces[0], metadata={"source": d.id, "part": 0, "n_parts": 1})
            continue
        for k, piece in enumerate(pieces):
            if piece.strip() and "\x00" not in piece:
                meta = {"source": d.id, "part": k, "n_parts": len(pieces)}
                yield Chunk(id=f"{d.id}#{k}", text=piece, metadata=meta)


def chunk_documents(
    docs: Sequence[Document],
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    tokenizer: Tokenizer | None = None,
    show_progress: bool = False,
) -> list[Chunk]:
    """Chunks of ``docs`` as the host makes them (see module doc). ``metadata``: ``source`` (document id),
    ``part`` and ``n_parts``. Whitespace-only windows (no text to extract from) are left out."""
    chunks = document_chunks(_progress(docs, show_progress, "chunk", len(docs)), chunk_tokens, chunk_overlap, tokenizer)
    return list(chunks)


# ---------------------------------------------------------------------------------------------- writing
def default_report_path(corpus: Corpus | Kind, out: Path) -> Path:
    """Beside the output, never inside it (a host reads every file of its input folder):
    ``OUT.selection_report.json`` for a folder output, ``OUT_STEM.selection_report.json`` beside a file.
    ``corpus``: the corpus read, or its kind."""
    kind = corpus if isinstance(corpus, str) else corpus.kind
    out = Path(os.path.abspath(out))  # "." has no name to derive from
    if kind == "folder":
        return out.with_name(f"{out.name}.selection_report.json")
    return out.with_name(f"{out.stem}.selection_report.json")


def written_by_select(report: Path | None, path: Path) -> bool:
    """True when ``report`` is a selection report g2cons wrote (stamped) that names ``path`` as its output with
    ``path``'s current SHA-256: the proof that a CSV/JSONL/JSON file output is g2cons's, with no marker beside it."""
    if report is None or not recognised_output(report):
        return False
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return False
    out, digest = data.get("output"), data.get("output_sha256")
    if not isinstance(out, str) or not isinstance(digest, str):
        return False
    same = os.path.realpath(out) == os.path.realpath(path)
    return same and path.is_file() and not path.is_symlink() and sha256_file(path) == digest


def check_output(corpus: Corpus, out: Path, report: Path | None = None) -> None:
    """Fail early (before any work) when ``out`` cannot be written or would clobber something g2cons did not
    write (see :mod:`g2cons_plugins.storage.outputs`). ``report``: where the selection report goes (for a file output,
    an earlier report there that lists ``out`` unchanged proves it is g2cons's)."""
    out = Path(out)
    src = Path(os.path.realpath(corpus.path))
    dst = Path(os.path.realpath(out))
    if dst == src or src in dst.parents or dst in src.parents:
        raise InputError(
            f"--out {out} and INPUT {corpus.path}: the output must not be, contain or lie inside the input"
        )
    if corpus.kind == "folder":
        if out.exists() and not out.is_dir():
            raise InputError(f"--out {out}: exists and is not a folder (folder input writes a folder)")
        recover_interrupted(out)  # a run killed while it swapped the folder in: put back what it left
        check_replaceable_folder(out, "--out")
    else:
        if out.is_dir():
            raise InputError(f"--out {out}: is a folder; {corpus.kind} input writes a {corpus.kind} file")
        if out.suffix.lower() not in ({".csv"} if corpus.kind == "csv" else set(JSONL_SUFFIXES) | {".json"}):
            warnings.warn(f"{out}: suffix does not match the {corpus.kind} format written", stacklevel=2)
        check_replaceable_file(out, "--out", recognise=lambda p: written_by_select(report, p))
    _check_writable(out.parent)


def _check_writable(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".g2cons-write-test-", dir=folder)
        os.close(fd)
        os.unlink(name)
    except OSError as e:
        raise InputError(f"{folder}: cannot write output here ({e.strerror or e})") from None


def _part_path(rel: str, part: int) -> str:
    p = Path(rel)
    return (p.parent / f"{p.stem}.part{part:04d}{p.suffix}").as_posix()


def _kept_by_doc(chunks: Sequence[Chunk], kept_ids: Iterable[str]) -> dict[str, list[Chunk]]:
    keep = set(kept_ids)
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        if c.id in keep:
            by_doc.setdefault(str(c.metadata.get("source", c.id)), []).append(c)
    return by_doc


def planned_outputs(
    corpus: Corpus, chunks: Sequence[Chunk], kept_ids: Iterable[str]
) -> Iterator[tuple[Document, Chunk]]:
    """The (document, chunk) pairs a writer writes, in input order."""
    by_doc = _kept_by_doc(chunks, kept_ids)
    for d in corpus.documents:
        for c in by_doc.get(d.id, []):
            yield d, c


def write_selection(
    corpus: Corpus,
    chunks: Sequence[Chunk],
    kept_ids: Iterable[str],
    out: str | Path,
    extra_files: dict[str, str] | None = None,
    show_progress: bool = False,
    report: Path | None = None,
) -> list[str]:
    """Write the kept chunks to ``out`` in the input's format (see module doc); returns what was written
    (relative paths for a folder, ``[out]`` for a file). ``extra_files`` (name -> text) go into a folder output.
    ``report``: see :func:`check_output`. A file output gets no marker beside it (its report lists its SHA-256)."""
    out = Path(out)
    pairs = list(planned_outputs(corpus, chunks, kept_ids))
    out.parent.mkdir(parents=True, exist_ok=True)
    if corpus.kind == "folder":
        return _write_folder(corpus, pairs, out, extra_files or {}, show_progress)
    check_replaceable_file(out, "--out", recognise=lambda p: written_by_select(report, p))
    fd, name = tempfile.mkstemp(prefix=f".{out.name}.tmp-", dir=out.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding=corpus.encoding, newline="") as fh:
            if corpus.kind == "csv":
                w = csv.DictWriter(fh, fieldnames=corpus.fieldnames)
                w.writeheader()
                for d, c in pairs:
                    w.writerow(_record(corpus, d, c))
            elif corpus.kind == "jsonl":
                for d, c in pairs:
                    fh.write(json.dumps(_record(corpus, d, c), ensure_ascii=False) + "\n")
            else:
                json.dump([_record(corpus, d, c) for d, c in pairs], fh, ensure_ascii=False, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        apply_umask(tmp)
        os.replace(tmp, out)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        failed = no_room_error(e, out, "nothing was written in its place (the partial copy removed)")
        if failed is not None:
            raise failed from e
        raise
    return [str(out)]


def _record(corpus: Corpus, d: Document, c: Chunk) -> dict[str, Any]:
    rec = dict(d.record)
    rec[corpus.text_column] = c.text
    if c.id != d.id and corpus.id_column is not None:
        rec[corpus.id_column] = c.id
    return rec


def _write_folder(
    corpus: Corpus, pairs: list[tuple[Document, Chunk]], out: Path, extra: dict[str, str], show_progress: bool
) -> list[str]:
    check_replaceable_folder(out, "--out")
    tmp = staging_dir(out)  # stamped: a later run recognises it if this one is killed
    written: list[str] = []
    digests: dict[str, str] = {}
    taken: set[str] = set()
    try:
        for d, c in _progress(pairs, show_progress, "write", len(pairs)):
            rel = d.path or d.id
            if c.id != d.id:
                rel = _part_path(rel, int(c.metadata.get("part", 0)))
            if rel in taken or rel == MARKER:
                raise InputError(f"two chunks would be written to {rel}; rename the input file")
            taken.add(rel)
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            data = c.text.encode(corpus.encoding)
            target.write_bytes(data)
            digests[rel] = sha256_bytes(data)
            written.append(rel)
        for name, text in extra.items():
            data = text.encode("utf-8")
            (tmp / name).write_bytes(data)
            digests[name] = sha256_bytes(data)
        (tmp / MARKER).write_text(marker_text(digests, "select"), encoding="utf-8")
        # again, right before the swap: nothing foreign appeared
        publish_folder(tmp, out, lambda: check_replaceable_folder(out, "--out"))
    except BaseException as e:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)
        failed = no_room_error(e, out, "nothing was written in its place (the partial copy removed)")
        if failed is not None:
            raise failed from e
        raise
    return written
