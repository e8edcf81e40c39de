"""What a retriever needs of a selector: the concept graph it holds.

:class:`~langchain_g2cons.CoreChunkSelector` is a :class:`ConceptGraphHolder`; a retriever loaded with
``selector=...`` shares that graph. The retrievers check a selector against this class, so they never import the
selector's module (which imports the retrievers for ``as_retriever``): the modules import in one direction.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from g2cons_plugins import G2ConSIndex

__all__ = ["ConceptGraphHolder"]


class ConceptGraphHolder(ABC):
    """An object holding a concept graph (a ``G2ConSIndex``) that retrievers may share."""

    @abstractmethod
    def _require_index(self) -> G2ConSIndex:
        """The concept graph; raises when there is none yet."""
