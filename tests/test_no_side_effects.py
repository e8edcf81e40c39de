"""Importing the core and both adapters, and building with the default embedder, leaves the application's global
state as it was: root logger level and handlers, warnings filters, LlamaIndex ``Settings``. Each check runs in a
fresh interpreter (imports are cached per process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

PROBE = textwrap.dedent(
    """
    import json, logging, sys, warnings
    def state():
        root = logging.getLogger()
        out = {"level": root.level, "handlers": [repr(h) for h in root.handlers],
               "filters": [repr(f) for f in warnings.filters]}
        li = sys.modules.get("llama_index.core")
        if li is not None:
            s = li.Settings
            out["settings"] = [repr(getattr(s, a)) for a in ("_llm", "_embed_model", "_callback_manager",
                               "_node_parser", "_transformations", "_tokenizer", "_prompt_helper")]
        return out
    {pre}
    before = state()
    {body}
    after = state()
    print(json.dumps({"before": before, "after": after}))
    """
)

# the app's own heavy dependencies, imported before the first snapshot: numpy and scipy add "always" filters for
# their own warning classes at import, which is theirs, not a side effect of g2cons
_DEPS = "import numpy, scipy.sparse, scipy.special, networkx, tiktoken"
PRE = {
    "core": _DEPS,
    "llama_index": _DEPS + ", llama_index.core",
    "langchain": _DEPS + ", langchain_core.documents, langchain_core.retrievers, langchain_core.runnables",
}

BODIES = {
    "core": """
import g2cons_plugins
from g2cons_plugins import G2ConSIndex
idx = G2ConSIndex.build(["Marie Curie was born in Warsaw.", "Pierre Curie worked in Paris."], embedder="wordllama")
idx.select(kappa=0.5); idx.retrieve("Where was Marie Curie born?")
""",
    "llama_index": """
from llama_index.core.schema import TextNode
from llama_index.retrievers.g2cons import ConceptGraphRetriever, CoreChunkSelector
nodes = [TextNode(id_="a", text="Marie Curie was born in Warsaw."), TextNode(id_="b", text="Pierre Curie worked.")]
sel = CoreChunkSelector(kappa=0.5)
sel(nodes)
ConceptGraphRetriever.from_defaults(selector=sel).retrieve("Where was Marie Curie born?")
""",
    "langchain": """
from langchain_core.documents import Document
from langchain_g2cons import CoreChunkSelector, G2ConSRetriever
sel = CoreChunkSelector(kappa=0.5)
sel.transform_documents([Document(page_content="Marie Curie was born in Warsaw."), Document(page_content="Pierre.")])
sel.as_retriever().invoke("Where was Marie Curie born?")
""",
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_import_and_build_leave_global_state_unchanged(name: str) -> None:
    pytest.importorskip("wordllama")
    if name != "core":
        pytest.importorskip({"llama_index": "llama_index.retrievers.g2cons", "langchain": "langchain_g2cons"}[name])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": ""}
    code = PROBE.replace("{pre}", PRE[name]).replace("{body}", BODIES[name].strip())
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    before, after = res["before"], res["after"]
    assert (after["level"], after["handlers"]) == (before["level"], before["handlers"]) == (30, [])
    assert after["filters"] == before["filters"]
    if name == "llama_index":
        assert after["settings"] == before["settings"]  # nothing resolved or set on the global Settings
    assert "INFO" not in proc.stderr  # wordllama's INFO lines do not reach the app's stderr


def test_the_guard_is_needed() -> None:
    """Control: importing wordllama without the guard does change the root logger."""
    pytest.importorskip("wordllama")
    code = "import logging, wordllama; r = logging.getLogger(); print(r.level, len(r.handlers))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.split() == ["20", "1"]
