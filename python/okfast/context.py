"""``ContextAssembler``: knowledge and memory passages → one budgeted text (SPEC §6.5).

The output is data for a message, never instructions. Decisions beyond the SPEC:

- **Tokens** are estimated as ``ceil(chars / 4)`` (``chars`` = ``len`` of the
  ``str``). A block costs ``ceil((len(block) + 1) / 4)``: its joining newline
  is counted, so the blocks' costs add up to at least the estimate of the
  joined text and ``ceil(len(assembly.text) / 4) <= token_budget`` always
  holds. ``AssemblyBlock.tokens`` is that cost; ``Assembly.tokens`` is the
  estimate of the whole text.
- **Blocks** are ``<okf-context id="{surface}:{source_id}:{concept_id}">``,
  the title (a ``None`` title renders as the concept id), the body verbatim,
  and ``</okf-context>``, one per line; blocks are joined with ``"\\n"``,
  knowledge blocks first, then memory blocks, each surface in its own order.
- **Budget split**: floors ``K0 = floor(knowledge_share × budget)`` and
  ``M0 = floor(memory_share × budget)``, computed exactly on the shares'
  decimal spelling (``0.29 × 100`` is 29, not 28.999…). Each surface's demand
  is the sum of its full block costs (counting stops once it exceeds the
  budget, so a huge result list is never rendered). Each surface first gets
  ``min(demand, floor)``; the leftover goes to knowledge up to its demand,
  then to memory. A memory floor is therefore honoured even when knowledge
  alone could fill the budget, and a share a surface does not use spills.
- **Truncation**: walking a surface's passages in order, a block that fits
  whole is added; the first one that does not is cut after its last whole
  body line that fits, followed by the line ``… (truncated)`` and the closing
  tag, and then the surface stops. When not even the header, title, that line
  and the closing tag fit, the surface stops without it.
- **Injection**: in titles and bodies every ``<okf-context`` and
  ``</okf-context`` (case-insensitive) has its ``<`` written as ``&lt;``, so
  passage text can never open or close a block; nothing else is touched.
  Ids come from validated catalogs and memory paths; a ``"`` in one is still
  written as ``&quot;`` so it cannot end the attribute.
- **Failures degrade**: an exception from ``resolver.search``, from iterating
  its passages or from ``store.read`` ends that surface with a
  ``SourceUnavailable`` diagnostic (what was read before it is kept); one from
  reading a passage's title or body skips that passage with an
  ``UnreadableFile`` diagnostic. Only the ``ValueError`` of a blank query
  text (a programmer error) propagates. ``Assembly.diagnostics`` holds the
  resolver's diagnostics and knowledge failures, then the store's and memory
  failures.
- **Determinism**: the same inputs give the same output; nothing depends on
  time, hashing order or the environment.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, Protocol

from okfast.errors import InvalidArgumentError
from okfast.memory.scope import Scope
from okfast.model import Diagnostic, DiagnosticCode, Passage
from okfast.query import Query
from okfast.scoring import BM25FParams, Scorer, whole_of

Surface = Literal["knowledge", "memory"]

TRUNCATED = "… (truncated)"
_CLOSE = "\n</okf-context>"
_TAG = re.compile(r"<(/?okf-context)", re.IGNORECASE)


class _Found(Protocol):
    @property
    def passages(self) -> Iterable[Passage]: ...
    @property
    def diagnostics(self) -> Sequence[Diagnostic]: ...


class Searcher(Protocol):
    """What the assembler needs of a resolver (``okfast.Resolver`` is one):
    its search, and the scorer it scores with by default (memory is scored
    the same way)."""

    # Read-only is enough (a RayResolver's are properties).
    @property
    def default_scorer(self) -> Scorer: ...
    @property
    def default_bm25f(self) -> BM25FParams: ...

    def search(self, query: Query, /) -> _Found: ...


class MemoryReader(Protocol):
    """What the assembler needs of a memory store (``FileMemoryStore`` is one)."""

    def read(self, scope: Scope, text: str, /, *, scorer: Scorer, bm25f: BM25FParams) -> _Found: ...


@dataclass(frozen=True, slots=True)
class AssemblyBlock:
    """One ``<okf-context>`` block; ``tokens`` is what it cost the budget."""

    surface: Surface
    source_id: str
    concept_id: str
    text: str
    tokens: int
    truncated: bool


@dataclass(frozen=True, slots=True)
class Assembly:
    """The assembled text, its blocks, its token estimate and what went wrong."""

    text: str
    blocks: tuple[AssemblyBlock, ...]
    tokens: int
    diagnostics: tuple[Diagnostic, ...]
    #: ``(surface, source_id, concept_id)`` of every passage found that has no
    #: block: left out for the budget (or unreadable: see the diagnostics).
    omitted: tuple[tuple[Surface, str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class _Rendered:
    source_id: str
    concept_id: str
    head: str  # the opening tag and the title line, each ending in "\n"
    body: str

    @property
    def text(self) -> str:
        return self.head + self.body + _CLOSE


def _cost(chars: int) -> int:
    return (chars + 1 + 3) // 4  # ceil((chars + 1) / 4): the joining newline counts


def _neutralise(s: str) -> str:
    return _TAG.sub(r"&lt;\1", s)


def _share(name: str, v: object) -> Fraction:
    """A share as an exact fraction: any real number >= 0 but a bool (numpy's
    integers and floats included), never infinite or NaN (docs/spec.md §6.5)."""
    whole = whole_of(v)
    if whole is not None:
        if whole < 0:
            raise InvalidArgumentError(f"{name} must be a finite number >= 0, got {v!r}")
        return Fraction(whole)
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise InvalidArgumentError(f"{name} must be a finite number >= 0, got {v!r}")
    f = float(v)
    if not f >= 0 or math.isinf(f):
        raise InvalidArgumentError(f"{name} must be a finite number >= 0, got {v!r}")
    if isinstance(v, Fraction):
        return v
    # A float's shortest decimal spelling is what the caller wrote: exact
    # floors and sums. Of its own precision: numpy's float32 0.29 is "0.29",
    # not the float64 it widens to (0.28999999165…).
    text = str(v) if type(v).__module__ == "numpy" else repr(f)
    try:
        return Fraction(text)
    except ValueError:
        return Fraction(repr(f))


def _failed(code: DiagnosticCode, what: str, e: Exception, p: Passage | None = None) -> Diagnostic:
    # A passage of a hand-written resolver need carry no path (docs/spec.md
    # §6.5 names the attributes read): the diagnostic then has none.
    path, source = (None, None) if p is None else (getattr(p, "path", None), p.source_id)
    return Diagnostic(code.value, f"{what}: {type(e).__name__}: {e}", path, source, "error")


def _render(
    surface: Surface, found: Iterable[Passage], diags: list[Diagnostic]
) -> Iterator[_Rendered]:
    """Blocks in passage order, each passage built and read only when pulled."""
    try:
        for p in found:
            try:
                title = p.concept_id if p.title is None else p.title
                body = p.body
            except Exception as e:  # one unreadable passage must not sink the rest
                what = f"Passage '{p.source_id}:{p.concept_id}' could not be read"
                diags.append(_failed(DiagnosticCode.UNREADABLE_FILE, what, e, p))
                continue
            ident = f"{surface}:{p.source_id}:{p.concept_id}".replace('"', "&quot;")
            head = f'<okf-context id="{_neutralise(ident)}">\n{_neutralise(title)}\n'
            yield _Rendered(p.source_id, p.concept_id, head, _neutralise(body))
    except Exception as e:  # the resolver's lazy list failed part-way: keep what was read
        what = f"{surface.capitalize()} passages stopped early"
        diags.append(_failed(DiagnosticCode.SOURCE_UNAVAILABLE, what, e))


def _demand(blocks: Iterator[_Rendered], budget: int) -> tuple[list[_Rendered], int]:
    """Render until the full cost exceeds ``budget``: no allocation can use more."""
    out: list[_Rendered] = []
    need = 0
    for b in blocks:
        out.append(b)
        need += _cost(len(b.text))
        if need > budget:
            break
    return out, need


def _truncated(b: _Rendered, room: int) -> str | None:
    """The block cut after its last whole body line that fits in ``room``, if any does."""
    fixed = len(b.head) + len(TRUNCATED) + len(_CLOSE)
    if _cost(fixed) > room:
        return None
    kept = 0  # chars of body kept, each kept line with its "\n"
    for line in b.body.split("\n"):
        if _cost(fixed + kept + len(line) + 1) > room:
            break
        kept += len(line) + 1
    return b.head + b.body[:kept] + TRUNCATED + _CLOSE


def _fill(surface: Surface, blocks: list[_Rendered], room: int) -> list[AssemblyBlock]:
    out: list[AssemblyBlock] = []
    for b in blocks:
        text, cut = b.text, False
        if _cost(len(text)) > room:
            cut_text = _truncated(b, room)
            if cut_text is None:
                break
            text, cut = cut_text, True
        out.append(AssemblyBlock(surface, b.source_id, b.concept_id, text, _cost(len(text)), cut))
        room -= out[-1].tokens
        if cut:
            break  # a surface stops at the first block that does not fit
    return out


class ContextAssembler:
    """Assembles knowledge (``resolver``) and memory (``store``) for one query.

    ``ValueError`` (:class:`okfast.InvalidArgumentError`) when a share is
    negative, not finite or not a number, the shares sum to more than 1, or
    ``token_budget`` is not an ``int`` >= 0 (``bool`` is rejected).
    """

    def __init__(
        self,
        resolver: Searcher,
        store: MemoryReader,
        *,
        token_budget: int = 2000,
        knowledge_share: float = 0.6,
        memory_share: float = 0.4,
    ) -> None:
        budget = whole_of(token_budget)
        if budget is None or budget < 0:
            raise InvalidArgumentError(f"token_budget must be an int >= 0, got {token_budget!r}")
        token_budget = budget
        ks = _share("knowledge_share", knowledge_share)
        ms = _share("memory_share", memory_share)
        if ks + ms > 1:
            raise InvalidArgumentError(
                f"knowledge_share + memory_share must be <= 1, got {knowledge_share!r} + {memory_share!r}"
            )
        self.resolver = resolver
        self.store = store
        self._budget = token_budget
        self._shares = (knowledge_share, memory_share)
        self._floors = (math.floor(ks * token_budget), math.floor(ms * token_budget))

    # Read-only: the floors are computed from them once, checked together.
    @property
    def token_budget(self) -> int:
        return self._budget

    @property
    def knowledge_share(self) -> float:
        return self._shares[0]

    @property
    def memory_share(self) -> float:
        return self._shares[1]

    def assemble(self, scope: Scope | None, text: str) -> Assembly:
        """``scope`` ``None`` is the local scope, as in a :class:`Query`, for
        the knowledge and the memory alike."""
        if scope is None:
            scope = Scope.local()
        query = Query(text, scope=scope)  # a blank text raises here: a programmer error
        budget = self.token_budget
        k_diags: list[Diagnostic] = []
        m_diags: list[Diagnostic] = []
        k_found: Iterable[Passage] = ()
        m_found: Iterable[Passage] = ()
        try:
            ctx = self.resolver.search(query)
            k_found = ctx.passages
            k_diags.extend(ctx.diagnostics)
        except Exception as e:
            k_diags.append(_failed(DiagnosticCode.SOURCE_UNAVAILABLE, "Knowledge unavailable", e))
        try:
            # Memory is scored as the knowledge is (the resolver's scorer).
            r = self.resolver
            mem = self.store.read(scope, text, scorer=r.default_scorer, bm25f=r.default_bm25f)
            m_found = mem.passages
            m_diags.extend(mem.diagnostics)
        except Exception as e:
            m_diags.append(_failed(DiagnosticCode.SOURCE_UNAVAILABLE, "Memory unavailable", e))

        k_blocks, k_need = _demand(_render("knowledge", k_found, k_diags), budget)
        m_blocks, m_need = _demand(_render("memory", m_found, m_diags), budget)
        k_floor, m_floor = self._floors
        k_alloc, m_alloc = min(k_need, k_floor), min(m_need, m_floor)
        leftover = budget - k_alloc - m_alloc
        extra = min(leftover, k_need - k_alloc)  # knowledge takes the leftover first
        k_alloc, leftover = k_alloc + extra, leftover - extra
        m_alloc += min(leftover, m_need - m_alloc)

        blocks = _fill("knowledge", k_blocks, k_alloc) + _fill("memory", m_blocks, m_alloc)
        out = "\n".join(b.text for b in blocks)
        # Counted, not a set: a hand-written resolver may list one passage
        # twice, and each copy without a block is omitted (docs/spec.md §6.5).
        shown = Counter((b.surface, b.source_id, b.concept_id) for b in blocks)
        omitted: list[tuple[Surface, str, str]] = []
        surfaces: tuple[tuple[Surface, Iterable[Passage]], ...] = (
            ("knowledge", k_found),
            ("memory", m_found),
        )
        for surface, found in surfaces:
            for source_id, concept_id in _ids(found):
                key = (surface, source_id, concept_id)
                if shown[key]:
                    shown[key] -= 1
                else:
                    omitted.append(key)
        return Assembly(
            out,
            tuple(blocks),
            math.ceil(len(out) / 4),
            tuple(k_diags) + tuple(m_diags),
            tuple(omitted),
        )


def _ids(found: Iterable[Passage]) -> list[tuple[str, str]]:
    """``(source_id, concept_id)`` of each passage found, in order, without
    building or reading a passage where the list can say (a resolver's, or
    anything whose ``keys()`` gives them, as ``PassageList.keys`` does);
    nothing more from a list that fails part-way (already diagnosed), and
    nothing from a one-shot iterator, whose rest would be built to be named
    (docs/spec.md §6.5: only the passages needed are built)."""
    if callable(getattr(found, "keys", None)):
        return [(k[0], k[1]) for k in found.keys()]  # type: ignore[attr-defined]
    out: list[tuple[str, str]] = []
    if not isinstance(found, Sequence):
        return out
    with contextlib.suppress(Exception):
        out.extend((p.source_id, p.concept_id) for p in found)
    return out


__all__ = ["Assembly", "AssemblyBlock", "ContextAssembler", "MemoryReader", "Searcher", "TRUNCATED"]
