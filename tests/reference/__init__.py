"""Pure-Python reference oracle for okfast (slow, obviously correct).

This package is the independent oracle that property tests compare the Rust
core against. It follows, line by line:

* docs/spec.md -- the text terms (white space, trim, fold, contains_ci,
  ordinal order), §1 (bundles and concepts), §2.1-§2.2 (trust tier,
  stale_after) and §3 (the scorer);
* docs/frontmatter-yaml.md -- the exact YAML subset, its error messages and
  the diagnostic messages and order.

One module per concern, each importing only those before it:
``text`` → ``yaml_scalars`` → ``yaml_flow`` → ``yaml_block`` → ``stale`` →
``concept`` (one file) → ``bundle`` (the walk) → ``scorer``.

Only the standard library is used; clarity wins over speed everywhere.
Places where the documents leave a choice open are marked ``AMBIGUITY:`` with
the decision taken. Tests use the names below as ``reference.NAME``.
"""

from reference.bundle import load_bundle
from reference.concept import RefBundle, RefConcept, RefDiagnostic, read_concept, split_lines
from reference.scorer import excerpt, field_texts, score, search
from reference.stale import parse_stale_after
from reference.text import WHITE_SPACE, contains_ci, fold, id_key, is_ws, split_ws, trim
from reference.yaml_block import parse_yaml
from reference.yaml_scalars import YamlError

__all__ = [
    "WHITE_SPACE",
    "is_ws",
    "trim",
    "split_ws",
    "fold",
    "contains_ci",
    "id_key",
    "YamlError",
    "parse_yaml",
    "parse_stale_after",
    "split_lines",
    "RefDiagnostic",
    "RefConcept",
    "RefBundle",
    "read_concept",
    "load_bundle",
    "field_texts",
    "score",
    "excerpt",
    "search",
]
