#!/usr/bin/env bash
# Fresh venv, install exactly as README says, lint, type-check, test. Used by README and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${G2CONS_VENV:-.venv-test}"
python3 -m venv "$VENV"
. "$VENV/bin/activate"
python -m pip install -q --upgrade pip
python -m pip install -q -e ".[test,docs]" -e "adapters/llama-index-retrievers-g2cons[ner]" -e "adapters/langchain-g2cons[test]"
# host pipelines for the `g2cons select` integration tests (LightRAG, MS GraphRAG's input loader and chunker)
python -m pip install -q lightrag-hku graphrag-input graphrag-chunking
export HF_HUB_OFFLINE=1
ruff check g2cons_plugins tests examples benchmarks
(cd adapters/llama-index-retrievers-g2cons && ruff check .)
(cd adapters/langchain-g2cons && ruff check .)
mypy g2cons_plugins
(cd adapters/llama-index-retrievers-g2cons && mypy)
(cd adapters/langchain-g2cons && mypy)
# the docs site (API pages from docstrings), built outside the repository: never a site/ here
NO_MKDOCS_2_WARNING=1 mkdocs build --strict -q -d "$(mktemp -d)"
python -m pytest tests
# each adapter's own tests, from its folder (its pytest config; LangChain's standard retriever suite)
(cd adapters/llama-index-retrievers-g2cons && python -m pytest tests)
(cd adapters/langchain-g2cons && python -m pytest tests)
bash scripts/wheel_check.sh
