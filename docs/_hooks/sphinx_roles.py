"""MkDocs hook: the docstrings use Sphinx roles (:meth:`x`, :class:`y`); mkdocstrings renders them as the role name
followed by inline code. Keep the code, drop the role name."""

from __future__ import annotations

import re
from typing import Any

ROLE = re.compile(r":(?:py:)?(?:meth|func|class|mod|attr|data|exc|obj|const):(?=<code>)")


def on_page_content(html: str, **kwargs: Any) -> str:
    return ROLE.sub("", html)
