"""Names written in a query, and the units that contain them (entity evidence for the concept path).

A question that names its entities ("Are Medici and Senet both board games?") is answered first from the
passages about those entities. Dense retrieval ranks them by the whole question's meaning, and BM25 by its words
one at a time; neither asks whether a unit contains the *name*. Here:

- :func:`query_names` finds the names a query writes: runs of capitalised words (with the connectors of names such
  as "of" or "de" inside them: "Edward Stanley, 3rd Earl of Derby" gives "Edward Stanley" and "Earl of Derby"),
  and quoted spans. A leading stop word or question word is dropped ("The Blue Lacy" -> "Blue Lacy"; "What" ->
  nothing), as is a trailing possessive "'s". Scripts without case (Chinese, Japanese) have no capitals: there a
  query yields only its quoted spans.
- :func:`name_matches` finds the units that contain each name as a phrase (case-insensitive, punctuation read as
  a space: "E. B. White" matches "E.B. White"), the candidates first narrowed by the lexical index (the units
  that hold every word of the name), so a query costs a few column reads and phrase checks. The work is bounded:
  of a name held by more than :data:`NAME_CHECK_MAX` units (a common word in a large corpus) only that many are
  checked, those where the name's rarest word weighs most in BM25 (titles and short passages about it), and its
  count is estimated from them.
- At most :data:`MAX_QUERY_NAMES` names of one query are looked up (the first ones, with a warning), so a
  question that writes thousands of names costs what one with a few dozen does.
- :func:`name_bonus` turns matches into a per-unit bonus for each name: ``weight`` x the name's specificity
  log(N / n) / log(N) (n units of N hold it: a name in one unit counts fully, one in every unit not at all), of
  which the share ``head_share`` only goes to a unit whose first line is the name (a title), half of it to a unit
  whose text opens with the name (an encyclopedic first sentence). :func:`entity_bonus` sums them over the names.

The concept path (``G2ConSConfig.entity_weight``, :func:`g2cons_plugins.retrieval.retrieve`) uses them for the head
of its list only: the first places go to units chosen one at a time by score + the bonus of the names that no
chosen unit holds yet, so each named entity gets its passage there before a second passage about the same one.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence

import numpy as np

from ..arrays.tables import unit_texts
from ..snapshot import HasSnapshot, Snapshot, as_snapshot

__all__ = ["entity_bonus", "name_bonus", "name_matches", "normalize", "query_names"]

# words that may sit inside a name between two capitalised words ("Bank of America", "Rio de Janeiro")
CONNECTORS = frozenset({"of", "the", "de", "del", "della", "di", "da", "du", "des", "la", "le", "van", "von", "der",
                        "den", "y", "&", "al", "bin", "ibn"})
# capitalised words that start a question or sentence without being (part of) a name
LEADING = frozenset({
    "what", "which", "who", "whom", "whose", "where", "when", "why", "how", "is", "are", "was", "were", "do",
    "does", "did", "has", "have", "had", "can", "could", "will", "would", "should", "shall", "may", "might", "the",
    "a", "an", "in", "on", "at", "of", "for", "from", "by", "to", "with", "as", "and", "or", "if", "this", "that",
    "these", "those", "it", "its", "his", "her", "their", "he", "she", "they", "name", "list", "find", "give",
    "tell", "both", "after", "before", "during", "since", "than", "not", "no", "yes", "between", "among",
})
NAME_CHECK_MAX = 256  # units checked for one name's phrase (bounded work per query at any corpus size)
MAX_QUERY_NAMES = 32  # names of one query looked up (the first ones; a warning says when more were written)
_TOKEN = re.compile(r"\S+")
_QUOTED = re.compile(r"[\"“”«»「」『』]([^\"“”«»「」『』]{2,80})[\"“”«»「」『』]")
_NON_WORD = re.compile(r"[\W_]+")
_LEAD = re.compile(r"[\W_]*")  # non-word characters (the separators of normalize)
_EDGE = "\"'“”‘’«»()[]{}¿?¡!,;:"


def normalize(text: str) -> str:
    """Lower case, every run of non-word characters one space, padded with a space at both ends."""
    return " " + _NON_WORD.sub(" ", text.lower()).strip() + " "


def _phrase(name: str, anchored: bool = False, whole: bool = False) -> re.Pattern[str]:
    """A pattern equal to ``normalize(name) in normalize(text)`` on the raw text (``anchored``: to
    ``normalize(text).startswith(normalize(name))``; ``whole``: to ``normalize(text) == normalize(name)``), without
    normalising the text: the words of the name, any run of non-word characters between them, no letter or digit
    on either side; case-insensitive."""
    words = normalize(name).split()
    core = r"[\W_]+".join(map(re.escape, words)) + r"(?![^\W_])"
    if whole:
        core += r"[\W_]*\Z"
    if anchored or whole:
        return re.compile(r"[\W_]*" + core, re.IGNORECASE)
    if not words:
        return re.compile(r"(?<![^\W_])" + core, re.IGNORECASE)
    # ``(?<![^\W_])`` + core, the look-behind checked after the name's first character (one character further
    # back): a pattern that opens with a character lets the search skip to where it occurs (~2.5x faster on
    # passages without the name) instead of trying the look-behind at every position
    first = re.escape(words[0][0])
    return re.compile(first + r"(?<![^\W_][\s\S])" + core[len(first) :], re.IGNORECASE)


def _capitalised(token: str) -> bool:
    word = token.strip(_EDGE)
    return bool(word) and word[0].isupper()


def _ends_span(token: str) -> bool:
    """A token that closes a name: it ends with a punctuation mark that separates phrases, or a closing
    parenthesis, or a full stop after a word of 4+ letters (not an abbreviation such as "St." or "B.")."""
    if token.endswith(")"):
        return True
    return token.rstrip("\"'”’»")[-1:] in ",;:?!" or (token.endswith(".") and len(token.strip(_EDGE)) > 4)


def _clean(words: list[str]) -> str:
    while words and words[0].strip(_EDGE).lower() in LEADING:
        words = words[1:]
    while words and words[-1].strip(_EDGE).lower() in CONNECTORS:
        words = words[:-1]
    if not words:
        return ""
    last = words[-1].strip(_EDGE)
    for poss in ("'s", "’s"):
        if last.endswith(poss):
            last = last[: -len(poss)]
    return " ".join([*(w.strip(_EDGE) for w in words[:-1]), last]).strip()


def query_names(query: str) -> list[str]:
    """The names written in ``query`` (see module doc), each once, in order of appearance."""
    out: list[str] = [m.group(1).strip() for m in _QUOTED.finditer(query)]
    span: list[str] = []
    for tok in _TOKEN.findall(query):
        if tok.startswith("(") and span:  # "Thieves (1996 Film)": the parenthesis starts a new name
            out.append(_clean(span))
            span = []
        if _capitalised(tok) or (span and tok.strip(_EDGE).lower() in CONNECTORS and not _ends_span(span[-1])):
            span.append(tok)
        else:
            out.append(_clean(span))
            span = []
            continue
        if _ends_span(tok):
            out.append(_clean(span))
            span = []
    out.append(_clean(span))
    return list(dict.fromkeys(n for n in out if n and normalize(n).strip()))


def name_matches(index: HasSnapshot, names: Sequence[str]) -> dict[str, np.ndarray]:
    """For each name, the positions of the units that contain it as a phrase (a name whose words the lexical
    index does not know, or that only has stop words, matches nothing; of a name held by more than
    :data:`NAME_CHECK_MAX` units, the matches among those checked: see module doc)."""
    index = as_snapshot(index)
    return {name: _matches(index, name)[0] for name in names}


def _matches(index: Snapshot, name: str) -> tuple[np.ndarray, float]:
    """The units (ascending) holding ``name`` as a phrase among the checked candidates, and the estimated number
    of units holding it (exact where every candidate was checked)."""
    hits, count, _ = _found(index, name)
    return hits, count


def _head(text: str, m: re.Match[str]) -> float:
    """1 when the first line of ``text`` is the name, 0.5 when the text opens with it, else 0, from the name's
    first match ``m`` in ``text`` (:func:`_phrase`): equal to matching ``_phrase(name, whole=True)`` against the
    first line and ``_phrase(name, anchored=True)`` against the text, without compiling or running them. The
    name's words are word characters, so a match that opens the text starts at its first word character, and
    that first match is the only one starting there."""
    if m.start() != _LEAD.match(text).end():  # type: ignore[union-attr]  # [\W_]* always matches
        return 0.0
    line_end = text.find("\n")
    line_end = len(text) if line_end < 0 else line_end
    return 1.0 if m.end() <= line_end and _LEAD.fullmatch(text, m.end(), line_end) else 0.5


def _holding(cand: np.ndarray, column: np.ndarray, column_sorted: bool) -> np.ndarray:
    """The units of ``cand`` (ascending, unique) that ``column`` (unique row indices) holds, ascending: equal to
    ``np.intersect1d(cand, column, assume_unique=True)``, in O(len(cand) log len(column)) for a sorted column."""
    if not column_sorted:
        return np.intersect1d(cand, column, assume_unique=True)
    if not len(column) or not len(cand):
        return cand[:0]
    at = np.minimum(np.searchsorted(column, cand), len(column) - 1)
    out: np.ndarray = cand[column[at] == cand]
    return out


def _heaviest(cand: np.ndarray, w: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` units of ``cand`` (ascending) with the largest ``w``, ties by position, ascending: equal to
    ``np.sort(cand[np.lexsort((cand, -w))[:k]])`` with a partition instead of a sort of every candidate."""
    if len(cand) <= k or k <= 0:
        return cand if k > 0 else cand[:0]
    cut = np.partition(w, len(w) - k)[len(w) - k]  # the k-th largest weight
    keep = w > cut  # fewer than k
    keep[np.flatnonzero(w == cut)[: k - int(keep.sum())]] = True  # the first of the ties at the cut
    out: np.ndarray = cand[keep]
    return out


