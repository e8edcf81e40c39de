"""A host pipeline's own settings, read so that ``g2cons select`` chunks and prices exactly as the host does.

- **MS GraphRAG** (:func:`read_graphrag`): ``PROJECT/settings.yaml`` (or ``.yml``/``.json``) as ``graphrag init``
  writes it. Current layout: ``input.type`` (text | csv | json | jsonl), ``input.file_pattern``, ``input.encoding``,
  ``input.text_column``/``id_column``, ``input_storage.base_dir`` (default ``input``), ``chunking.size``/
  ``overlap``/``encoding_model`` (defaults 1200 / 100 / ``o200k_base``), ``extract_graph.prompt`` (a prompt file
  relative to the project), ``entity_types`` and ``max_gleanings`` (default 1). Older layout: ``input.file_type``,
  ``input.base_dir``, ``input.file_encoding``, ``chunks.size``/``overlap``/``encoding_model``, a top-level
  ``encoding_model`` (default ``cl100k_base``), ``entity_extraction`` instead of ``extract_graph``. ``${VAR}``
  placeholders are left alone (only the keys above are read). Unknown top-level keys give a warning.
- **LightRAG** (:func:`lightrag_profile`): its defaults, ``chunk_token_size`` 1200, ``chunk_overlap_token_size`` 100,
  its default tokenizer (``o200k_base``, the one of ``gpt-4o-mini``), its default gleaning count, and its entity
  extraction prompt, taken at run time from the installed ``lightrag`` package (``lightrag.prompt.PROMPTS``).

Calls: GraphRAG sends one extraction call per chunk, then for ``max_gleanings = g`` up to ``g`` continuation calls
and ``g - 1`` "more entities?" calls (``1 + g + max(g - 1, 0)`` per chunk; 2 at the default ``g = 1``); LightRAG
sends one call and, when gleaning is on, one gleaning call. Input tokens of the first call are exact: the tokens
of the prompt with the chunk filled in, counted with the host's encoding model. A later call of the same chunk
re-sends that prompt plus the model's earlier answers, which are not known before the run: it is counted as the
first call's tokens (a lower bound).
"""

from __future__ import annotations

import copy
import json
import os
import re
import string
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...text import BUNDLED_ENCODINGS, Tokenizer, get_tokenizer

GRAPHRAG_SETTINGS = ("settings.yaml", "settings.yml", "settings.json")
GRAPHRAG_DEFAULT_ENTITY_TYPES = ("organization", "person", "geo", "event")
# graph_extractor's delimiters (older prompt files use them as placeholders; current ones hold them literally)
_GRAPHRAG_FORMAT = {"tuple_delimiter": "<|>", "record_delimiter": "##", "completion_delimiter": "<|COMPLETE|>"}
_GRAPHRAG_KEYS = {
    "models", "completion_models", "embedding_models", "input", "input_storage", "chunking", "chunks",
    "output", "output_storage", "update_output_storage", "reporting", "cache", "vector_store", "workflows",
    "embed_text", "embed_graph", "embeddings", "extract_graph", "entity_extraction", "summarize_descriptions",
    "extract_graph_nlp", "prune_graph", "cluster_graph", "cluster_graph_nlp", "extract_claims", "claim_extraction",
    "community_reports", "snapshots", "umap", "local_search", "global_search", "drift_search", "basic_search",
    "encoding_model", "skip_workflows", "root_dir", "llm", "parallelization", "async_mode", "storage",
    "update_index_storage", "concurrent_requests", "logging",
}  # fmt: skip
_SECTION_KEYS = {
    "chunking": {"type", "size", "overlap", "encoding_model", "prepend_metadata"},
    "chunks": {"size", "overlap", "encoding_model", "group_by_columns", "strategy", "prepend_metadata",
               "chunk_size_includes_metadata"},
    "extract_graph": {"prompt", "entity_types", "max_gleanings", "completion_model_id", "model_instance_name",
                      "model_id", "strategy", "encoding_model", "llm", "parallelization", "async_mode"},
}  # fmt: skip


