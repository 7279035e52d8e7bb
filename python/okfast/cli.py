"""The ``okfast`` command line: ``search``, ``resolve``, ``validate``, ``memory``, ``eval``,
``tune``, ``mcp`` and ``cache``.

Exit codes (docs/spec.md §10.4): 0 success; 1 ``validate`` found an error
(or a missing type); 2 bad usage, a bad catalog, or any other
:class:`~okfast.errors.OkfastError` (an unreadable bundle root, a blank query,
an argument out of its domain), shown as one line ``okfast: <message>`` on
stderr, never as a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import sys
import time
from collections.abc import Sequence
from typing import Any

from okfast import cache_cli, eval_cli, governance, tune_cli
from okfast.bundle import Bundle
from okfast.catalog import AUTHORITIES, Catalog, CatalogError
from okfast.errors import InvalidArgumentError, OkfastError
from okfast.integrations import mcp_cli
from okfast.integrations.records import ExplanationRecord, explanation_record
from okfast.memory import cli as memory_cli
from okfast.model import Diagnostic, Explanation, Passage
from okfast.numerals import ascii_float, ascii_int
from okfast.paths import catalog_options, option_file
from okfast.query import Query, StalePolicy, Strategy
from okfast.resolver import Resolver
from okfast.scoring import DEFAULT_BM25F, MAX_COUNT, Scorer
from okfast.settings import load_settings, print_diagnostics
from okfast.terminal import (
    BIDI_CONTROLS,
    SURROGATE,
    escape,
    one_line,
    print_err,
    quiet_stderr,
    safe_stdout,
    safe_warnings,
    score_text,
    u_escaped,
)


def _diag_json(d: Diagnostic) -> dict[str, Any]:
    return {"code": d.code, "severity": d.severity, "path": d.path, "message": d.message}


def _print_json(obj: object) -> None:
    # ensure_ascii=False keeps non-ASCII ids readable; sort_keys for stable
    # output. A lone surrogate (a file name's byte that is not UTF-8, as
    # os.fsdecode spells it) is written as its \\u escape: the output stays
    # UTF-8 and a JSON reader gets the same string back (docs/spec.md §10.1).
    # Encoded as it is written (docs/spec.md §10.1): json.dumps would hold
    # every piece and then the joined text, many times the output's size for
    # a large result (a resolve with thousands of diagnostics).
    encoder = json.JSONEncoder(ensure_ascii=False, sort_keys=True, indent=2)
    pending: list[str] = []
    size = 0
    for chunk in itertools.chain(encoder.iterencode(obj), ("\n",)):
        pending.append(chunk)
        size += len(chunk)
        if size >= _PIECE:
            text = "".join(pending)
            cut = len(text) - len(text) % _PIECE
            _write_pieces(text[:cut])
            pending, size = [text[cut:]], len(text) - cut
    _write_pieces("".join(pending))


def _write_pieces(text: str) -> None:
    # The escapes are of single characters, so a text cut anywhere escapes
    # alike. In pieces the output's buffer holds: one write past it goes
    # straight to the pipe, and when the reader leaves mid-write (`| head`)
    # the short count it returns is ignored by the text layer, so the rest
    # would be dropped with status 0 instead of 1 (docs/spec.md §10.4).
    text = u_escaped(_JSON_RAW, text)
    for at in range(0, len(text), _PIECE):
        sys.stdout.write(text[at : at + _PIECE])


#: What json.dumps(ensure_ascii=False) leaves raw that must not be: a lone
#: surrogate (not UTF-8), and the controls a terminal acts on that JSON does
#: not escape (DEL, C1, the bidirectional controls). As \u escapes the output
#: is valid JSON on a terminal too, where they would otherwise be escaped as
#: \x7f, which no JSON reader takes (docs/spec.md §10.1).
_JSON_RAW = re.compile(f"[{SURROGATE}\x7f-\x9f" + "".join(map(chr, BIDI_CONTROLS)) + "]")

#: Characters of output written at a time (at most 4 UTF-8 bytes each: 8 KiB,
#: io.DEFAULT_BUFFER_SIZE).
_PIECE = 2048


def _fails_validation(d: Diagnostic) -> bool:
    return d.severity == "error" or d.code == "MissingType"


class _ProgressBar:
    """A one-line progress bar on stderr for loads that take over a second;
    silent when stderr is not a terminal."""

    #: The bar on screen, if one is: a load stopped by an error or Ctrl-C
    #: never reaches "done", so main() erases it before its message.
    showing: _ProgressBar | None = None

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.shown = False

    @classmethod
    def erase(cls) -> None:
        """Erase the bar on screen, if one is."""
        bar, cls.showing = cls.showing, None
        if bar is not None:
            bar.shown = False
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write("\r\033[K")
                sys.stderr.flush()

    @classmethod
    def maybe(cls) -> _ProgressBar | None:
        return cls() if sys.stderr.isatty() else None

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase == "done":
            if self.shown:
                _ProgressBar.erase()
            return
        if time.monotonic() - self.start < 1.0:
            return
        if total:
            filled = 30 * done // total
            bar = f"[{'#' * filled}{'.' * (30 - filled)}] {done:,}/{total:,} files"
        else:
            bar = "…"
        sys.stderr.write(f"\rokfast: {phase:<5} {bar}\033[K")
        sys.stderr.flush()
        self.shown = True
        _ProgressBar.showing = self


def _bundle_path(path: str) -> str:
    # Bundle.load("") would load the working directory (the path is made
    # absolute, docs/spec.md §1.1): on the command line an empty path is a slip.
    if not path:
        raise InvalidArgumentError("the bundle path is empty")
    return path


def _non_blank_query(text: str) -> None:
    # A blank query has no results (docs/spec.md §3.1): on the command line it
    # is a slip, refused as it is by `resolve` (§5.1).
    if not text.strip():
        raise InvalidArgumentError("the query text is blank")


def print_settings_diagnostics(resolver: Resolver, given: str | None) -> None:
    """The problems of the settings a resolver applies, on stderr, under the
    file's name as given (``--settings FILE``), as every command names it
    (docs/spec.md §13.4), else the file the catalog names."""
    where = given if given is not None else resolver.catalog.settings_path
    print_diagnostics(where, resolver.settings_diagnostics)


def _cmd_search(args: argparse.Namespace) -> int:
    _non_blank_query(args.query)
    st = load_settings(args.settings).with_choices(scorer=args.scorer)
    params = st.bm25f or DEFAULT_BM25F
    bundle = Bundle.load(
        _bundle_path(args.path), progress=_ProgressBar.maybe(), language=params.language
    )
    hits = bundle.search(
        args.query,
        tag=args.tag,
        limit=args.limit,
        scorer=st.scorer or Scorer.WEIGHTED_COUNT,
        bm25f=params,
        rrf_k=st.rrf_k or 60,
    )
    if args.json:
        _print_json(
            {
                "bundle": str(bundle.root),
                "query": args.query,
                "hits": [
                    {
                        "concept_id": h.concept_id,
                        "score": h.score,
                        "title": h.title,
                        "excerpt": h.excerpt,
                        "path": h.path,
                    }
                    for h in hits
                ],
                "diagnostics": [_diag_json(d) for d in bundle.diagnostics],
            }
        )
        return 0
    if not hits:
        print(f"No concept matched {args.query!r}.")
    for h in hits:
        title = f"  {h.title}" if h.title else ""
        print(f"{score_text(h.score):>4}  {h.concept_id}{title}")
        if h.excerpt:
            print(f"      {h.excerpt}")
    if bundle.diagnostics:
        n_err = sum(d.severity == "error" for d in bundle.diagnostics)
        print_err(
            f"({len(bundle.diagnostics)} diagnostics, {n_err} files skipped: "
            f"run `okfast validate {args.path}`)"
        )
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    bundle = Bundle.load(_bundle_path(args.path), progress=_ProgressBar.maybe())
    diags = bundle.diagnostics + tuple(governance.validate(bundle))
    failed = any(_fails_validation(d) for d in diags)
    if args.json:
        _print_json(
            {
                "bundle": str(bundle.root),
                "concepts": len(bundle),
                "okf_version": bundle.okf_version,
                "valid": not failed,
                "diagnostics": [_diag_json(d) for d in diags],
            }
        )
    else:
        for d in diags:
            # One line each, whatever the path or message holds (§10.1).
            print(one_line(f"{d.severity:<7} {d.code:<20} {d.path}: {d.message}"))
        verdict = "invalid" if failed else "valid"
        print(f"{len(bundle)} concepts, {len(diags)} diagnostics: {verdict}")
    return 1 if failed else 0


def _load_catalog(args: argparse.Namespace) -> Catalog | None:
    """The catalog ``--catalog`` names, its sources within ``--catalog-root``
    when given (§4.2), or ``None`` after listing every problem on stderr."""
    path = args.catalog
    try:
        return Catalog.load(path, root=args.catalog_root)
    except CatalogError as e:
        # One line per problem, whatever a path in it holds (§10.1, §10.4).
        print_err(one_line(f"okfast: bad catalog {path}:"))
        for problem in e.diagnostics:
            print_err(one_line(f"  {problem}"))
        return None


def _cmd_resolve(args: argparse.Namespace) -> int:
    catalog = _load_catalog(args)
    if catalog is None:
        return 2
    query = Query(
        args.query,
        strategy=args.strategy,
        fairness_quota=args.fairness_quota,
        stale_policy=args.stale,
        limit=args.limit,
        min_score=args.min_score,
        min_authority=args.min_authority,
        include_historical=args.include_historical,
        pin_exact_title=args.pin_exact_title,
        explain=args.explain,
        scorer=args.scorer,
    )
    resolver = Resolver(catalog, settings=args.settings, progress=_ProgressBar.maybe())
    print_settings_diagnostics(resolver, args.settings)
    ctx = resolver.search(query)
    if args.json:
        _print_json(
            {
                "query": args.query,
                "strategy": str(query.strategy or resolver.default_strategy),
                "passages": [
                    {
                        "source_id": p.source_id,
                        "concept_id": p.concept_id,
                        "score": p.score,
                        "fused_score": p.fused_score,
                        "title": p.title,
                        "excerpt": p.excerpt,
                        "path": p.path,
                        "is_stale": p.is_stale,
                        "authority": p.authority,
                    }
                    | ({"explanation": _explanation_json(p)} if args.explain else {})
                    for p in ctx.passages
                ],
                "diagnostics": [d.to_json() for d in ctx.diagnostics],
                "warnings": [d.to_json() for d in ctx.diagnostics if d.severity == "warning"],
                "exclusions": [
                    {
                        "source_id": e.source_id,
                        "concept_id": e.concept_id,
                        "reason": e.reason,
                        "detail": e.detail,
                    }
                    for e in ctx.exclusions
                ],
                "digest": ctx.digest,
            }
        )
        return 0
    for p in ctx.passages:
        title = f"  {p.title}" if p.title else ""
        print(f"{score_text(p.score):>4}  {p.source_id}:{p.concept_id}{title}")
        if p.excerpt:
            print(f"      {p.excerpt}")
        if p.explanation is not None:
            print(f"      {_explanation_text(p.explanation)}")
    errors = [d for d in ctx.diagnostics if d.severity == "error"]
    warnings = [d for d in ctx.diagnostics if d.severity != "error"]
    if args.explain:
        print("Excluded:" if ctx.exclusions else "Excluded: none")
        for e in ctx.exclusions:
            # The detail as it is: an id it names may end in white space
            # (docs/spec.md §1.2), which stripping the line cut off.
            detail = f"  {e.detail}" if e.detail else ""
            print(f"  {e.source_id}:{e.concept_id or '*'}  {e.reason}{detail}")
        _print_diags("Warnings:", warnings)
        _print_diags("Errors:", errors)
        print(f"Digest: {ctx.digest}")
    elif ctx.diagnostics:
        _print_diags("Diagnostics:", list(ctx.diagnostics))
    return 0


def _print_diags(heading: str, diags: list[Diagnostic]) -> None:
    if diags:
        print(heading)
    for d in diags:
        where = ":".join(x for x in (d.source_id, d.path) if x)
        # Only the parts that are set, one space apart (docs/spec.md §10.2),
        # on one line whatever they hold (§10.1).
        parts = (f"{d.severity:<7}", f"{d.code:<20}", where, d.message)
        print(one_line("  " + " ".join(x for x in parts if x)))


def _explanation_json(p: Passage) -> ExplanationRecord | None:
    x = p.explanation
    # The same record the MCP server returns (docs/spec.md §10.2, §11).
    return None if x is None else explanation_record(x)


def _explanation_text(x: Explanation) -> str:
    terms = ", ".join(f"{m.term}→{'+'.join(m.fields)} ({m.weight})" for m in x.matches)
    if x.bm25f:
        terms = ", ".join(
            f"{t.token} (idf {t.idf:.3f}, "
            + "+".join(f"{f.field} {f.tf}" for f in t.fields if f.tf)
            + f" → {t.score:.4f})"
            for t in x.bm25f
        )
    # A float value (a BM25F or fused score) to four decimals, as every
    # score in text output (docs/spec.md §10.1); the JSON keeps the float.
    key = ", ".join(
        f"{name}={score_text(value) if isinstance(value, float) else value}"
        for name, value in x.sort_key
    )
    pin = "pinned; " if x.pinned else ""
    return f"[{pin}#{x.rank} by {x.strategy}: {key}; terms: {terms}]"


def _stale(text: str) -> StalePolicy:
    try:
        return StalePolicy.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _positive(text: str) -> int:
    """An argparse type: a whole number from 1 to 2**63 - 1."""
    return _whole(text, 1)


def _count(text: str) -> int:
    """An argparse type: a count, a whole number from 1 to 2**32 - 1 (a
    fairness quota, docs/spec.md §5.1), refused here with the bound the
    search itself enforces."""
    return _whole(text, 1, MAX_COUNT)


# The largest whole number an option takes: the native core reads counts as
# 64-bit integers, so a larger one would fail to convert instead of being
# refused here as bad usage.
_MAX_WHOLE = 2**63 - 1


def _non_negative_number(text: str) -> float:
    """An argparse type: a finite number >= 0 (a BM25F score threshold);
    a whole number stays one."""
    try:
        n: float = ascii_int(text)
    except ValueError:
        try:
            n = ascii_float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= n < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0: {text}")
    return n


def _non_negative(text: str) -> int:
    """An argparse type: a whole number from 0 to 2**63 - 1."""
    return _whole(text, 0)


def _whole(text: str, least: int, most: int = _MAX_WHOLE) -> int:
    """A whole number from ``least`` to ``most``; the message names the
    bound the option has (docs/spec.md §10.1)."""
    try:
        n = ascii_int(text)
    except ValueError:
        digits = text.strip().removeprefix("-").removeprefix("+")
        if digits.isascii() and digits.isdigit():
            # A whole number past Python's conversion limit, not a typo.
            raise argparse.ArgumentTypeError(
                f"must be a whole number from {least} to {most}, got one of {len(digits)} digits"
            ) from None
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < least:
        raise argparse.ArgumentTypeError(f"must be >= {least}: {n}")
    if n > most:
        raise argparse.ArgumentTypeError(f"must be <= {most}: {n}")
    return n


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its messages escaped on a terminal's stderr: they
    quote what was typed (docs/spec.md §10.1)."""

    def _print_message(self, message: str, file: Any = None) -> None:
        if message:
            out = file if file is not None else sys.stderr
            tty = out is sys.stderr and sys.stderr.isatty()
            out.write(escape(message) if tty else message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="okfast", description="Search and check OKF bundles.")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("search", help="rank a bundle's concepts for a query")
    s.add_argument("path", help="bundle directory")
    s.add_argument("query", help="query text (terms split on white space)")
    s.add_argument("--limit", type=_non_negative, default=None, help="show the first N hits")
    s.add_argument("--tag", default=None, help="only concepts carrying this tag")
    s.add_argument(
        "--scorer",
        choices=[x.value for x in Scorer],
        default=None,
        help="default: the settings', else weighted_count",
    )
    s.add_argument(
        "--settings", type=option_file, default=None, metavar="FILE", help="a settings file (§13)"
    )
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(run=_cmd_search)

    r = sub.add_parser("resolve", help="search every source of a catalog into one ordered list")
    catalog_options(r)
    r.add_argument("query", help="query text")
    r.add_argument("--strategy", choices=[s.value for s in Strategy], default=None)
    r.add_argument(
        "--fairness-quota",
        type=_count,
        default=None,
        metavar="K",
        help=f"at most K passages in a row from one source (1 to {MAX_COUNT})",
    )
    r.add_argument(
        "--stale", type=_stale, default=StalePolicy.use(), metavar="use|strict|tolerate:DAYS"
    )
    r.add_argument("--limit", type=_non_negative, default=None, help="keep the first N passages")
    r.add_argument("--min-score", type=_non_negative_number, default=None, help="drop lower scores")
    r.add_argument("--scorer", choices=[x.value for x in Scorer], default=None)
    r.add_argument(
        "--settings",
        type=option_file,
        default=None,
        metavar="FILE",
        help="default: the file the catalog names",
    )
    r.add_argument("--min-authority", choices=AUTHORITIES, default=None)
    r.add_argument("--include-historical", action="store_true", help="keep superseded concepts")
    r.add_argument(
        "--pin-exact-title", action="store_true", help="a concept titled exactly QUERY goes first"
    )
    r.add_argument(
        "--explain",
        action="store_true",
        help="why each passage is where it is; what was excluded and why; the digest",
    )
    r.add_argument("--json", action="store_true", help="machine-readable output")
    r.set_defaults(run=_cmd_resolve)

    v = sub.add_parser("validate", help="list a bundle's diagnostics; exit 1 on errors")
    v.add_argument("path", help="bundle directory")
    v.add_argument("--json", action="store_true", help="machine-readable output")
    v.set_defaults(run=_cmd_validate)

    memory_cli.register(sub, _load_catalog, _print_json, _non_negative)
    eval_cli.register(sub, _load_catalog, _print_json, _positive, _count)
    tune_cli.register(sub, _load_catalog, _print_json, _whole)
    mcp_cli.register(sub, _load_catalog)
    cache_cli.register(sub, _print_json, _non_negative_number)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    if sys.stderr is None:
        # Started with stderr closed (`2>&-`): messages and progress go
        # nowhere, the output still to stdout (docs/spec.md §10.4).
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    # A stderr that cannot be written (its reader gone, `2>&1 | head -0`) is
    # as a closed one: a message lost there is not the command failing, so
    # the status stays the command's own (§10.4).
    with quiet_stderr():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    if sys.stdout is None:
        print("okfast: standard output is closed", file=sys.stderr)
        return 1
    try:
        # Inside: --help written to a full disk or a closed pipe is handled
        # below, as any output is (§10.4).
        args = build_parser().parse_args(argv)
        try:
            with safe_stdout(), safe_warnings():
                code: int = args.run(args)
                # Flushed here, so a failed write is handled below, not at exit.
                sys.stdout.flush()
        except BaseException:
            # A load stopped by an error or Ctrl-C never reports "done"
            # (§1.8): its bar goes before the message below.
            _ProgressBar.erase()
            raise
    except OkfastError as e:
        # Bad input is one line and status 2, never a traceback (docs/spec.md
        # §10.4); a message that spans lines is joined onto one. Only at its
        # newlines: a file name it quotes may hold U+0085 or U+2028, which
        # `str.splitlines` would also take for line ends and drop.
        line = "okfast: " + "; ".join(str(e).replace("\r\n", "\n").split("\n"))
        print_err(line)
        return 2
    except BrokenPipeError:
        # The reader went away (`okfast resolve ... | head`): stop quietly
        # with status 1, as Python's documentation advises, instead of a
        # traceback and an "Exception ignored" line when stdout is flushed
        # at exit (the rest of the output goes nowhere).
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 1
    except UnicodeEncodeError as e:
        # Text the output's encoding cannot hold (PYTHONIOENCODING=ascii, a
        # C locale): one line and status 1, never a traceback (§10.4).
        bad = e.object[e.start : e.end]
        hint = "; set PYTHONIOENCODING=utf-8" if e.encoding != "utf-8" else ""
        print(f"okfast: cannot encode {bad!r} as {e.encoding}{hint}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        # Ctrl-C where no command catches it (a load, a search): one line and
        # the shell's status for SIGINT, not a traceback (§10.4).
        print("okfast: interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        # An output that cannot be written (a full disk, /dev/full) or another
        # I/O failure: one line and status 1, never a traceback (§10.4); the
        # unwritten rest is dropped so the exit's flush does not fail again.
        print(f"okfast: {e.strerror or e}", file=sys.stderr)
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 1
    return code