def _found(index: Snapshot, name: str) -> tuple[np.ndarray, float, list[float]]:
    """:func:`_matches` and, for each unit found, :func:`_head`."""
    lex = index.lexical
    W = lex.weights
    cols = sorted(set(lex.query_columns(name)), key=lambda c: (W.indptr[c + 1] - W.indptr[c], c))
    if not cols:
        return np.zeros(0, dtype=np.int64), 0.0, []
    first = W.indices[W.indptr[cols[0]] : W.indptr[cols[0] + 1]]
    weight = W.data[W.indptr[cols[0]] : W.indptr[cols[0] + 1]]
    if not W.has_sorted_indices:  # row indices of a csc column: ascending after a build
        order = np.argsort(first, kind="stable")
        first, weight = first[order], weight[order]
    cand = first
    for c in cols[1:]:  # the rarest word's units that the others hold too (a look-up in each longer column)
        cand = _holding(cand, W.indices[W.indptr[c] : W.indptr[c + 1]], W.has_sorted_indices)
    n_cand = len(cand)
    if n_cand > NAME_CHECK_MAX:  # the units where the rarest word weighs most, ties by position
        cand = _heaviest(cand, weight[np.searchsorted(first, cand)], NAME_CHECK_MAX)
    pattern = _phrase(name)
    found, heads = [], []
    for u, text in zip(cand.tolist(), unit_texts(index.stored.units, cand), strict=True):
        m = pattern.search(text)
        if m is not None:
            found.append(u)
            heads.append(_head(text, m))
    hits = np.asarray(found, dtype=np.int64)
    return hits, len(hits) * n_cand / max(len(cand), 1), heads