@dataclass(frozen=True)
class HostProfile:
    """How a host reads, chunks and prices its input (see module doc)."""

    host: str  # "graphrag" | "lightrag"
    input_path: Path  # folder (text) or file (csv/json/jsonl)
    input_type: str  # "text" | "csv" | "json" | "jsonl"
    chunk_size: int
    chunk_overlap: int
    encoding_model: str
    gleanings: int
    calls_per_chunk: int
    prompt_source: str
    messages: Callable[[str], list[str]] = field(repr=False)  # chunk text -> the messages of its first call
    file_pattern: str | None = None
    file_encoding: str = "utf-8"
    text_column: str = "text"
    root: Path | None = None
    settings_path: Path | None = None
    settings_raw: dict[str, Any] | None = field(default=None, repr=False)
    base_dir_keys: tuple[str, ...] = ()  # where the input folder is named in the settings

    def tokenizer(self) -> Tokenizer:
        """The host's encoding model (fails clearly when tiktoken cannot load it offline)."""
        return host_tokenizer(self.encoding_model)

    def call_tokens(self, texts: Sequence[str], tokenizer: Tokenizer | None = None) -> list[int]:
        """Input tokens of the first extraction call for each chunk text: its messages, host encoding."""
        tok = tokenizer or self.tokenizer()
        return [sum(len(tok.encode(m)) for m in self.messages(t)) for t in texts]

    def prompt_tokens(self, tokenizer: Tokenizer | None = None) -> int:
        """Tokens of one call without a chunk (the prompt overhead, for kappa by tokens)."""
        return self.call_tokens([""], tokenizer)[0]


def host_tokenizer(name: str) -> Tokenizer:
    """The tokenizer of encoding ``name``: a bundled one, a path to a .tiktoken file, or a name tiktoken loads."""
    try:
        return get_tokenizer(name)
    except InputError:
        raise
    except Exception as e:  # tiktoken downloads encodings other than the bundled ones
        raise InputError(
            f"encoding model {name!r}: tiktoken cannot load it here ({type(e).__name__}); bundled (offline): "
            f"{', '.join(BUNDLED_ENCODINGS)}; or pass --encoding-model PATH of its .tiktoken file, or run once with "
            "network access (tiktoken caches it, see TIKTOKEN_CACHE_DIR)"
        ) from None


# ---------------------------------------------------------------------------------------------- GraphRAG
def _settings_file(root: Path) -> Path:
    if not root.is_dir():
        raise InputError(f"--root {root}: no such project folder")
    for name in GRAPHRAG_SETTINGS:
        if (root / name).is_file():
            return root / name
    raise InputError(f"--root {root}: no settings.yaml (or .yml/.json) in this folder; run `graphrag init` first")


