"""A LightRAG GraphML is read streamed: the memory a read takes stays a small multiple of the file's size (the
whole-file parse it replaced peaked at about 17-20x), the nodes and edges are those of a whole-file parse, and a
DOCTYPE / ENTITY declaration is refused wherever it falls against the reader's blocks."""

from __future__ import annotations

import gc
import sys
import tracemalloc
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from g2cons_plugins.errors import InputError
from g2cons_plugins.hosts.replay import _graphml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "hostile"))
from graphml_memory import generate, whole_file  # noqa: E402


@pytest.fixture(scope="module")
def graphml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    file = tmp_path_factory.mktemp("lightrag") / "graph_chunk_entity_relation.graphml"
    generate(file, 20_000)
    return file


def test_streamed_read_equals_a_whole_file_parse(graphml: Path) -> None:
    nodes, edges = _graphml(graphml)
    assert (nodes, edges) == whole_file(graphml)
    assert len(nodes) == 20_000 and nodes[7] == (
        "E7",
        {"entity_id": "E7", "entity_type": "person", "description": "e7", "source_id": "chunk-7"},
    )


def _overhead(read: object, file: Path) -> tuple[int, int]:
    """(peak memory beyond what the result holds, what the result holds) of ``read(file)``, in bytes."""
    tracemalloc.start()
    try:
        result = read(file)  # type: ignore[operator]
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(result[0]) == 20_000
    return peak - held, held


def test_reading_holds_the_result_not_the_file_and_its_tree(graphml: Path) -> None:
    streamed, held = _overhead(_graphml, graphml)
    whole, _ = _overhead(whole_file, graphml)
    # beyond the result: one block's tree when streamed (bounded), the file and its whole tree before
    assert streamed < 0.4 * whole, f"streamed {streamed:,} bytes beyond the result, whole-file {whole:,}"
    assert streamed < 40 << 20 and held < 5 * graphml.stat().st_size


@pytest.mark.parametrize("decl", [b"<!DOCTYPE graphml>", b'<!DOCTYPE g [<!ENTITY x "y">]>'])
@pytest.mark.parametrize("shift", [0, 3, 8])
def test_a_declaration_across_the_reader_blocks_is_refused(tmp_path: Path, decl: bytes, shift: int) -> None:
    head = b'<?xml version="1.0" encoding="UTF-8"?>\n<!--'
    pad = (1 << 20) - len(head) - len(b"-->\n") - shift  # the declaration starts `shift` bytes before a block ends
    file = tmp_path / "g.graphml"
    file.write_bytes(head + b"x" * pad + b"-->\n" + decl + b'\n<graphml><graph><node id="a"/></graph></graphml>\n')
    with pytest.raises(InputError, match="DOCTYPE / ENTITY declaration is refused"):
        _graphml(file)
    assert gc.isenabled()  # paused while reading only


def test_invalid_xml_is_named(tmp_path: Path) -> None:
    file = tmp_path / "g.graphml"
    file.write_bytes(b'<graphml><graph><node id="a"></graph></graphml>')
    with pytest.raises(InputError, match=rf"{file.name}: not valid GraphML"):
        _graphml(file)
    assert ET  # the module parses with the standard library only