def _unknown_initial(index: Snapshot, query: str, name: str) -> bool:
    """A one-word name that opens the query ("Cuál", "Name") is capitalised as the first word: it counts only
    when the corpus writes it as a name too (the bridge vocabulary of :class:`~g2cons_plugins.build.Derived`)."""
    if " " in normalize(name).strip() or not query.lstrip(_EDGE + " ").startswith(name):
        return False
    return normalize(name).strip() not in index.derived.names


def name_bonus(index: HasSnapshot, query: str, weight: float, head_share: float = 0.5) -> dict[str, dict[int, float]]:
    """For each name of the query that occurs in the corpus: unit position -> its bonus (see module doc). A unit
    whose first line is the name (a title) gets the whole head share, one whose text opens with the name half."""
    index = as_snapshot(index)
    if weight <= 0:
        return {}
    names = [nm for nm in query_names(query) if not _unknown_initial(index, query, nm)]
    if not names:
        return {}
    if len(names) > MAX_QUERY_NAMES:
        warnings.warn(
            f"the question writes {len(names):,} names: only the first {MAX_QUERY_NAMES} are looked up "
            f"(g2cons_plugins.retrieval.entities.MAX_QUERY_NAMES)",
            UserWarning,
            stacklevel=2,
        )
        names = names[:MAX_QUERY_NAMES]
    n = len(index.stored.units)
    log_n = math.log(max(n, 2))
    out: dict[str, dict[int, float]] = {}
    for name in names:
        hits, count, heads = _found(index, name)
        spec = math.log(n / count) / log_n if len(hits) else 0.0
        if spec <= 0:
            continue
        per: dict[int, float] = {}
        for u, head in zip(hits.tolist(), heads, strict=True):
            per[u] = weight * spec * ((1 - head_share) + head_share * head)
        out[name] = per
    return out


def entity_bonus(index: HasSnapshot, query: str, weight: float, head_share: float = 0.5) -> dict[int, float]:
    """Unit position -> bonus for the query's names (:func:`name_bonus` summed over the names); empty when
    ``weight`` is 0 or no name of the query occurs in the corpus."""
    bonus: dict[int, float] = {}
    for per in name_bonus(index, query, weight, head_share).values():
        for u, w in per.items():
            bonus[u] = bonus.get(u, 0.0) + w
    return bonus