def load_settings(path: Path) -> dict[str, Any]:
    """The settings file as a dict (YAML or JSON), with an error naming the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read ({e})") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else _load_yaml(text, path)
    except InputError:
        raise
    except RecursionError:
        raise InputError(f"{path}: nested too deeply to be settings") from None
    except Exception as e:  # yaml.YAMLError / json.JSONDecodeError
        raise InputError(f"{path}: not valid {path.suffix[1:].upper()} ({str(e).splitlines()[0]})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping of settings at the top, got {type(data).__name__}")
    return data


# YAML a settings file may use: the JSON types, dates (``last_run: 2024-01-01``) and merge keys (``<<: *base``)
_YAML_TAGS = {
    f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "timestamp", "map", "seq", "merge")
}
MAX_YAML_ALIASES = 64  # references to anchored nodes (``*name``): settings share a few blocks at most
MAX_YAML_NODES = 100_000  # nodes once every alias is expanded: an alias bomb stops here, before any expansion


def _load_yaml(text: str, path: Path) -> Any:
    """``text`` as YAML, checked on the node graph before anything is constructed (:func:`_check_yaml`)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_yaml(node, path)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_yaml(root: Any, path: Path) -> None:
    """Refuse, naming the key: a tag other than the plain ones (``!!binary``, ``!!set``, ``!!python/...``, custom
    tags), an alias that contains itself, more than :data:`MAX_YAML_ALIASES` aliases, or more than
    :data:`MAX_YAML_NODES` nodes once aliases are expanded (an alias bomb). Iterative: deep nesting is no issue."""
    import yaml

    def where(keys: tuple[str, ...], node: Any) -> str:
        name = "".join(k if k.startswith("[") else "." + k for k in keys).lstrip(".")
        return f"{path}: key {name or '(the top level)'} (line {node.start_mark.line + 1})"

    seen: set[int] = set()
    size: dict[int, int] = {}  # expanded node count of a finished node
    aliases = 0
    # (node, key path, children pushed?); an id on the open path twice is a node that contains itself
    stack: list[tuple[Any, tuple[str, ...], bool]] = [(root, (), False)]
    open_path: set[int] = set()
    while stack:
        node, keys, expanded = stack.pop()
        nid = id(node)
        if expanded:
            open_path.discard(nid)
            kids = _yaml_children(node)
            size[nid] = 1 + sum(size[id(k)] for k, _ in kids)
            if size[nid] > MAX_YAML_NODES:
                raise InputError(
                    f"{where(keys, node)}: more than {MAX_YAML_NODES:,} values once its aliases are expanded (an "
                    "alias bomb?); settings cannot be that large"
                )
            continue
        if nid in open_path:
            raise InputError(f"{where(keys, node)}: a recursive alias (an anchor used inside itself); not settings")
        if nid in seen:
            aliases += 1
            if aliases > MAX_YAML_ALIASES:
                raise InputError(f"{where(keys, node)}: more than {MAX_YAML_ALIASES} aliases; settings need fewer")
            if nid in size:
                continue  # finished already: its size is known
        seen.add(nid)
        if node.tag not in _YAML_TAGS:
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            raise InputError(
                f"{where(keys, node)}: YAML tag {tag!r} is not plain settings data (strings, numbers, booleans, "
                "null, dates, lists, mappings)"
            )
        if isinstance(node, yaml.ScalarNode):
            size[nid] = 1
            continue
        open_path.add(nid)
        stack.append((node, keys, True))
        for child, name in reversed(_yaml_children(node)):
            stack.append((child, (*keys, name) if name else keys, False))


def _yaml_children(node: Any) -> list[tuple[Any, str]]:
    """Child nodes with the key they stand under (mapping keys too: a key can hold a tag or an alias)."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        out: list[tuple[Any, str]] = []
        for k, v in node.value:
            name = str(k.value)[:60] if isinstance(k, yaml.ScalarNode) else "?"
            out += [(k, name), (v, name)]
        return out
    if isinstance(node, yaml.SequenceNode):
        return [(v, f"[{i}]") for i, v in enumerate(node.value)]
    return []


def _section(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    sec = data.get(key)
    if sec is None:
        return {}
    if not isinstance(sec, dict):
        raise InputError(f"{path}: {key} must be a mapping, got {type(sec).__name__}")
    return sec


def _int(value: Any, where: str, path: Path, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(f"{path}: {where} must be an integer >= {minimum}, got {value!r}")
    return value


def _str(value: Any, where: str, path: Path) -> str:
    if not isinstance(value, str) or not value:
        raise InputError(f"{path}: {where} must be a non-empty string, got {value!r}")
    return value


def read_graphrag(root: str | Path) -> HostProfile:
    """Read an MS GraphRAG project's settings (see module doc)."""
    root = Path(root)
    path = _settings_file(root)
    data = load_settings(path)
    _warn_unknown_keys(data, path)
    inp = _graphrag_input(data, root, path)
    size, overlap, encoding_model = _graphrag_chunking(data, path)
    gleanings, source, parts = _graphrag_extraction(data, root, path)

    def messages(text: str) -> list[str]:
        return [text.join(parts)]

    return HostProfile(
        host="graphrag",
        chunk_size=size,
        chunk_overlap=overlap,
        encoding_model=encoding_model,
        gleanings=gleanings,
        calls_per_chunk=1 + gleanings + max(gleanings - 1, 0),
        prompt_source=source,
        messages=messages,
        root=root,
        settings_path=path,
        settings_raw=data,
        **inp,
    )


