"""The ``okfast`` command line: ``search`` and ``validate`` (SPEC §1.6, §3).

Exit codes: 0 success; 1 ``validate`` found an error (or a missing type);
2 bad usage or an unreadable bundle root.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from okfast.bundle import Bundle
from okfast.errors import OkfastError
from okfast.model import Diagnostic


def _diag_json(d: Diagnostic) -> dict[str, Any]:
    return {"code": d.code, "severity": d.severity, "path": d.path, "message": d.message}


def _print_json(obj: object) -> None:
    # ensure_ascii=False keeps non-ASCII ids readable; sort_keys for stable output.
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, sort_keys=True, indent=2) + "\n")


def _fails_validation(d: Diagnostic) -> bool:
    return d.severity == "error" or d.code == "MissingType"


def _cmd_search(args: argparse.Namespace) -> int:
    bundle = Bundle.load(args.path)
    hits = bundle.search(args.query, tag=args.tag, limit=args.limit)
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
        print(f"{h.score:>4}  {h.concept_id}{title}")
        if h.excerpt:
            print(f"      {h.excerpt}")
    if bundle.diagnostics:
        n_err = sum(d.severity == "error" for d in bundle.diagnostics)
        print(
            f"({len(bundle.diagnostics)} diagnostics, {n_err} files skipped: "
            f"run `okfast validate {args.path}`)",
            file=sys.stderr,
        )
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    bundle = Bundle.load(args.path)
    diags = bundle.diagnostics
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
            print(f"{d.severity:<7} {d.code:<20} {d.path}: {d.message}")
        verdict = "invalid" if failed else "valid"
        print(f"{len(bundle)} concepts, {len(diags)} diagnostics: {verdict}")
    return 1 if failed else 0


def _non_negative(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {n}")
    return n


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="okfast", description="Search and check OKF bundles.")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("search", help="rank a bundle's concepts for a query")
    s.add_argument("path", help="bundle directory")
    s.add_argument("query", help="query text (terms split on white space)")
    s.add_argument("--limit", type=_non_negative, default=None, help="show the first N hits")
    s.add_argument("--tag", default=None, help="only concepts carrying this tag")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(run=_cmd_search)

    v = sub.add_parser("validate", help="list a bundle's diagnostics; exit 1 on errors")
    v.add_argument("path", help="bundle directory")
    v.add_argument("--json", action="store_true", help="machine-readable output")
    v.set_defaults(run=_cmd_validate)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except OkfastError as e:
        print(f"okfast: {e}", file=sys.stderr)
        return 2
    return code
