"""What a reader of the README, the documentation pages and ``help()`` sees: no unfilled
placeholder, no section that stops mid-sentence, no private module named in a public
docstring, no ``ForwardRef`` in a signature. Static: runs in the numpy session only."""

from __future__ import annotations

import importlib
import inspect
import pydoc
import re
from pathlib import Path

import pytest

import lsq_backends

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# The keys docs/hooks/generate.py fills at build time ("{{ readme }}", ...).
HOOK_KEYS = set(re.findall(r'"(\{\{ \w+ \}\})"', (ROOT / "docs" / "hooks" / "generate.py").read_text()))

pytestmark = pytest.mark.usefixtures("numpy_reference")


def _prose(text):
    """``text`` without its code blocks and inline code (where names in capitals belong)."""
    text = re.sub(r"```.*?```", "```", text, flags=re.S)
    return re.sub(r"`[^`\n]*`", "``", text)


def placeholders(text, *, hook_keys=frozenset()):
    """The unfilled placeholders of a Markdown page: a name in capitals with underscores in
    its prose (``README_FIGURES``), TODO/FIXME/TBD/XXX, and ``{{ ... }}`` other than the
    build hook's keys."""
    prose = _prose(text)
    found = re.findall(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b(?:TODO|FIXME|TBD|XXX)\b", prose)
    found += [m for m in re.findall(r"\{\{.*?\}\}", prose) if m not in hook_keys]
    return found


def unfinished_sections(text):
    """The last lines of prose paragraphs that end a section (the next line is a heading, or
    the page ends) without closing punctuation: text cut off mid-sentence."""
    blocks = re.split(r"\n\s*\n", re.sub(r"```.*?```", "```", text, flags=re.S).strip())
    out = []
    for block, after in zip(blocks, [*blocks[1:], "# (end of page)"], strict=True):
        block = block.strip()
        if not after.lstrip().startswith("#") or block.startswith(("#", "|", "```", "<", "!", "{{", ":::", "    ")):
            continue
        last = block.splitlines()[-1].rstrip()
        if not re.search(r"[.:!?)\]`*|]$", last):
            out.append(last)
    return out


def test_the_checks_catch_what_they_are_for():
    page = "# T\n\nFigures: README_FIGURES.\n\n{{ nist_lre }} {{ other }}\n\n## Limits\n\n- It stops, each\n\n## Next\n"
    assert placeholders(page, hook_keys={"{{ nist_lre }}"}) == ["README_FIGURES", "{{ other }}"]
    assert unfinished_sections(page) == ["- It stops, each"]
    assert placeholders("Set `XLA_FLAGS` first.\n\n```\nLSQ_BACKENDS=jax pytest\n```\n") == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_unfilled_placeholder(page):
    assert HOOK_KEYS >= {"{{ readme }}", "{{ capabilities }}"}
    keys = HOOK_KEYS if page.parent.name == "docs" else frozenset()
    assert placeholders(page.read_text(), hook_keys=keys) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_section_ends_mid_sentence(page):
    assert unfinished_sections(page.read_text()) == []


def _public():
    """Every public object a user reaches, with its public methods and properties."""
    modules = [
        importlib.import_module(f"lsq_backends.{m}") for m in ("diagnostics", "estimators", "capabilities", "check")
    ]
    objects = [lsq_backends, *modules, *(getattr(lsq_backends, n) for n in lsq_backends.__all__)]
    for obj in list(objects):
        if inspect.isclass(obj):
            objects += [
                v for k, v in vars(obj).items() if not k.startswith("_") and (callable(v) or isinstance(v, property))
            ]
    return objects


# A private module or function named in a docstring: ``_center.eliminate_intercept``,
# lsq_backends._problem, ``_inverse_factor``; NamedTuple's own ``_replace`` and friends are public.
PRIVATE = re.compile(r"lsq_backends\._\w+|(?<![\w.])_[a-z]\w*\.\w+|``_(?!replace|asdict|make|fields)[a-z]\w*``")


def test_public_docstrings_name_no_private_module():
    named = {}
    for obj in _public():
        found = PRIVATE.findall(inspect.getdoc(obj) or "")
        if found:
            named[getattr(obj, "__qualname__", getattr(obj, "__name__", repr(obj)))] = found
    assert named == {}


@pytest.mark.parametrize("name", lsq_backends.__all__)
def test_help_shows_no_forward_references(name):
    assert "ForwardRef" not in pydoc.render_doc(getattr(lsq_backends, name), renderer=pydoc.plaintext)