def _warn_unknown_keys(data: dict[str, Any], path: Path) -> None:
    unknown = sorted(str(k) for k in data if k not in _GRAPHRAG_KEYS)
    if unknown:
        warnings.warn(f"{path}: unknown settings {unknown} (not used by g2cons; check the spelling)", stacklevel=3)
    for sec_name, known in _SECTION_KEYS.items():
        extra = sorted(str(k) for k in _section(data, sec_name, path) if k not in known)
        if extra:
            warnings.warn(f"{path}: unknown keys in {sec_name}: {extra}", stacklevel=3)


def _graphrag_input(data: dict[str, Any], root: Path, path: Path) -> dict[str, Any]:
    """The input's type, folder (and which keys name it), file pattern, encoding and text column, as
    :class:`HostProfile` fields; both settings layouts (``input_storage`` + ``input.file_type``, or the older
    ``input.type`` / ``input.base_dir``)."""
    inp = _section(data, "input", path)
    storage = _section(data, "input_storage", path)
    new_layout = "chunking" in data or "input_storage" in data or "file_type" not in inp
    itype = str(inp.get("file_type") or inp.get("type") or "text")
    if itype in ("file", "blob"):  # older layout: input.type is the storage, file_type the format
        if itype == "blob":
            raise InputError(f"{path}: input.type blob: only file inputs can be read")
        itype = str(inp.get("file_type") or "text")
    if itype not in ("text", "csv", "json", "jsonl"):
        raise InputError(f"{path}: input type {itype!r} is not supported (text, csv, json or jsonl)")
    stype = storage.get("type", "file")
    if stype not in (None, "file"):
        raise InputError(f"{path}: input_storage.type {stype!r}: only file storage can be read")
    if "base_dir" in storage:
        base, keys = storage["base_dir"], ("input_storage", "base_dir")
    elif "base_dir" in inp:
        base, keys = inp["base_dir"], ("input", "base_dir")
    else:
        base, keys = "input", ("input_storage", "base_dir") if new_layout else ("input", "base_dir")
    base_dir = root / _str(base, ".".join(keys), path)
    pattern = inp.get("file_pattern")
    if pattern is None:
        pattern = {"text": r".*\.txt$", "csv": r".*\.csv$", "json": r".*\.json$", "jsonl": r".*\.jsonl$"}[itype]
    try:
        re.compile(pattern)
    except (re.error, TypeError) as e:
        raise InputError(f"{path}: input.file_pattern {pattern!r} is not a regular expression ({e})") from None
    return {
        "input_path": base_dir,
        "input_type": itype,
        "file_pattern": pattern,
        "file_encoding": str(inp.get("encoding") or inp.get("file_encoding") or "utf-8"),
        "text_column": str(inp.get("text_column") or "text"),
        "base_dir_keys": keys,
    }


def _graphrag_chunking(data: dict[str, Any], path: Path) -> tuple[int, int, str]:
    """Chunk size, overlap and encoding model (``chunking``, or the older ``chunks``)."""
    chunking = _section(data, "chunking", path) if "chunking" in data else _section(data, "chunks", path)
    ckey = "chunking" if "chunking" in data else "chunks"
    ctype = chunking.get("type", "tokens")
    if ctype != "tokens":
        raise InputError(f"{path}: {ckey}.type {ctype!r}: only the token chunker is supported")
    if chunking.get("prepend_metadata"):
        raise InputError(f"{path}: {ckey}.prepend_metadata is set: chunks with metadata are not supported yet")
    size = _int(chunking.get("size", 1200), f"{ckey}.size", path, 1)
    overlap = _int(chunking.get("overlap", 100), f"{ckey}.overlap", path)
    if overlap >= size:
        raise InputError(f"{path}: {ckey}.overlap ({overlap}) must be smaller than {ckey}.size ({size})")
    default_enc = "o200k_base" if "chunking" in data else str(data.get("encoding_model") or "cl100k_base")
    encoding_model = _str(chunking.get("encoding_model") or default_enc, f"{ckey}.encoding_model", path)
    return size, overlap, encoding_model


