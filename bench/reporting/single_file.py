"""``contactbench publish --single-file report.html``: the whole dashboard as one HTML file.

The site is built as usual (``bench.reporting.publish``) into a temporary folder; this module then
folds its pages into one document to attach to an issue or a paper review:

* Plotly's JavaScript is inlined once, in the head (no ``assets/``, no network);
* each page's body is kept in a ``<template>`` element (inert: its ids and scripts do
  nothing until shown), named by the page's file name;
* a small script shows one page at a time in ``<main id="page">``: the hash ``#/<page>``
  names it (``#/index.html`` by default), links between pages are rewritten to such
  hashes, and the page's own scripts (the plots) run when it is shown. A hash that names no
  page (an anchor such as ``#provenance``) scrolls within the page shown.

The data (tables, figure JSON) are part of each page already, so nothing else is read.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from solvers.errors import ProblemError

_BODY = re.compile(r"<body[^>]*>(.*)</body>", re.S)
_STYLE = re.compile(r"<style>(.*?)</style>", re.S)
_TITLE = re.compile(r"<title>(.*?)</title>", re.S)

#: shows the page named by the hash, rewrites links between pages, runs the page's scripts
_ROUTER = """
(function () {
  const pages = %(pages)s;
  const main = document.getElementById("page");
  let shown = null;
  function show(name) {
    const template = document.getElementById("page-" + name);
    if (!template || name === shown) return;
    shown = name;
    main.replaceChildren(document.importNode(template.content, true));
    for (const a of main.querySelectorAll("a[href]")) {
      const href = a.getAttribute("href");
      const [file, anchor] = href.split("#");
      if (pages.includes(file)) a.setAttribute("href", "#/" + file);
      else if (file === "" && anchor) a.setAttribute("href", "#" + anchor);
    }
    document.title = template.dataset.title || document.title;
    window.scrollTo(0, 0);
  }
  function route() {
    const hash = decodeURIComponent(location.hash);
    if (hash.startsWith("#/")) show(hash.slice(2));
    else if (shown === null) show(pages[0]);
  }
  window.addEventListener("hashchange", route);
  route();
})();
"""


def _escape_template(html: str) -> str:
    """``html`` safe inside a ``<template>`` element (a literal ``</template>`` would close it)."""
    return html.replace("</template", "<\\/template")


#: the line every single-file dashboard carries (after its doctype): a file holding it was
#: written by contactbench and may be replaced (``bench.engine.rundir.check_output_file``)
FILE_MARKER = "<!-- written by contactbench: this file is replaced on the next write -->"


def bundle(site: Path | str, pages: list[str]) -> str:
    """One self-contained HTML document of the built site in the folder ``site``: ``pages``
    (file names in ``site``, the first shown by default) as templates, the first page's
    styles, Plotly inlined from ``site/assets/plotly.min.js`` (see the module docstring).
    ``ProblemError`` naming the page when one is missing or has no body."""
    site = Path(site)
    if not pages:
        raise ProblemError("pages: expected at least one page of the site")
    bodies, styles, titles = {}, "", {}
    for name in pages:
        path = site / name
        if not path.is_file():
            raise ProblemError(f"pages: {name!r} is not a page of the site in {str(site)!r}")
        text = path.read_text(encoding="utf-8")
        body = _BODY.search(text)
        if body is None:
            raise ProblemError(f"pages: {name!r} has no <body>")
        bodies[name] = body.group(1).replace(
            "served from <code>assets/</code>; this page needs no network",
            "inlined in this file; it needs no network")
        titles[name] = (_TITLE.search(text).group(1) if _TITLE.search(text) else "contactbench").strip()
        if not styles and _STYLE.search(text):
            styles = _STYLE.search(text).group(1)
    plotly_js = (site / "assets" / "plotly.min.js").read_text(encoding="utf-8")
    templates = "\n".join(
        f'<template id="page-{_attr(name)}" data-title="{_attr(titles[name])}">{_escape_template(body)}</template>'
        for name, body in bodies.items())
    router = _ROUTER % {"pages": json.dumps(pages).replace("<", "\\u003c")}
    plotly_js = plotly_js.replace("</script", "<\\/script")
    return ("<!doctype html>\n" + FILE_MARKER + "\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{titles[pages[0]]}</title>\n<style>{styles}</style>\n"
            f"<script>{plotly_js}</script>\n</head>\n<body>\n"
            f"<main id=\"page\"></main>\n{templates}\n<script>{router}</script>\n</body>\n</html>\n")


def _attr(text: str) -> str:
    """``text`` inside a double-quoted HTML attribute."""
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
