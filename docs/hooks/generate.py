"""MkDocs hook: pages generated from the repository at build time, so that they cannot drift.

- ``{{ readme }}`` (index.md): README.md, its links rewritten for the site;
- ``{{ changelog }}`` (changelog.md): CHANGELOG.md;
- ``{{ capabilities }}`` (backends.md): the table of ``lsq_backends.capabilities``.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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


FILL = {"{{ readme }}": _readme, "{{ changelog }}": _changelog, "{{ capabilities }}": _capabilities}


def on_page_markdown(markdown, page, config, files):
    for key, make in FILL.items():
        if key in markdown:
            markdown = markdown.replace(key, make())
    return markdown