def _graphrag_extraction(data: dict[str, Any], root: Path, path: Path) -> tuple[int, str, list[str]]:
    """Gleanings, the prompt's source and the prompt split around its input slot (``extract_graph``, or the older
    ``entity_extraction``)."""
    ekey = "extract_graph" if "extract_graph" in data or "entity_extraction" not in data else "entity_extraction"
    extract = _section(data, ekey, path)
    gleanings = _int(extract.get("max_gleanings", 1), f"{ekey}.max_gleanings", path)
    types = extract.get("entity_types", list(GRAPHRAG_DEFAULT_ENTITY_TYPES))
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise InputError(f"{path}: {ekey}.entity_types must be a list of strings, got {types!r}")
    template, source = _graphrag_prompt(extract.get("prompt"), root, path, ekey)
    parts = parse_template(template, {**_GRAPHRAG_FORMAT, "entity_types": ",".join(types)}, "input_text", source)
    return gleanings, source, parts


def parse_template(template: str, values: dict[str, str], slot: str, source: str) -> list[str]:
    """A prompt template as GraphRAG's ``str.format`` reads it (``{{``/``}}`` are braces, ``{name}`` a placeholder),
    with the placeholders in ``values`` filled in: the literal pieces around each ``{slot}`` (the chunk text goes
    between them, ``slot.join(pieces)``). Only plain ``{name}`` placeholders of known names are accepted: attribute
    or index access, conversions and format specs (``{x.__class__}``, ``{x!r}``, ``{x:>99999}``) are refused
    naming the file, so no template can reach objects or allocate without bound."""
    pieces, current = [], []
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError as e:
        raise InputError(
            f"{source}: the prompt template cannot be filled ({e}; write a literal brace as {{{{ or }}}})"
        ) from None
    for literal, name, spec, conversion in fields:
        current.append(literal)
        if name is None:
            continue
        shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        if conversion or spec or (name not in values and name != slot):
            known = ", ".join("{" + k + "}" for k in [slot, *values])
            what = "unknown placeholder" if not (conversion or spec) and name.isidentifier() else "placeholder"
            raise InputError(
                f"{source}: the prompt template cannot be filled: {what} {shown[:80]!r}; only the plain placeholders "
                f"{known} are filled (write a literal brace as {{{{ or }}}})"
            )
        if name == slot:
            pieces.append("".join(current))
            current = []
        else:
            current.append(values[name])
    pieces.append("".join(current))
    return pieces


def _graphrag_prompt(prompt: Any, root: Path, path: Path, ekey: str) -> tuple[str, str]:
    if prompt:
        file = root / _str(prompt, f"{ekey}.prompt", path)
        if not file.is_file():
            raise InputError(f"{path}: {ekey}.prompt names {file}, which does not exist")
        try:
            return file.read_text(encoding="utf-8"), str(file)
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"{file}: cannot read the prompt ({e})") from None
    try:  # no prompt file: GraphRAG uses its built-in prompt
        from graphrag.prompts.index.extract_graph import GRAPH_EXTRACTION_PROMPT
    except ImportError:
        raise InputError(
            f"{path}: {ekey}.prompt is not set, so GraphRAG uses its built-in prompt, and graphrag is not "
            "installed here to read it; set the prompt file (graphrag init writes prompts/extract_graph.txt)"
        ) from None
    return str(GRAPH_EXTRACTION_PROMPT), "graphrag.prompts.index.extract_graph"


