"""Readers of a precomputed LLM knowledge-graph extraction ("replay host") and its alignment to our chunk ids.

A team that already paid for an LLM-built KG (MS GraphRAG output, a LightRAG working dir, HippoRAG OpenIE output)
can replay it as the host KG: every kept chunk gets exactly the entities and triples the LLM produced for it, and
nothing is re-run. :func:`read_extraction` reads one record per host chunk (text unit, passage), in file order:

- ``jsonl`` (ours): one ``{"id", "entities": [str], "triples": [[s, r, o]], "text"?, "model"?}`` object a line.
- ``hipporag``: a HippoRAG OpenIE JSON, ``{"docs": [{"idx", "passage", "extracted_entities",
  "extracted_triples"}]}`` (HippoRAG 1 ``openie_<data>_results_ner_<model>_<n>.json``, HippoRAG 2
  ``openie_results_ner_<model>.json``; the model is read from the file name).
- ``graphrag``: an MS GraphRAG output folder, ``text_units`` / ``entities`` / ``relationships`` Parquet tables
  (``create_final_*`` in GraphRAG 0.x/1.x); entities of a text unit are the titles (``name`` in 0.x) of the
  entities whose ``text_unit_ids`` hold it, triples ``(source, description or "related to", target)`` of the
  relationships whose ``text_unit_ids`` hold it; the model is read from the project's ``settings.yaml``.
- ``lightrag``: a LightRAG working dir, ``kv_store_text_chunks.json`` and ``graph_chunk_entity_relation.graphml``
  (entity = node id, its chunks = ``source_id`` split on ``<SEP>``, joined with the full lists of
  ``kv_store_entity_chunks.json`` / ``kv_store_relation_chunks.json`` where LightRAG keeps them); triples
  ``(source, keywords or description, target)``.

:func:`align` maps each record to our chunk ids (by id, then by normalised text, then by containment either way).
What is not taken as-is (a triple not of length 3, a duplicate entity, a record matching no chunk, ...) is counted
by reason in :attr:`Extraction.issues`; bad input raises :class:`~g2cons_plugins.errors.InputError` naming the file
and the item. Files are bounded (:data:`MAX_FILE_BYTES`) and must be regular files; nothing is unpickled.
"""

from __future__ import annotations

import gc
import json
import os
import re
import reprlib
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import InputError
from .pipelines.host_projects import GRAPHRAG_SETTINGS, load_settings

FORMATS = ("jsonl", "hipporag", "graphrag", "lightrag")
MAX_FILE_BYTES = 2 * 1024**3
"""The largest JSON / JSONL / GraphML file read (2 GiB); a larger one is refused with an error naming it."""
PROGRESS_FROM_BYTES = 50_000_000
"""From this many bytes of input on, :func:`read_extraction` shows its progress by default (on a terminal)."""
MAX_INT_DIGITS = 1000
"""The most digits of an integer in a JSON file read (a longer one is refused with an error naming the file, the
line and the column; Python refuses to convert integers of more than 4,300 digits to or from text)."""

_FORMAT_NAMES = {"jsonl": "JSONL", "hipporag": "HippoRAG OpenIE", "graphrag": "MS GraphRAG", "lightrag": "LightRAG"}
_FORMATS_HELP = (
    "known formats: jsonl (a .jsonl file of {id, entities, triples} lines), hipporag (a HippoRAG OpenIE .json with "
    'a top-level "docs" list), graphrag (an MS GraphRAG output folder holding entities.parquet or '
    "create_final_entities.parquet), lightrag (a LightRAG working dir holding kv_store_text_chunks.json)"
)
_SEP = "<SEP>"  # lightrag.constants.GRAPH_FIELD_SEP
_NO_RELATION = "related to"
_MIN_CONTAIN = 20  # normalised characters a text needs to be matched by containment
_PREFIX = 32  # characters of the prefix a text is indexed by for containment
_MAX_SETTINGS_BYTES = 1 << 20
_HIPPO_MODEL = re.compile(r"_ner_(?P<model>.+?)(?:_\d+)?\.json$")


@dataclass(frozen=True)
class ExtractionRecord:
    """What the LLM produced for one host chunk (text unit, passage)."""

    source_id: str
    """The host's own id of this chunk / text unit / passage."""
    entities: tuple[str, ...]
    """Entity names as the LLM wrote them (deduplicated, order kept)."""
    triples: tuple[tuple[str, str, str], ...]
    """``(subject, relation, object)`` triples."""
    text: str | None = None
    """The host chunk's text where the format stores it."""
    chunk_ids: tuple[str, ...] = ()
    """Our chunk ids this host chunk covers (filled by :func:`align`)."""


