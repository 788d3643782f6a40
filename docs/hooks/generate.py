"""MkDocs hook: pages generated from the repository at build time, so that they cannot drift.

- ``{{ readme }}`` (index.md): README.md, its links rewritten for the site;
- ``{{ changelog }}`` (changelog.md): CHANGELOG.md;
- ``{{ capabilities }}`` (backends.md): the table of ``lsq_backends.capabilities``;
- ``{{ nist_lre }}`` (accuracy.md): the NIST StRD digits table, measured now by
  ``benchmarks.accuracy`` (NumPy; a second or two);
- ``{{ nist_diagnostics }}`` (estimators.md): the digits of ``diagnostics`` on the same data,
  measured now by ``benchmarks.nist_diagnostics``.

The measured tables say which command made them and with which library versions.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The benchmarks package is not installed: imported from the checkout, now (MkDocs restores
# sys.path once this module is loaded).
sys.path.insert(0, str(ROOT))
from benchmarks import accuracy, nist_diagnostics  # noqa: E402


def _readme():
    text = (ROOT / "README.md").read_text()
    text = text.split("\n", 1)[1]  # the page has its own title
    text = text.replace("](docs/", "](").replace("](CHANGELOG.md)", "](changelog.md)")
    return re.sub(r"\(`nox -s docs`, then open\s+`site/index.html`\)", "", text)


def _changelog():
    return (ROOT / "CHANGELOG.md").read_text().split("\n", 1)[1]


def _capabilities():
    from lsq_backends.capabilities import markdown_table

    return markdown_table()


def _made_by(command, modules):
    versions = ", ".join(f"{m} {importlib.import_module(m).__version__}" for m in modules)
    return f"Measured when this site was built, by `{command}` ({versions}):\n\n"


def _nist_lre():
    results = accuracy.measure([accuracy.backend("numpy")])
    made = _made_by("python -m benchmarks.accuracy --backends numpy", ("lsq_backends", "numpy", "scipy", "sklearn"))
    return made + accuracy.summary_markdown(results)


def _nist_diagnostics():
    made = _made_by("python -m benchmarks.nist_diagnostics --also 1", ("lsq_backends", "numpy"))
    return made + nist_diagnostics.markdown(0, also=1)


FILL = {
    "{{ readme }}": _readme,
    "{{ changelog }}": _changelog,
    "{{ capabilities }}": _capabilities,
    "{{ nist_lre }}": _nist_lre,
    "{{ nist_diagnostics }}": _nist_diagnostics,
}


def on_page_markdown(markdown, page, config, files):
    for key, make in FILL.items():
        if key in markdown:
            markdown = markdown.replace(key, make())
    return markdown
