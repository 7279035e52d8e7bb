"""Tests of ``okfast eval`` need the ``okfast[eval]`` extra (ir-measures, scipy).

Without it they skip, except in CI (the ``CI`` environment variable set),
where they run and fail: a CI that forgot to install the extra is noticed.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

INSTALLED = all(importlib.util.find_spec(m) is not None for m in ("ir_measures", "scipy"))

requires_eval_extra = pytest.mark.skipif(
    not INSTALLED and not os.environ.get("CI"),
    reason="the okfast[eval] extra (ir-measures, scipy) is not installed: pip install -e '.[eval]'",
)