@dataclass(frozen=True)
class Extraction:
    """A precomputed LLM extraction: one record per host chunk, in file order."""

    records: tuple[ExtractionRecord, ...]
    format: str
    """``"jsonl"``, ``"hipporag"``, ``"graphrag"`` or ``"lightrag"``."""
    source: str
    """The path read."""
    model: str | None
    """The extracting LLM's name where known (from the file, the settings, or the caller)."""
    issues: Mapping[str, int] = field(default_factory=dict, hash=False)
    """What was not taken as-is, counted by reason (e.g. ``{"triple not of length 3": 185}``)."""

    def label(self) -> str:
        """One line naming format, model, file and size, e.g. for a report's host column."""
        name = _FORMAT_NAMES.get(self.format, self.format)
        model = f"model {self.model}" if self.model else "model unknown"
        n_ent = sum(len(r.entities) for r in self.records)
        n_tri = sum(len(r.triples) for r in self.records)
        u_ent = len({e for r in self.records for e in r.entities})
        u_tri = len({t for r in self.records for t in r.triples})
        per_chunk = ""
        if (u_ent, u_tri) != (n_ent, n_tri):  # the files' rows count each once; a chunk's share counts it again
            per_chunk = f" (counted per chunk; {u_ent:,} distinct entities, {u_tri:,} distinct triples)"
        return (
            f"replayed LLM extraction ({name}, {model}) from {self.source}: {len(self.records):,} chunks, "
            f"{n_ent:,} entities, {n_tri:,} triples{per_chunk}; not re-run"
        )

    def restrict(self, kept_chunk_ids: Iterable[str]) -> Extraction:
        """The host KG of a selection: only the records covering a kept chunk.

        A record's ``chunk_ids`` are cut to the kept ones; a record none of whose chunks is kept is left out (so is
        one :func:`align` matched to no chunk). Needs an aligned extraction.
        """
        if isinstance(kept_chunk_ids, str):
            raise InputError(f"restrict: kept_chunk_ids must be chunk ids, not the string {kept_chunk_ids!r}")
        kept = set(kept_chunk_ids)
        if self.records and not any(r.chunk_ids for r in self.records):
            raise InputError(f"{self.source}: extraction not aligned to chunk ids; call align(extraction, chunks)")
        out = []
        for rec in self.records:
            ids = tuple(c for c in rec.chunk_ids if c in kept)
            if ids:
                out.append(rec if len(ids) == len(rec.chunk_ids) else replace(rec, chunk_ids=ids))
        return replace(self, records=tuple(out))

    def by_chunk(self) -> dict[str, list[ExtractionRecord]]:
        """Our chunk id -> the records covering it (chunks in order of first appearance, records in file order)."""
        out: dict[str, list[ExtractionRecord]] = {}
        for rec in self.records:
            for cid in rec.chunk_ids:
                out.setdefault(cid, []).append(rec)
        return out

    def chunk_graphs(self) -> dict[str, tuple[tuple[str, ...], tuple[tuple[str, str, str], ...]]]:
        """Our chunk id -> (entities, triples) of all the records covering it, each once in first-seen order; the
        entities include every triple's subject and object (what a host graph of that chunk holds)."""
        out = {}
        for cid, recs in self.by_chunk().items():
            names = [n for r in recs for n in (*r.entities, *(x for t in r.triples for x in (t[0], t[2])))]
            out[cid] = (tuple(dict.fromkeys(names)), tuple(dict.fromkeys(t for r in recs for t in r.triples)))
        return out


class _Read(NamedTuple):
    records: list[ExtractionRecord]
    issues: Counter[str]
    model: str | None