def graphrag_files(profile: HostProfile) -> list[Path]:
    """The input files GraphRAG reads: files under the input folder whose path matches ``file_pattern``."""
    base = profile.input_path
    if not base.is_dir():
        raise InputError(f"{base}: the input folder named by {'.'.join(profile.base_dir_keys)} does not exist")
    rx = re.compile(profile.file_pattern or r".*\.txt$")
    files: list[Path] = []
    other: list[Path] = []
    for p in sorted(base.rglob("*")):
        if p.is_file() and not p.name.startswith("."):
            (files if rx.search(p.relative_to(base).as_posix()) else other).append(p)
    if not files:
        raise InputError(f"{base}: no file matches input.file_pattern {rx.pattern!r}")
    if other:
        names = ", ".join(p.relative_to(base).as_posix() for p in other[:5]) + (", ..." if len(other) > 5 else "")
        warnings.warn(
            f"{base}: {len(other)} file(s) do not match input.file_pattern {rx.pattern!r} and are not read (GraphRAG "
            f"skips them too): {names}",
            stacklevel=2,
        )
    return files


def core_settings(profile: HostProfile, core_dir: str, new_root: Path) -> dict[str, Any]:
    """The settings for a new GraphRAG root ``new_root``: the input folder is ``core_dir`` (relative to it), and
    every relative prompt file (keys ``prompt`` / ``*_prompt``) points back at the project's file. Nothing else
    changes (``${VAR}`` placeholders included); relative output, cache and report folders land in the new root."""
    assert profile.settings_raw is not None and profile.root is not None
    data = copy.deepcopy(profile.settings_raw)  # YAML values as read (dates stay dates): no JSON round trip
    root = profile.root

    def fix(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if (k == "prompt" or str(k).endswith("_prompt")) and isinstance(v, str) and not Path(v).is_absolute():
                    if (root / v).is_file():
                        node[k] = Path(os.path.relpath(root / v, new_root)).as_posix()
                else:
                    fix(v)
        elif isinstance(node, list):
            for v in node:
                fix(v)

    fix(data)
    sec, key = profile.base_dir_keys
    if not isinstance(data.get(sec), dict):
        data[sec] = {}
    data[sec][key] = core_dir  # the core file(s) keep the input's names and suffixes: file_pattern still matches
    return data


# ---------------------------------------------------------------------------------------------- LightRAG
def lightrag_profile(input_path: Path, encoding_model: str | None = None) -> HostProfile:
    """LightRAG's defaults, its prompt read from the installed package (see module doc)."""
    try:
        from lightrag import constants as lc
        from lightrag.prompt import PROMPTS, resolve_entity_extraction_prompt_profile
    except ImportError:
        raise InputError("--host lightrag needs the lightrag-hku package (pip install lightrag-hku)") from None
    profile = resolve_entity_extraction_prompt_profile({}, False)
    language = lc.DEFAULT_SUMMARY_LANGUAGE
    delims = {
        "tuple_delimiter": PROMPTS["DEFAULT_TUPLE_DELIMITER"],
        "completion_delimiter": PROMPTS["DEFAULT_COMPLETION_DELIMITER"],
    }
    guidance = profile["entity_types_guidance"]
    examples = "\n".join(profile["entity_extraction_examples"]).format(
        **delims, entity_types_guidance=guidance, language=language
    )
    ctx = dict(
        **delims,
        entity_types_guidance=guidance,
        examples=examples,
        language=language,
        max_total_records=lc.DEFAULT_MAX_EXTRACTION_RECORDS,
        max_entity_records=lc.DEFAULT_MAX_EXTRACTION_ENTITIES,
    )
    system = PROMPTS["entity_extraction_system_prompt"].format(**ctx)
    user = PROMPTS["entity_extraction_user_prompt"]

    def messages(text: str) -> list[str]:
        return [system, user.format(**ctx, input_text=text, heading_context_block="")]

    gleanings = int(lc.DEFAULT_MAX_GLEANING)
    return HostProfile(
        host="lightrag",
        input_path=input_path,
        input_type="text",
        chunk_size=1200,
        chunk_overlap=100,
        encoding_model=encoding_model or "o200k_base",
        gleanings=gleanings,
        calls_per_chunk=1 + (1 if gleanings > 0 else 0),
        prompt_source="lightrag.prompt.PROMPTS['entity_extraction_system_prompt' + 'entity_extraction_user_prompt']",
        messages=messages,
    )
