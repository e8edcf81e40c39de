#!/usr/bin/env bash
# Build wheels of the three distributions, install them (not editable) into a clean venv and run both
# quickstarts from the wheels, offline, outside the source tree. Called by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
WHEELS="$(mktemp -d)"
RUN="$(mktemp -d)"
VENV="$(realpath -m "${G2CONS_WHEEL_VENV:-.venv-wheels}")"
trap 'rm -rf "$WHEELS" "$RUN"' EXIT
python -m pip wheel -q --no-deps -w "$WHEELS" . adapters/llama-index-retrievers-g2cons adapters/langchain-g2cons
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
LC_WHEEL="$(ls "$WHEELS"/langchain_g2cons-*.whl)"
"$VENV/bin/python" -m pip install -q "$WHEELS"/g2cons_plugins-*.whl \
    "$WHEELS"/llama_index_retrievers_g2cons-*.whl "langchain-g2cons[examples] @ file://$LC_WHEEL"
cd "$RUN"
export HF_HUB_OFFLINE=1
unset OPENAI_API_KEY
"$VENV/bin/python" - <<'PY'
import g2cons_plugins, langchain_g2cons
import llama_index.retrievers.g2cons as li
for m in (g2cons_plugins, langchain_g2cons, li):
    assert "site-packages" in m.__file__, f"{m.__name__} imported from {m.__file__}, not from its wheel"
print("wheels installed:", g2cons_plugins.__version__, langchain_g2cons.__version__)
PY
"$VENV/bin/python" "$ROOT/examples/llama_index_quickstart.py" --n-docs 60 | tail -n 3
"$VENV/bin/python" "$ROOT/examples/langchain_quickstart.py" --limit 60 | tail -n 3
echo "wheel check: both quickstarts ran from the wheels"
