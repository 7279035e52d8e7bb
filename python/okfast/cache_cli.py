"""``okfast cache prune``: the cache files of bundle roots that are gone, or
unused for days, removed from the cache directory (docs/spec.md §9.9, §10.5).

Exit codes (docs/spec.md §10.4): 0 done; 1 a file could not be read or
removed (the others were); 2 bad usage or a cache directory that cannot be
listed (one line ``okfast: …``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from okfast.cache_prune import CachePrune, prune_cache
from okfast.paths import option_file
from okfast.terminal import name_text, one_line, print_err

PrintJson = Callable[[object], None]
Number = Callable[[str], float]


def _run(args: argparse.Namespace, out: PrintJson) -> int:
    done = prune_cache(args.cache_dir, unused_days=args.unused_days, dry_run=args.dry_run)
    if args.json:
        out(_record(done))
    else:
        verb = "would remove" if done.dry_run else "removed"
        for f in done.removed:
            why = f"root gone: {f.root}" if f.reason == "root gone" else "unused"
            print(one_line(name_text(f"{verb} {f.path} ({why})")))
        files = "file" if len(done.removed) == 1 else "files"
        summary = f"{verb} {len(done.removed)} cache {files} ({done.freed:,} bytes) "
        print(one_line(name_text(f"{summary}from {done.cache_dir}; kept {done.kept}")))
    for line in done.errors:
        print_err(one_line(f"okfast: {line}"))
    return 1 if done.errors else 0


def _record(done: CachePrune) -> dict[str, Any]:
    return {
        "cache_dir": str(done.cache_dir),
        "dry_run": done.dry_run,
        "removed": [
            {"path": str(f.path), "reason": f.reason, "root": f.root, "bytes": f.size}
            for f in done.removed
        ],
        "freed_bytes": done.freed,
        "kept": done.kept,
        "errors": list(done.errors),
    }


def register(sub: Any, out: PrintJson, number: Number) -> None:
    """Add ``cache prune`` to the top-level parser (``number``: the argparse
    type of a finite number >= 0, shared with the other commands)."""
    c = sub.add_parser("cache", help="manage the persistent cache directory")
    verbs = c.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser(
        "prune", help="remove the cache files of bundles that are gone, or unused for days"
    )
    p.add_argument(
        "--cache-dir",
        type=option_file,
        default=None,
        metavar="DIR",
        help="default: $OKFAST_CACHE_DIR, else $XDG_CACHE_HOME/okfast, else ~/.cache/okfast",
    )
    p.add_argument(
        "--unused-days",
        type=number,
        default=None,
        metavar="N",
        help="also remove files no load used for N days",
    )
    p.add_argument("--dry-run", action="store_true", help="list what would go; remove nothing")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(run=lambda args: _run(args, out))
