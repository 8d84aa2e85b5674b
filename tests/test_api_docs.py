"""The API reference (``make api-docs``, Sphinx autodoc over ``docs/api/index.rst``) covers every
public package: a package with a non-empty ``__all__`` that the page does not name would be missing
from the reference without any build warning. The build itself (warnings are errors) runs in CI."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import privrl

INDEX = Path(__file__).resolve().parents[1] / "docs" / "api" / "index.rst"
#: packages whose names are the command line's internals, documented by ``privrl --help``
CLI_INTERNALS = {"privrl.commands", "privrl.fitters"}


def _documented() -> set[str]:
    return set(re.findall(r"^\.\. automodule:: ([\w.]+)$", INDEX.read_text(), flags=re.MULTILINE))


def test_every_public_package_is_in_the_api_reference():
    public = {f"privrl.{m.name}" for m in pkgutil.iter_modules(privrl.__path__) if m.ispkg
              and getattr(importlib.import_module(f"privrl.{m.name}"), "__all__", None)}
    assert len(public) > 10, "the scan found too few packages: it is broken"
    assert public - CLI_INTERNALS <= _documented()
    assert "privrl" in _documented()


def test_the_reference_names_only_modules_that_exist():
    for name in _documented():
        importlib.import_module(name)
