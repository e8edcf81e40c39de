"""The input is read a document at a time (``corpus_io.stream_corpus``, which ``read_corpus`` holds): whatever the
block size, the same documents and the same errors (the byte offset of an invalid byte counted from the start of
the file); a document comes before a later line is read; chunking one document at a time equals chunking a list,
and the byte-length shortcut of ``split_tokens`` equals encoding."""

from __future__ import annotations

import csv
import io
import json
import warnings
from collections.abc import Sequence
from pathlib import Path

import pytest

from g2cons_plugins.errors import InputError
from g2cons_plugins.hosts.pipelines import corpus_io
from g2cons_plugins.hosts.pipelines.corpus_io import (
    chunk_documents,
    document_chunks,
    read_corpus,
    split_tokens,
    stream_corpus,
)
from g2cons_plugins.text import get_tokenizer

BLOCKS = (1, 2, 3, 7, 64, 1 << 18)
TEXTS = [
    "東京 first: its bytes cut by a small first block.",
    "Ünïcødé straße, 東京 and naïve café.",
    "Plain ASCII text here.",
    "Emoji 🙂 in the middle of it.",
    "x" * 300,
]


def _docs(path: Path, block: int, monkeypatch: pytest.MonkeyPatch, **kw: object) -> list[tuple[str, str, object]]:
    monkeypatch.setattr(corpus_io, "BLOCK_BYTES", block)
    c = read_corpus(path, **kw)  # type: ignore[arg-type]
    return [(d.id, d.text, c.id_column) for d in c.documents]


def _error(path: Path, block: int, monkeypatch: pytest.MonkeyPatch, **kw: object) -> str:
    monkeypatch.setattr(corpus_io, "BLOCK_BYTES", block)
    with pytest.raises(InputError) as e:
        read_corpus(path, **kw)  # type: ignore[arg-type]
    return str(e.value)


def test_jsonl_is_read_the_same_in_any_block_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [
        json.dumps({"text": t, **({"id": f"d{i}"} if i % 2 else {})}, ensure_ascii=i % 3 == 1)
        for i, t in enumerate(TEXTS)
    ]
    path = tmp_path / "a.jsonl"
    path.write_bytes(("\r\n".join(lines[:2]) + "\n\n  \n" + "\n".join(lines[2:])).encode("utf-8"))
    want = _docs(path, 1 << 18, monkeypatch)
    assert [t for _, t, _ in want] == TEXTS and want[0][2] == "id"
    for block in BLOCKS:
        assert _docs(path, block, monkeypatch) == want


def test_utf16_jsonl_in_any_block_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes("\n".join(json.dumps({"text": t}, ensure_ascii=False) for t in TEXTS).encode("utf-16"))
    for block in BLOCKS:
        assert [t for _, t, _ in _docs(path, block, monkeypatch, encoding="utf-16")] == TEXTS


def test_csv_lines_split_as_the_csv_module_reads_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = 'id,text,extra\r\na,"two\r\nlines, ""quoted""",1\rb,東京 🙂,2\nc,"cr\ronly",3\r\nd,last,4'
    path = tmp_path / "a.csv"
    path.write_bytes(body.encode("utf-8"))
    rows = list(csv.DictReader(io.StringIO(body, newline="")))
    assert len(rows) == 4
    for block in BLOCKS:
        monkeypatch.setattr(corpus_io, "BLOCK_BYTES", block)
        c = read_corpus(path)
        assert [d.record for d in c.documents] == rows and c.fieldnames == ["id", "text", "extra"]
        assert c.id_column == "id"


