"""``okfast memory list|read|write|delete``: an operator's shell access to the
memory store, e.g. to answer a data-subject access (``list --bodies --json``)
or erasure (``delete --cascade``) request.

Exit codes (docs/spec.md §10.4): 0 done; 1 the store reported an error (a
write or delete that did not happen, a tier that could not be read); 2 bad
usage, a bad catalog, or an argument okfast refuses (an
:class:`~okfast.errors.OkfastError`, shown by ``okfast.cli.main`` as one line).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from okfast.errors import InvalidArgumentError
from okfast.memory.capture import capture
from okfast.memory.entry import MemoryEntry, check_entry
from okfast.memory.scope import Scope, Tier
from okfast.memory.store import FileMemoryStore
from okfast.paths import LoadCatalog, catalog_options
from okfast.scoring import Scorer
from okfast.terminal import one_line, print_err, score_text

PrintJson = Callable[[object], None]
WholeNumber = Callable[[str], int]


def _open(args: argparse.Namespace, load: LoadCatalog) -> tuple[FileMemoryStore, Scope] | None:
    catalog = load(args)
    if catalog is None:
        return None
    scope = Scope(args.tenant, args.user, args.session)  # a bad id: InvalidArgumentError
    store = FileMemoryStore.from_catalog(catalog)
    if not store.roots:
        print_err(f"okfast: {args.catalog} has no enabled memory sources")
        return None
    return store, scope


def _report(diags: Any) -> int:
    for d in diags:
        # One line each, whatever the message quotes (docs/spec.md §10.1).
        where = f"{d.source_id}:{d.path}" if d.path else d.source_id
        print_err(one_line(f"{d.severity:<7} {d.code:<18} {where}: {d.message}"))
    return 1 if any(d.severity == "error" for d in diags) else 0


def _list(args: argparse.Namespace, store: FileMemoryStore, scope: Scope, out: PrintJson) -> int:
    listing = store.enumerate(scope, bodies=args.bodies)
    if args.json:
        rows = [
            {"tier": c.tier.value, "concept_id": c.concept_id, "title": c.title}
            | ({"body": c.body} if args.bodies else {})
            for c in listing
        ]
        out(
            {
                "scope": str(scope),
                "concepts": rows,
                "diagnostics": [d.to_json() for d in listing.diagnostics],
            }
        )
    else:
        for c in listing:
            print(f"{c.tier.value:<8} {c.concept_id}  {c.title or ''}".rstrip())
            if args.bodies:
                print("\n".join("    " + line for line in (c.body or "").split("\n")))
        if not listing:
            print(f"No memory for scope {scope}.")
    return _report(listing.diagnostics)


def _read(args: argparse.Namespace, store: FileMemoryStore, scope: Scope, out: PrintJson) -> int:
    if not args.query.strip():
        # As for `okfast search`: a blank query has no results (docs/spec.md §3.1).
        raise InvalidArgumentError("the query text is blank")
    result = store.read(scope, args.query, limit=args.limit, scorer=args.scorer)
    if args.json:
        rows = [
            {
                "source_id": p.source_id,
                "concept_id": p.concept_id,
                "score": p.score,
                "title": p.title,
                "excerpt": p.excerpt,
            }
            for p in result.passages
        ]
        out(
            {
                "scope": str(scope),
                "query": args.query,
                "passages": rows,
                "diagnostics": [d.to_json() for d in result.diagnostics],
            }
        )
    else:
        for p in result.passages:
            print(
                f"{score_text(p.score):>4}  {p.source_id}:{p.concept_id}  {p.title or ''}".rstrip()
            )
            if p.excerpt:
                print(f"      {p.excerpt}")
        if not result.passages:
            print(f"No memory of scope {scope} matched {args.query!r}.")
    return _report(result.diagnostics)


def _stdin_text() -> str | None:
    """Standard input as UTF-8 text, whatever the locale's encoding (a memory
    file is UTF-8, docs/spec.md §1.3), one leading byte-order mark dropped
    (§10.3); ``None``, with one line on stderr, when it is not UTF-8 (bad
    usage, §10.4), never a traceback."""
    raw = getattr(sys.stdin, "buffer", None)
    try:
        if raw is None:
            return str(sys.stdin.read()).removeprefix("\ufeff")
        # Line ends as text mode reads them (universal newlines). A BOM (a
        # Windows editor's, PowerShell's pipe) says the text is UTF-8; kept,
        # it would be an invisible U+FEFF at the section's start.
        data: bytes = raw.read()
        return data.decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as e:
        print(f"okfast: --section -: standard input is not UTF-8 text ({e})", file=sys.stderr)
        return None


def _write(args: argparse.Namespace, store: FileMemoryStore, scope: Scope, out: PrintJson) -> int:
    captured = args.user_text is not None or args.agent_text is not None
    given = [
        flag
        for flag, value in (
            ("--name", args.name),
            ("--title", args.title),
            ("--description", args.description),
            ("--section", args.section),
            ("--type", args.type),
        )
        if value is not None
    ]
    if captured and given:
        # A capture names its own concept: the other flags would be dropped
        # without a word, so the two ways of writing are not mixed.
        print(
            f"okfast: write takes --user-text/--agent-text (a capture) or {', '.join(given)} "
            "(one concept), not both",
            file=sys.stderr,
        )
        return 2
    if captured:
        r = capture(store, scope, args.user_text or "", args.agent_text or "", tier=args.tier)
    else:
        if not (args.name and args.title and args.description and args.section is not None):
            print(
                "okfast: write needs --user-text/--agent-text, or --name, --title, "
                "--description and --section",
                file=sys.stderr,
            )
            return 2
        if args.section == "-" and sys.stdin is None:
            print("okfast: --section -: standard input is closed", file=sys.stderr)
            return 2
        section = _stdin_text() if args.section == "-" else args.section
        if section is None:
            return 2
        fm = {
            "type": "Note" if args.type is None else args.type,
            "title": args.title,
            "description": args.description,
        }
        entry = MemoryEntry(args.name, fm, section)
        # What the operator typed is checked first, so a bad name, title or
        # section is bad usage (status 2); the store's own refusals stay 1.
        check_entry(entry)
        r = store.write(scope, entry, args.tier)
    if args.json:
        out({"written": r.written, "error": r.error, "concept_id": r.concept_id})
    elif r.written:
        print(f"written: {args.tier}:{r.concept_id}")
    else:
        print_err(f"okfast: not written: {r.error}")
    return 0 if r.written else 1


def _delete(args: argparse.Namespace, store: FileMemoryStore, scope: Scope, out: PrintJson) -> int:
    r = store.delete_scope(scope, args.tier, cascade=args.cascade)
    if args.json:
        out(
            {
                "scope": str(scope),
                "tiers_deleted": [t.value for t in r.tiers_deleted],
                "error": r.error,
            }
        )
    else:
        # "nothing (no memory found)" only when nothing was refused: after a
        # refusal, whether memory is there is not known.
        if r.tiers_deleted or not r.error:
            done = ", ".join(t.value for t in r.tiers_deleted) or "nothing (no memory found)"
            print(f"deleted for scope {scope}: {done}")
        if r.error:
            print_err(f"okfast: not deleted: {r.error}")
    return 1 if r.error else 0


def register(sub: Any, load: LoadCatalog, out: PrintJson, whole: WholeNumber) -> None:
    """Add ``memory`` and its four commands to the top-level parser (``whole``:
    the argparse type of a whole number >= 0, shared with the other commands)."""
    m = sub.add_parser("memory", help="list, read, write or delete one scope's memory")
    msub = m.add_subparsers(dest="memory_command", required=True)
    commands = {
        "list": (_list, "list the scope's memory concepts (--bodies: export them)"),
        "read": (_read, "search the scope's memory (session → user → tenant)"),
        "write": (_write, "append an exchange or a section to the scope's memory"),
        "delete": (_delete, "delete the memory the scope owns (--cascade: and below it)"),
    }
    for name, (fn, help_text) in commands.items():
        c = msub.add_parser(name, help=help_text)
        catalog_options(c, "catalog.json with role: memory sources")
        c.add_argument("--tenant", default=None)
        c.add_argument("--user", default=None)
        c.add_argument("--session", default=None)
        c.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "list":
            c.add_argument("--bodies", action="store_true", help="include each concept's body")
        elif name == "read":
            c.add_argument("query", help="query text")
            c.add_argument("--limit", type=whole, default=None, help="passages per tier")
            c.add_argument(
                "--scorer", choices=[x.value for x in Scorer], default=Scorer.WEIGHTED_COUNT.value
            )
        elif name == "write":
            c.add_argument("--tier", choices=[t.value for t in Tier], default="user")
            c.add_argument("--user-text", default=None, help="capture: what the user said")
            c.add_argument("--agent-text", default=None, help="capture: what the agent said")
            c.add_argument("--name", default=None, help="concept name (a safe segment)")
            c.add_argument(
                "--type", default=None, help="frontmatter type of a new concept (default: Note)"
            )
            c.add_argument("--title", default=None)
            c.add_argument("--description", default=None)
            c.add_argument("--section", default=None, help="markdown to append; - reads stdin")
        else:
            c.add_argument("--tier", choices=[t.value for t in Tier], default=None)
            c.add_argument("--cascade", action="store_true", help="also the scopes below")

        def run(args: argparse.Namespace, fn: Any = fn) -> int:
            opened = _open(args, load)
            if opened is None:
                return 2
            code: int = fn(args, *opened, out)
            return code

        c.set_defaults(run=run)
