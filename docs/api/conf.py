"""Sphinx configuration of privrl's API reference (``make api-docs``): every public name, from its
docstring (autodoc). The pages are built, not committed; the build fails on any warning."""

import privrl

project = "privrl"
release = privrl.__version__
version = release
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
html_theme = "alabaster"
html_title = f"privrl {release} — API reference"
exclude_patterns = ["_build"]
nitpicky = False
# docstrings write the first-visit count of state s as |X_s| (Balle et al. 2016): text, not a substitution
rst_prolog = ".. |X_s| unicode:: U+007C U+0058 U+005F U+0073 U+007C\n"
