"""A release a user can cite and upgrade: the version is defined once (``privrl.__version__``, read
by the package metadata), the CHANGELOG's newest entry is that version, and the metadata names
authors, a licence and classifiers."""

from __future__ import annotations

import importlib.metadata
import re
import sys
from pathlib import Path

import privrl

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_the_changelog_starts_with_this_version():
    headings = re.findall(r"^## (\d+\.\d+\.\d+)\b", (ROOT / "CHANGELOG.md").read_text(), flags=re.MULTILINE)
    assert headings, "CHANGELOG.md has no '## X.Y.Z' entry"
    assert headings[0] == privrl.__version__
    assert privrl.__version__ != "0.1.0", "the version was not bumped after the first release"
    assert len(set(headings)) == len(headings)


def test_the_version_is_defined_once():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in config["project"] and "version" in config["project"]["dynamic"]
    assert config["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "privrl.__version__"}


def test_the_installed_metadata_is_complete():
    meta = importlib.metadata.metadata("privrl")
    assert meta["Version"] == privrl.__version__
    assert meta["Author"] or meta["Author-email"]
    assert meta.get_all("License-Expression") or meta.get_all("License")
    classifiers = meta.get_all("Classifier") or []
    assert any(c.startswith("Programming Language :: Python :: 3") for c in classifiers)
    assert "Typing :: Typed" in classifiers