# ------------------------------------------------------------------------------------------------ entry point
def read_extraction(
    path: str | os.PathLike[str], format: str = "auto", model: str | None = None, show_progress: bool | None = None
) -> Extraction:
    """Read a precomputed LLM extraction (see the module doc for the formats).

    ``format="auto"`` detects it: a ``.jsonl`` file is ``jsonl``, a ``.json`` file ``hipporag`` (it must hold a
    top-level ``"docs"`` list), a folder with ``(output/)entities.parquet`` or ``create_final_entities.parquet``
    ``graphrag``, a folder with ``kv_store_text_chunks.json`` ``lightrag``. ``model`` names the extracting LLM
    when the files do not (it wins over what they say).

    ``show_progress``: say the size of what is read first, then show progress bars (tqdm, on stderr) over its
    records; None (the default) does so when stderr is a terminal and the input holds at least
    :data:`PROGRESS_FROM_BYTES` bytes (a 1M-node GraphML or 200k HippoRAG docs take minutes).
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file or folder")
    if format in ("auto", "lightrag"):
        p = _lightrag_workspace(p, format)
    fmt = _detect(p) if format == "auto" else format
    if fmt not in _READERS:
        raise InputError(f"{p}: unknown extraction format {format!r}; {_FORMATS_HELP}")
    show = _announce(p, fmt, show_progress)
    got = _READERS[fmt](p, show)
    if not got.records:
        raise InputError(f"{p}: no records (an empty {_FORMAT_NAMES[fmt]} extraction)")
    return Extraction(tuple(got.records), fmt, str(p), model or got.model, dict(sorted(got.issues.items())))


def _lightrag_workspace(p: Path, format: str) -> Path:
    """The folder LightRAG wrote into: ``p`` itself, or, when a workspace is set (``LightRAG(workspace=...)`` or
    ``WORKSPACE``; LightRAG 1.4+ then writes into ``WORKING_DIR/<workspace>/``), the one subfolder of ``p`` that
    holds ``kv_store_text_chunks.json``. Several such subfolders are refused, naming them."""
    if not p.is_dir() or (p / "kv_store_text_chunks.json").is_file():
        return p
    if format == "auto" and _graphrag_folder(p) is not None:
        return p
    spaces = sorted(d for d in p.iterdir() if d.is_dir() and (d / "kv_store_text_chunks.json").is_file())
    if len(spaces) > 1:
        names = ", ".join(d.name for d in spaces)
        raise InputError(
            f"{p}: {len(spaces)} LightRAG workspaces ({names}); give the one to read, e.g. {spaces[0]}"
        )
    return spaces[0] if spaces else p


def _detect(p: Path) -> str:
    if p.is_dir():
        if (p / "kv_store_text_chunks.json").is_file():
            return "lightrag"
        if _graphrag_folder(p) is not None:
            return "graphrag"
    elif p.is_file():
        suffix = p.suffix.lower()
        if suffix == ".jsonl":
            return "jsonl"
        if suffix == ".json":
            return "hipporag"  # the reader checks for the top-level "docs" list
    else:
        raise InputError(f"{p}: not a regular file or folder (a device, FIFO or socket is not read)")
    raise InputError(f"{p}: not a known precomputed extraction; {_FORMATS_HELP}")


# ------------------------------------------------------------------------------------------------ shared helpers
def _input_files(p: Path, fmt: str) -> list[Path]:
    """The files a reader of ``fmt`` reads at ``p`` (those present)."""
    if fmt in ("jsonl", "hipporag"):
        return [p] if p.is_file() else []
    if fmt == "graphrag":
        found = _graphrag_folder(p)
        if found is None:
            return []
        folder, prefix = found
        names = [f"{prefix}{t}.parquet" for t in ("text_units", "entities", "relationships")]
    else:
        folder = p
        names = [
            "kv_store_text_chunks.json", "graph_chunk_entity_relation.graphml", "kv_store_entity_chunks.json",
            "kv_store_relation_chunks.json",
        ]  # fmt: skip
    return [f for f in (folder / n for n in names) if f.is_file()]


def _announce(p: Path, fmt: str, show: bool | None) -> bool:
    """Whether to show progress (see :func:`read_extraction`); when so, say what is read and its size first."""
    files = _input_files(p, fmt) if fmt in _READERS else []
    size = sum(f.stat().st_size for f in files)
    if show is None:
        show = size >= PROGRESS_FROM_BYTES and sys.stderr is not None and sys.stderr.isatty()
    if show:
        listed = ", ".join(f"{f.name} {f.stat().st_size / 1e6:,.1f} MB" for f in files)
        print(
            f"g2cons: reading the {_FORMAT_NAMES.get(fmt, fmt)} extraction {p}: {size / 1e6:,.1f} MB ({listed})",
            file=sys.stderr,
            flush=True,
        )
    return bool(show)


def _progress(items: Iterable[Any], show: bool, desc: str, total: int | None = None, unit: str = "record") -> Any:
    """``items``, behind a tqdm bar on stderr when ``show``."""
    if not show:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, total=total, unit=unit, file=sys.stderr, mininterval=0.5)


def _check_file(path: Path, limit: int | None = None) -> int:
    """Size of ``path``, a regular file (a device, FIFO or folder is refused) of at most ``limit`` bytes."""
    limit = MAX_FILE_BYTES if limit is None else limit
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if not path.is_file():
        raise InputError(f"{path}: not a regular file")
    size = path.stat().st_size
    if size > limit:
        raise InputError(f"{path}: {size:,} bytes, over the {limit:,}-byte limit of what is read")
    return size


def _read_bytes(path: Path) -> bytes:
    _check_file(path)
    with path.open("rb") as fh:
        data = fh.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"{path}: over the {MAX_FILE_BYTES:,}-byte limit of what is read")
    return data


class _LongInteger(ValueError):
    """An integer literal with more digits than :data:`MAX_INT_DIGITS` (raised while parsing)."""

    def __init__(self, digits: str) -> None:
        super().__init__(digits)
        self.digits = digits


def _json_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise _LongInteger(digits)
    return int(digits)


def _parse_json(text: str, where: str) -> Any:
    """``text`` parsed as JSON; InputError naming ``where`` (and the line and column where known) for text that
    is not JSON, an integer of more than :data:`MAX_INT_DIGITS` digits, or values nested deeper than the parser's
    recursion allows (Python's ``json`` recurses once a level)."""
    try:
        return json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as e:
        raise InputError(f"{where}: not valid JSON ({e.msg}, line {e.lineno} column {e.colno})") from None
    except _LongInteger as e:
        at = text.find(e.digits)
        line = text.count("\n", 0, at) + 1
        col = at - (text.rfind("\n", 0, at) + 1) + 1
        raise InputError(
            f"{where}: an integer of {len(e.digits):,} digits at line {line} column {col} "
            f"(at most {MAX_INT_DIGITS:,} are read)"
        ) from None
    except RecursionError:
        raise InputError(
            f"{where}: JSON nested too deep (arrays / objects inside one another beyond what the reader's "
            "recursion allows)"
        ) from None


def _short(value: Any) -> str:
    """A short ``repr`` of any value read from a file (bounded length and depth; never raises)."""
    try:
        return reprlib.repr(value)[:120]
    except Exception:  # a value whose repr fails
        return f"<{type(value).__name__}>"


def _load_json(path: Path) -> Any:
    data = _read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (byte {e.start})") from None
    del data
    return _parse_json(text, str(path))


def _unicode(text: str) -> bool:
    """``text`` can be encoded as UTF-8 (no lone surrogate such as a JSON ``"\\ud800"`` escape gives)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _source_id(value: Any, where: str, what: str) -> str:
    if isinstance(value, str) and value:
        if not _unicode(value):
            raise InputError(f"{where}: {what} is not valid Unicode (a lone surrogate): {_short(value)}")
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise InputError(f"{where}: {what} must be a non-empty string or an integer, got {_short(value)}")


def _entities(raw: Any, where: str, issues: Counter[str]) -> tuple[str, ...]:
    """Entity names, deduplicated in order; what is not a non-empty string is counted and skipped."""
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple):
        raise InputError(f"{where}: entities must be a list, got {type(raw).__name__}")
    out: dict[str, None] = {}
    for e in raw:
        if not isinstance(e, str):
            issues["entity not a string"] += 1
        elif not _unicode(e):
            issues["entity not valid Unicode"] += 1
        elif not e.strip():
            issues["empty entity"] += 1
        elif e in out:
            issues["duplicate entity"] += 1
        else:
            out[e] = None
    return tuple(out)


def _triples(raw: Any, where: str, issues: Counter[str]) -> tuple[tuple[str, str, str], ...]:
    """``(s, r, o)`` triples in order (a repeated one is kept); a malformed one is counted by reason and skipped."""
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple):
        raise InputError(f"{where}: triples must be a list, got {type(raw).__name__}")
    out: list[tuple[str, str, str]] = []
    for t in raw:
        if not isinstance(t, list | tuple):
            issues["triple not a list"] += 1
        elif len(t) != 3:
            issues["triple not of length 3"] += 1
        elif not all(isinstance(x, str) for x in t):
            issues["triple element not a string"] += 1
        elif not all(_unicode(x) for x in t):
            issues["triple element not valid Unicode"] += 1
        elif not all(x.strip() for x in t):
            issues["triple with an empty element"] += 1
        else:
            out.append((t[0], t[1], t[2]))
    return tuple(out)


def _optional_text(value: Any, where: str, what: str) -> str | None:
    if isinstance(value, str) and not _unicode(value):
        raise InputError(f"{where}: {what} is not valid Unicode (a lone surrogate): {_short(value)}")
    if value is None or isinstance(value, str):
        return value
    raise InputError(f"{where}: {what} must be a string, got {type(value).__name__} {_short(value)}")


# ------------------------------------------------------------------------------------------------ jsonl
def _jsonl_lines(path: Path) -> Iterator[tuple[int, Any]]:
    _check_file(path)
    total = 0
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            total += len(raw)
            if total > MAX_FILE_BYTES:
                raise InputError(f"{path}: over the {MAX_FILE_BYTES:,}-byte limit of what is read")
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputError(f"{path}:{n}: not UTF-8 text (byte {e.start} of the line)") from None
            yield n, _parse_json(line, f"{path}:{n}")


def _read_jsonl(path: Path, show: bool = False) -> _Read:
    records: list[ExtractionRecord] = []
    issues: Counter[str] = Counter()
    models: dict[str, None] = {}
    first_line: dict[str, int] = {}
    for n, obj in _progress(_jsonl_lines(path), show, f"{path.name}: lines", unit="line"):
        where = f"{path}:{n}"
        if not isinstance(obj, dict):
            raise InputError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        sid = _source_id(obj.get("id"), where, '"id"')
        if sid in first_line:
            raise InputError(f"{where}: duplicate id {sid!r} (first on line {first_line[sid]})")
        first_line[sid] = n
        for key in ("entities", "triples"):
            if key not in obj:
                issues[f'record without "{key}"'] += 1
        m = _optional_text(obj.get("model"), where, '"model"')
        if m:
            models[m] = None
        text = _optional_text(obj.get("text"), where, '"text"')
        ents = _entities(obj.get("entities"), where, issues)
        records.append(ExtractionRecord(sid, ents, _triples(obj.get("triples"), where, issues), text))
    return _Read(records, issues, ", ".join(models) or None)


# ------------------------------------------------------------------------------------------------ HippoRAG
def _hipporag_model(path: str | os.PathLike[str]) -> str | None:
    """The model a HippoRAG OpenIE file name gives (``*_ner_<model>_<n>.json``, ``openie_results_ner_<model>.json``)."""
    m = _HIPPO_MODEL.search(Path(path).name)
    return m.group("model") if m else None


def _read_hipporag(path: Path, show: bool = False) -> _Read:
    data = _load_json(path)
    docs = data.get("docs") if isinstance(data, dict) else None
    if not isinstance(docs, list):
        raise InputError(f'{path}: not a HippoRAG OpenIE file (no top-level "docs" list); {_FORMATS_HELP}')
    records: list[ExtractionRecord] = []
    issues: Counter[str] = Counter()
    first: dict[str, int] = {}
    for i, doc in enumerate(_progress(docs, show, f"{path.name}: docs", len(docs), "doc")):
        where = f"{path}: docs[{i}]"
        if not isinstance(doc, dict):
            raise InputError(f"{where}: expected a JSON object, got {type(doc).__name__}")
        sid = _source_id(doc.get("idx"), where, '"idx"')
        if sid in first:
            raise InputError(f"{where}: duplicate idx {sid!r} (first at docs[{first[sid]}])")
        first[sid] = i
        for key in ("passage", "extracted_entities", "extracted_triples"):
            if key not in doc:
                issues[f'doc without "{key}"'] += 1
        ents = _entities(doc.get("extracted_entities"), where, issues)
        triples = _triples(doc.get("extracted_triples"), where, issues)
        records.append(ExtractionRecord(sid, ents, triples, _optional_text(doc.get("passage"), where, '"passage"')))
    return _Read(records, issues, _hipporag_model(path))


# ------------------------------------------------------------------------------------------------ MS GraphRAG
def _graphrag_folder(p: Path) -> tuple[Path, str] | None:
    """The folder holding GraphRAG's tables and their name prefix (``""`` or 0.x/1.x ``"create_final_"``)."""
    for folder in (p, p / "output", p / "artifacts"):
        for prefix in ("", "create_final_"):
            if (folder / f"{prefix}entities.parquet").is_file():
                return folder, prefix
    return None


def _parquet(file: Path, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Rows of the named columns of a Parquet table (only those are read: embeddings are never loaded)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(
            f"{file}: reading an MS GraphRAG output needs pyarrow: pip install pyarrow (or g2cons-plugins[replay])"
        ) from None
    if not file.is_file():
        raise InputError(f"{file}: missing (an MS GraphRAG output folder holds it) or not a regular file")
    try:
        names = set(pq.read_schema(file).names)
    except Exception as e:  # pyarrow.ArrowInvalid and friends
        raise InputError(f"{file}: not a readable Parquet file ({type(e).__name__}: {e})") from None
    missing = [c for c in required if c not in names]
    if missing:
        raise InputError(f"{file}: no column {missing[0]!r} (columns: {', '.join(sorted(names))})")
    cols = list(required) + [c for c in optional if c in names]
    try:
        rows: list[dict[str, Any]] = pq.read_table(file, columns=cols).to_pylist()
    except Exception as e:
        raise InputError(f"{file}: cannot read columns {cols} ({type(e).__name__}: {e})") from None
    return rows


def _unit_refs(row: dict[str, Any], where: str, units: Mapping[str, int], issues: Counter[str], what: str) -> list[int]:
    """Positions of the text units a GraphRAG entity / relationship row names (unknown ones counted)."""
    refs = row.get("text_unit_ids")
    if refs is None:
        issues[f"{what} without text units"] += 1
        return []
    if not isinstance(refs, list | tuple):
        raise InputError(f"{where}: text_unit_ids must be a list of text unit ids, got {_short(refs)}")
    if not refs:
        issues[f"{what} without text units"] += 1
        return []
    keys = []
    for ref in refs:
        if isinstance(ref, bool) or not isinstance(ref, str | int):
            raise InputError(f"{where}: text_unit_ids must hold text unit ids (strings), got {_short(ref)}")
        keys.append(str(ref))
    out = []
    for ref in dict.fromkeys(keys):
        pos = units.get(ref)
        if pos is None:
            issues[f"{what} text unit not found"] += 1
        else:
            out.append(pos)
    return out


def _graphrag_rows(
    file: Path,
    required: tuple[str, ...],
    optional: tuple[str, ...],
    what: str,
    issues: Counter[str],
    show: bool = False,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of an entities / relationships table; a row repeating an earlier row's ``id`` (GraphRAG 0.x wrote
    some relationships several times) is counted and skipped."""
    seen: set[Any] = set()
    rows = _parquet(file, required, ("id", *optional))
    for i, row in enumerate(_progress(rows, show, f"{file.name}: rows", len(rows), "row")):
        rid = row.get("id")
        if rid is not None and (isinstance(rid, bool) or not isinstance(rid, str | int)):
            raise InputError(f"{file} row {i}: id must be a string or an integer, got {_short(rid)}")
        if rid is not None and rid in seen:
            issues[f"duplicate {what} row (same id)"] += 1
            continue
        seen.add(rid)
        yield i, row


def _read_graphrag(path: Path, show: bool = False) -> _Read:
    found = _graphrag_folder(path)
    if found is None:
        raise InputError(f"{path}: no (create_final_)entities.parquet here or in output/; {_FORMATS_HELP}")
    folder, prefix = found
    ufile = folder / f"{prefix}text_units.parquet"
    units = _parquet(ufile, ("id",), ("text",))
    index: dict[str, int] = {}
    for i, u in enumerate(units):
        uid = _source_id(u["id"], f"{ufile} row {i}", "id")
        if uid in index:
            raise InputError(f"{ufile} row {i}: duplicate text unit id {uid!r}")
        index[uid] = i
    issues: Counter[str] = Counter()
    ents: list[list[Any]] = [[] for _ in units]
    tris: list[list[Any]] = [[] for _ in units]
    efile = folder / f"{prefix}entities.parquet"
    for i, row in _graphrag_rows(efile, ("text_unit_ids",), ("title", "name"), "entity", issues, show):
        if "title" not in row and "name" not in row:
            raise InputError(f"{efile}: no column 'title' (or 'name' of GraphRAG 0.x)")
        name = row["title"] if "title" in row else row["name"]
        for pos in _unit_refs(row, f"{efile} row {i}", index, issues, "entity"):
            ents[pos].append(name)
    rfile = folder / f"{prefix}relationships.parquet"
    rel_cols = ("source", "target", "text_unit_ids")
    for i, row in _graphrag_rows(rfile, rel_cols, ("description",), "relationship", issues, show):
        rel = row.get("description")
        if not isinstance(rel, str) or not rel.strip():
            issues[f'relationship without description (relation "{_NO_RELATION}")'] += 1
            rel = _NO_RELATION
        for pos in _unit_refs(row, f"{rfile} row {i}", index, issues, "relationship"):
            tris[pos].append((row["source"], rel, row["target"]))
    records = [
        ExtractionRecord(
            uid,
            _entities(ents[i], uid, issues),
            _triples(tris[i], uid, issues),
            _optional_text(units[i].get("text"), f"{ufile} row {i}", "text"),
        )
        for uid, i in index.items()
    ]
    return _Read(records, issues, _graphrag_model(folder, issues))


def _settings_model(data: Mapping[str, Any]) -> Any:
    """The entity-extraction model of a GraphRAG settings dict: 3.x ``completion_models``, 2.x ``models``,
    0.x/1.x ``llm`` (an ``extract_graph`` / ``entity_extraction`` section may name or override it)."""
    section = data.get("extract_graph") or data.get("entity_extraction") or {}
    section = section if isinstance(section, dict) else {}
    for table, key, default in (
        ("completion_models", "completion_model_id", "default_completion_model"),
        ("models", "model_id", "default_chat_model"),
    ):
        models = data.get(table)
        if isinstance(models, dict) and models:
            entry = models.get(section.get(key) or default)
            if entry is None and len(models) == 1:
                entry = next(iter(models.values()))
            return entry.get("model") if isinstance(entry, dict) else None
    for llm in (section.get("llm"), data.get("llm")):
        if isinstance(llm, dict) and llm.get("model"):
            return llm.get("model")
    return None


def _settings_dirs(folder: Path) -> Iterator[Path]:
    """The tables' folder, then the folders above it while they are GraphRAG's output layout (``PROJECT/output``,
    0.x ``PROJECT/output/<run>/artifacts``): never an unrelated folder higher up."""
    yield folder
    for _ in range(3):
        if folder.name not in ("output", "artifacts") and folder.parent.name != "output":
            return
        folder = folder.parent
        yield folder


def _graphrag_model(folder: Path, issues: Counter[str]) -> str | None:
    """The extracting model named by ``settings.yaml`` next to or above the output folder, else None."""
    for d in _settings_dirs(folder):
        for name in GRAPHRAG_SETTINGS:
            file = d / name
            if not file.is_file():
                continue
            try:
                _check_file(file, _MAX_SETTINGS_BYTES)
                model = _settings_model(load_settings(file))
            except InputError:
                issues[f"{name} not readable (model unknown)"] += 1
                return None
            ok = isinstance(model, str) and model.strip() and "${" not in model
            return model.strip() if ok else None
    return None


# ------------------------------------------------------------------------------------------------ LightRAG
def _graphml(file: Path) -> tuple[list[tuple[str, dict[str, str]]], list[tuple[str, str, dict[str, str]]]]:
    """Nodes ``(id, data)`` and edges ``(source, target, data)`` of a GraphML file, data keyed by ``attr.name``.

    Streamed (``XMLPullParser`` fed 1 MiB at a time; each node and edge dropped from the tree once read), so memory
    holds the result, not the file and its element tree: a 1M-node LightRAG GraphML of 85 MB peaked at about 20x
    its size read whole (``benchmarks/hostile/graphml_memory.py``). A DOCTYPE / ENTITY declaration anywhere is
    refused, as before."""
    _check_file(file)
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("start", "end"))
    keys: dict[str | None, str] = {}
    nodes: list[tuple[str, dict[str, str]]] = []
    edges: list[tuple[str, str, dict[str, str]]] = []
    stack: list[ET.Element] = []  # the elements open
    parents: dict[int, ET.Element] = {}  # the elements holding nodes / edges (graphs), pruned after each block

    def attrs(el: ET.Element) -> dict[str, str]:
        return {keys.get(d.get("key"), d.get("key") or ""): d.text or "" for d in el if _local(d.tag) == "data"}

    def take(events: Iterator[tuple[Any, ...]]) -> None:
        for event, el in events:
            if event == "start":
                stack.append(el)
                continue
            stack.pop()
            tag = _local(el.tag)
            if tag == "key":
                keys[el.get("id")] = el.get("attr.name") or el.get("id") or ""
            elif tag == "node":
                nid = el.get("id")
                if not nid:
                    raise InputError(f"{file}: node {len(nodes)} has no id")
                nodes.append((nid, attrs(el)))
            elif tag == "edge":
                src, tgt = el.get("source"), el.get("target")
                if not src or not tgt:
                    raise InputError(f"{file}: edge {len(edges)} has no source or target")
                edges.append((src, tgt, attrs(el)))
            else:
                continue
            el.clear()  # its data read: free its children
            if stack:
                parents[id(stack[-1])] = stack[-1]

    def prune() -> None:
        """Drop the read nodes and edges from the tree: every child of their parents but one still open."""
        for parent in parents.values():
            n = len(parent)
            if n and any(parent[-1] is el for el in stack):
                n -= 1
            del parent[:n]

    tail = b""
    collecting = gc.isenabled()
    gc.disable()  # no cycles made here; its full passes over millions of new objects made the read 5x slower
    try:
        with file.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                seen = tail + block
                if b"<!DOCTYPE" in seen or b"<!ENTITY" in seen:
                    raise InputError(f"{file}: GraphML with a DOCTYPE / ENTITY declaration is refused")
                tail = seen[-8:]
                parser.feed(block)
                take(parser.read_events())
                prune()
            parser.close()
            take(parser.read_events())
    except ET.ParseError as e:
        raise InputError(f"{file}: not valid GraphML ({e})") from None
    finally:
        if collecting:
            gc.enable()
    return nodes, edges


def _local(tag: Any) -> str:
    """An XML tag without its ``{namespace}``."""
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _kv_chunk_lists(file: Path) -> dict[str, list[str]]:
    """``{key: chunk_ids}`` of LightRAG's optional ``kv_store_entity_chunks`` / ``relation_chunks`` (full lists)."""
    if not file.exists():
        return {}
    data = _load_json(file)
    if not isinstance(data, dict):
        raise InputError(f"{file}: expected a JSON object of {{key: {{chunk_ids}}}}")
    out = {}
    for key, value in data.items():
        ids = value.get("chunk_ids") if isinstance(value, dict) else None
        if not isinstance(ids, list) or not all(isinstance(c, str) for c in ids):
            raise InputError(f"{file}: {key!r}: chunk_ids must be a list of strings")
        out[key] = ids
    return out


def _lightrag_chunks(path: Path, issues: Counter[str]) -> dict[str, str | None]:
    file = path / "kv_store_text_chunks.json"
    data = _load_json(file)
    if not isinstance(data, dict):
        raise InputError(f"{file}: expected a JSON object {{chunk_id: {{content, ...}}}}, got {type(data).__name__}")
    out: dict[str, str | None] = {}
    for cid, value in data.items():
        _source_id(cid, str(file), "a chunk id")  # valid Unicode
        if not isinstance(value, dict):
            raise InputError(f"{file}: {cid!r}: expected an object with a content field, got {type(value).__name__}")
        if "content" not in value:
            issues["text chunk without content"] += 1
        out[cid] = _optional_text(value.get("content"), f"{file}: {cid!r}", '"content"')
    return out


def _read_lightrag(path: Path, show: bool = False) -> _Read:
    issues: Counter[str] = Counter()
    chunks = _lightrag_chunks(path, issues)
    index = {cid: i for i, cid in enumerate(chunks)}
    graph_file = path / "graph_chunk_entity_relation.graphml"
    nodes, edges = _graphml(graph_file)
    if show:
        print(f"g2cons: {graph_file.name}: {len(nodes):,} nodes, {len(edges):,} edges", file=sys.stderr, flush=True)
    ent_full = _kv_chunk_lists(path / "kv_store_entity_chunks.json")
    rel_full = _kv_chunk_lists(path / "kv_store_relation_chunks.json")
    ents: list[list[Any]] = [[] for _ in chunks]
    tris: list[list[Any]] = [[] for _ in chunks]
    for name, data in _progress(nodes, show, f"{graph_file.name}: nodes", len(nodes), "node"):
        for pos in _lightrag_refs(data, ent_full.get(name, ()), index, issues, "entity"):
            ents[pos].append(name)
    for src, tgt, data in _progress(edges, show, f"{graph_file.name}: edges", len(edges), "edge"):
        rel = data.get("keywords") or data.get("description")
        if not rel or not rel.strip():
            issues[f'relation without keywords or description (relation "{_NO_RELATION}")'] += 1
            rel = _NO_RELATION
        full = rel_full.get(_SEP.join(sorted((src, tgt))), ())
        for pos in _lightrag_refs(data, full, index, issues, "relation"):
            tris[pos].append((src, rel, tgt))
    records = [
        ExtractionRecord(cid, _entities(ents[i], cid, issues), _triples(tris[i], cid, issues), chunks[cid])
        for cid, i in index.items()
    ]
    return _Read(records, issues, None)


def _lightrag_refs(
    data: Mapping[str, str], full: Iterable[str], index: Mapping[str, int], issues: Counter[str], what: str
) -> list[int]:
    """Positions of the text chunks a LightRAG node / edge names in ``source_id`` (joined with the full list)."""
    refs = [s for s in data.get("source_id", "").split(_SEP) if s]
    refs = list(dict.fromkeys([*refs, *full]))
    if not refs:
        issues[f"{what} without source chunks"] += 1
    out = []
    for ref in refs:
        pos = index.get(ref)
        if pos is None:
            issues[f"{what} source chunk not found"] += 1
        else:
            out.append(pos)
    return out


_READERS = {"jsonl": _read_jsonl, "hipporag": _read_hipporag, "graphrag": _read_graphrag, "lightrag": _read_lightrag}


# ------------------------------------------------------------------------------------------------ alignment
def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


class _PrefixIndex:
    """Texts indexed by their first characters, to find those that occur in a larger text starting at a word."""

    def __init__(self, items: Iterable[tuple[int, str]]) -> None:
        self.by_prefix: dict[str, list[tuple[int, str]]] = {}
        lengths = set()
        for key, text in items:
            if len(text) >= _MIN_CONTAIN:
                prefix = text[:_PREFIX]
                self.by_prefix.setdefault(prefix, []).append((key, text))
                lengths.add(len(prefix))
        self.lengths = sorted(lengths)

    def inside(self, big: str) -> list[int]:
        """Keys of the indexed texts contained in ``big`` (normalised) at a word start, in order of position."""
        found: dict[int, None] = {}
        if not self.lengths or len(big) < self.lengths[0]:
            return []
        start = 0
        while start >= 0:
            for n in self.lengths:
                for key, text in self.by_prefix.get(big[start : start + n], ()):
                    if key not in found and big.startswith(text, start):
                        found[key] = None
            nxt = big.find(" ", start)
            start = nxt + 1 if nxt >= 0 else -1
        return list(found)


def _contained(hosts: Mapping[int, str], ours: list[tuple[str, str]]) -> dict[int, list[str]]:
    """Host record -> our chunk ids, by containment: our chunks inside the host text (all of them), else the host
    text inside our chunks (texts normalised; shorter than ``_MIN_CONTAIN`` characters never match this way)."""
    out: dict[int, list[str]] = {}
    if not hosts:
        return out
    ours_index = _PrefixIndex((j, text) for j, (_, text) in enumerate(ours))
    for i, text in hosts.items():
        hits = ours_index.inside(text)
        if hits:
            out[i] = [ours[j][0] for j in hits]
    rest = _PrefixIndex((i, text) for i, text in hosts.items() if i not in out)
    if rest.lengths:
        for cid, text in ours:
            for i in rest.inside(text):
                out.setdefault(i, []).append(cid)
    return out


def align(
    extraction: Extraction, chunks: Mapping[str, str], aliases: Mapping[str, str] | None = None
) -> Extraction:
    """Fill every record's ``chunk_ids`` with our chunk ids (``chunks``: our chunk id -> text; ``aliases``: other
    ids of our chunks -> our chunk id, e.g. the passages a packed chunk holds, see :func:`chunk_aliases`).

    A record matches (1) the chunk whose id (or alias) is its ``source_id``; else (2) the chunks whose text equals
    its text, whitespace-normalised and case-folded; else (3) by containment: all our chunks contained in its text
    (a text unit packing several of ours), else the chunks containing its text (a host chunk smaller than ours). Records
    matching nothing are kept, counted in ``issues["no matching chunk"]``; if none matches, an
    :class:`~g2cons_plugins.errors.InputError` names the file (a wrong corpus is the usual cause).
    """
    if not chunks:
        raise InputError(f"{extraction.source}: align needs our chunks (id -> text); none given")
    by_text: dict[str, list[str]] = {}
    ours: list[tuple[str, str]] = []
    for cid, text in chunks.items():
        if not isinstance(text, str):
            raise InputError(f"chunk {cid!r}: text must be a string, got {type(text).__name__}")
        norm = _norm(text)
        by_text.setdefault(norm, []).append(cid)
        ours.append((cid, norm))
    matched: dict[int, tuple[str, ...]] = {}
    pending: dict[int, str] = {}
    for i, rec in enumerate(extraction.records):
        if rec.source_id in chunks:
            matched[i] = (rec.source_id,)
        elif aliases and rec.source_id in aliases:
            matched[i] = (aliases[rec.source_id],)
        elif rec.text is not None:
            norm = _norm(rec.text)
            if norm in by_text:
                matched[i] = tuple(by_text[norm])
            else:
                pending[i] = norm
    matched.update((i, tuple(ids)) for i, ids in _contained(pending, ours).items())
    if not matched:
        _raise_unaligned(extraction, chunks)
    records = tuple(replace(r, chunk_ids=matched.get(i, ())) for i, r in enumerate(extraction.records))
    issues = {k: v for k, v in extraction.issues.items() if k != "no matching chunk"}
    unmatched = len(records) - len(matched)
    if unmatched:
        issues["no matching chunk"] = unmatched
    return replace(extraction, records=records, issues=issues)


def _raise_unaligned(extraction: Extraction, chunks: Mapping[str, str]) -> None:
    ex_src = ", ".join(repr(r.source_id) for r in extraction.records[:3])
    ex_ours = ", ".join(repr(c) for c in list(chunks)[:3])
    raise InputError(
        f"{extraction.source}: none of its {len(extraction.records):,} records matches any of the {len(chunks):,} "
        f"chunks given, by id, text or containment (its source ids: {ex_src}; our chunk ids: {ex_ours}); "
        "is it the extraction of another corpus?"
    )


def chunk_aliases(chunks: Iterable[Any]) -> dict[str, str]:
    """Other ids of our chunks: each id in a chunk's ``metadata["source_ids"]`` (the passages
    :func:`g2cons_plugins.chunks.pack_chunks` packed into it) -> that chunk's id."""
    out: dict[str, str] = {}
    for c in chunks:
        for src in (getattr(c, "metadata", None) or {}).get("source_ids") or ():
            if isinstance(src, str):
                out.setdefault(src, c.id)
    return out