@pytest.mark.parametrize(
    ("data", "kw", "message"),
    [
        (b'{"text": "ok"}\n{"text": "bad \xff byte"}\n', {}, "not valid utf-8 text (byte 29)"),
        (b'{"text": "ok"}\n{"text": "cut \xe6\x9d', {}, "not valid utf-8 text (byte 29)"),
        (b'{"text": "ok"}\n{"text": "n\x00l"}\n', {}, "binary file (contains NUL bytes)"),
        ('{"text": "ok"}\n'.encode("utf-16"), {}, "UTF-16 text (it starts with a UTF-16 byte order mark)"),
        (b'{"text": "ok"}\n{"text": oops}\n', {}, ":2: not valid JSON"),
        (b'{"text": "ok"}\n\n{"body": "x"}\n', {}, ":3: no 'text' field"),
        (b'{"text": "ok"}\n{"text": "  "}\n', {}, ":2: empty text; remove it or pass --skip-empty"),
        (b'{"text": "  "}\n', {"skip_empty": True}, "every record is empty"),
        (b"\n  \n", {}, "empty file (no records)"),
        (b'{"id": 1, "text": "a"}\n{"id": 1, "text": "b"}\n', {}, "id '1' appears twice with different text"),
        (b'{"text": "ok"}\n', {"encoding": "nope"}, "unknown text encoding 'nope'"),
    ],
)
def test_the_same_errors_in_any_block_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, kw: dict[str, object], message: str
) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(data)
    if message.startswith(("not valid utf-8", "binary", "UTF-16")):  # as the whole file decoded at once says it
        with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
            corpus_io._decode(data, str(path), "utf-8")
    for block in BLOCKS:
        assert message in _error(path, block, monkeypatch, **kw)
        assert str(path) in _error(path, block, monkeypatch, **kw) or "encoding" in message


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (" \n \n", "empty file (no header, no rows)"),
        ("id,body\n1,x\n", "no column 'text'"),
        ("id,text\n", "a header but no rows"),
        ("id,text\n1,a,extra\n", "row 1: more fields than the header has columns"),
    ],
)
def test_csv_errors_in_any_block_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, message: str) -> None:
    path = tmp_path / "a.csv"
    path.write_text(body, encoding="utf-8")
    for block in BLOCKS:
        assert message in _error(path, block, monkeypatch)


def test_a_document_comes_before_a_later_line_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpus_io, "BLOCK_BYTES", 16)
    path = tmp_path / "a.jsonl"
    path.write_text('{"text": "first"}\n{"text": "second"}\n' + "x" * 4000 + "\n", encoding="utf-8")
    stream = stream_corpus(path)
    docs = iter(stream)
    assert next(docs).text == "first"
    assert stream.state.bytes_read < 64 and stream.state.documents == 1
    assert next(docs).text == "second"
    with pytest.raises(InputError, match=":3: not valid JSON"):
        next(docs)
    with pytest.raises(RuntimeError, match="read once"):
        iter(stream)


def test_a_document_given_twice_with_the_same_text_is_kept_once(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n', "utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [d.id for d in read_corpus(path).documents] == ["a", "b"]
    assert any("appears twice with the same text" in str(w.message) for w in caught)


def test_folder_and_json_inputs(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    (folder / "b.txt").write_text("bee", encoding="utf-8")
    (folder / "sub" / "a.md").write_text("ay", encoding="utf-8")
    stream = stream_corpus(folder)
    assert [(d.id, d.text) for d in stream] == [("b.txt", "bee"), ("sub/a.md", "ay")]
    assert stream.input_bytes() == 5 and stream.state.bytes_read == 5 and stream.state.characters == 5
    path = tmp_path / "a.json"
    path.write_text(json.dumps([{"text": "one"}, {"id": 7, "text": "two"}]), encoding="utf-8")
    c = read_corpus(path)
    assert [d.text for d in c.documents] == ["one", "two"] and c.id_column == "id" and c.documents[1].id == "7"


class _Plain:
    """A tokenizer that is not a TiktokenTokenizer: split_tokens encodes every text."""

    def __init__(self) -> None:
        self._tok = get_tokenizer()
        self.name = "plain"

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        return self._tok.decode(ids)


def test_chunking_a_stream_equals_chunking_a_list_and_the_shortcut_equals_encoding() -> None:
    docs = [corpus_io.Document(id=f"d{i}", text=t * (i + 1) * 7) for i, t in enumerate(TEXTS)]
    for size, overlap in ((0, 0), (20, 5), (60, 0), (1200, 100)):
        want = chunk_documents(docs, size, overlap)
        assert list(document_chunks(iter(docs), size, overlap)) == want
        assert chunk_documents(docs, size, overlap, tokenizer=_Plain()) == want  # type: ignore[arg-type]
    tok, plain = get_tokenizer(), _Plain()
    for text in ["a" * 100, "🙂" * 25, "🙂" * 26, "東京" * 17, " " * 100, "ab " * 33]:
        for size in (99, 100, 101):
            assert split_tokens(text, tok, size, 10) == split_tokens(text, plain, size, 10)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="--chunk-overlap"):
        document_chunks(iter(docs), 10, 10)
