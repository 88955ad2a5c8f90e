"""How a report is written out: a standalone HTML page and a Markdown document (dashboard.documents.report builds what goes
in them).

HTML: one copy of plotly.js inline so the page opens offline; it is stored gzip-compressed and base64-encoded
(4.8 MB → 2.0 MB) and unpacked by the browser's DecompressionStream before the figures are drawn. Markdown: every
embedded string is escaped, so a run label or method name can never turn into markup.
"""
from __future__ import annotations

import base64
import functools
import gzip
import html as html_lib
import json
import math
import re
from dataclasses import dataclass

import pandas as pd

from datasets.text import escape_controls

STYLE = ("body{font-family:sans-serif;margin:2em auto;max-width:1400px;padding:0 1em;color:#222}.src{color:#555}"
         "table.facts{border-collapse:collapse;margin:1em 0}table.facts th{text-align:left;padding:3px 14px 3px 0;"
         "font-weight:600;vertical-align:top}table.facts td{padding:3px 0}"
         ".tbl{border-collapse:collapse;font-size:.85em;margin:.5em 0 1.5em}.tbl td,.tbl th{padding:3px 8px;"
         "border-bottom:1px solid #ddd;text-align:right;overflow-wrap:anywhere;max-width:32em}"
         ".tbl td.n{white-space:nowrap;overflow-wrap:normal}.tbl th{background:#f4f4f4}.tbl td:first-child,.tbl th:first-child{text-align:left}"
         ".note{max-width:60em;line-height:1.45}.fig{width:100%;height:460px}")


@dataclass(frozen=True)
class Note:
    """A paragraph under a heading. `markdown=True` only for projlab's own prose (dashboard.model.glossary), which may use
    **bold**, *italic* and `code`; anything carrying run data is plain text and gets escaped."""
    heading: str
    text: str
    markdown: bool = False


# --- Markdown ----------------------------------------------------------------------------------------------------
# What can make markup of plain text in CommonMark, GFM and Streamlit's markdown, escaped with a backslash (which
# shows the character itself, so the reader sees the text unchanged): emphasis, code, strikethrough and math
# ('*', '`', '~', '$'), links, images and footnotes ('!', '[', ']'), HTML and autolinks ('<', '>'), table cells
# ('|'), headings ('#'), braces; an
# underscore at a word's edge (one inside a word, gpu_idle, never starts emphasis: names stay readable in the raw
# file); a ':' before a letter or '/' (Streamlit's colour, icon and emoji directives ':red[', and every
# 'scheme://' URL, which GFM links without any markup); the '.' of 'www.' (a link too); an '@' inside an e-mail
# address; an '&' that starts an entity (which could spell '<' or a bidi control); and a list marker at the start.
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>|#~!{}$]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|:(?=[A-Za-z/])|@(?=\w)"
                         r"|&(?=#?\w+;))")
_WWW = re.compile(r"\b(www)\.", re.IGNORECASE)
_LINE_START = re.compile(r"^(\s*\d*)([-+.)])(?=\s|$)")     # a list item's marker at the start: '- ', '2. '

def md_escape(text) -> str:
    """Text safe to embed in Markdown, on one line: the one way a report or a page (ui.widgets.md_text) puts a name
    or any text from outside (a run file, an upload, the address, a message built from them) into markdown. Line
    breaks become spaces (a cell or heading stays one line), control and bidi characters their escapes
    (datasets.text.escape_controls), every markup character is backslash-escaped, and a bare URL or 'www.' name is
    broken (its ':' or the '.' after 'www' escaped): no link, image, HTML, math or directive can come from it."""
    flat = escape_controls(re.sub(r"[\r\n\u2028\u2029]+", " ", str(text)))
    out = _WWW.sub(r"\1\\.", _MD_SPECIAL.sub(r"\\\1", flat))
    return _LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), out)


def md_table(df: pd.DataFrame) -> str:
    """A table of already formatted cells (strings), header and cells escaped."""
    head = "| " + " | ".join(md_escape(c) for c in df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    rows = ["| " + " | ".join(md_escape(_cell(v)) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *rows])


def markdown(title: str, source_line: str, facts: list[tuple[str, str]], tables: dict[str, pd.DataFrame],
             notes: list[Note]) -> str:
    lines = [f"# {md_escape(title)}", "", md_escape(source_line), ""]
    lines += [f"- **{md_escape(k)}**: {md_escape(v)}" for k, v in facts]
    for name, df in tables.items():
        lines += ["", f"## {md_escape(name)}", "", md_table(df)]
    for note in notes:
        lines += ["", f"## {md_escape(note.heading)}", "", note.text if note.markdown else md_escape(note.text)]
    return "\n".join(lines) + "\n"


# --- HTML ----------------------------------------------------------------------------------------------------------
def _e(text) -> str:
    return html_lib.escape(str(text))


def _inline_markdown(text: str) -> str:
    """projlab's own prose: **bold**, *italic*, `code` as HTML, everything else escaped."""
    out = _e(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
    out = re.sub(r"\*(.+?)\*", r"<em>\1</em>", out)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", out)


def _cell(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    return str(v)


@functools.lru_cache(maxsize=1)
def _gzip_b64(js: str) -> str:
    return base64.b64encode(gzip.compress(js.encode("utf-8"), 9, mtime=0)).decode("ascii")


def _loader(plotly_js: str) -> str:
    """Unpack plotly.js once and resolve `window.plotlyReady` when Plotly is defined."""
    return ("<script>window.plotlyReady=(async()=>{"
            f"const b=Uint8Array.from(atob('{_gzip_b64(plotly_js)}'),c=>c.charCodeAt(0));"
            "const js=await new Response(new Blob([b]).stream().pipeThrough(new DecompressionStream('gzip'))).text();"
            "const s=document.createElement('script');s.textContent=js;document.head.appendChild(s);})();</script>")


def _script_json(spec_json: str) -> str:
    return spec_json.replace("</", "<\\/")  # a string in the JSON can never close the <script>


def _figure(spec_json: str, i: int) -> str:
    return (f"<div id='fig{i}' class='plotly-graph-div fig'></div><script>plotlyReady.then(()=>{{"
            f"const f={_script_json(spec_json)};f.layout.template=f.layout.template||TEMPLATE;"
            f"Plotly.newPlot('fig{i}',f.data,f.layout,{{responsive:true,displaylogo:false}});}});</script>")


# A cell of digits with its separators, signs, units and interval brackets ("1,234.5 µs", "1.021 [0.99,1.05]",
# "97.1%"): never broken across lines ('overflow-wrap:anywhere', which long method names need, split "128" as "12↵8").
_NUMERIC = re.compile(r"[+\-−]?[0-9][0-9\s.,%×x+\-−–\[\]()µs]*")


def _td(text: str) -> str:
    return f"<td class='n'>{_e(text)}</td>" if _NUMERIC.fullmatch(text) else f"<td>{_e(text)}</td>"


def _html_table(df: pd.DataFrame) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in df.columns)
    rows = "".join("<tr>" + "".join(_td(_cell(v)) for v in r) + "</tr>" for r in df.itertuples(index=False))
    return f"<table class='tbl'><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def html(title: str, source_line: str, facts: list[tuple[str, str]], figures: list[str],
         tables: dict[str, pd.DataFrame], notes: list[Note], plotly_js: str, template_json: str = "{}") -> str:
    """Standalone page: facts, figures (plotly JSON specs, drawn interactive), compact tables, notes; `plotly_js` is
    the library's source and `template_json` a plotly template for every figure, each embedded once. No network
    needed."""
    parts = [f"<h1>{_e(title)}</h1>", f"<p class='src'>{_e(source_line)}</p>", "<table class='facts'>"]
    parts += [f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in facts]
    parts.append("</table>")
    parts += [_figure(spec, i) for i, spec in enumerate(figures)]
    for name, df in tables.items():
        parts += [f"<h2>{_e(name)}</h2>", _html_table(df)]
    for note in notes:
        paras = note.text.split("\n\n")
        parts.append(f"<h2>{_e(note.heading)}</h2>")
        parts += [f"<p class='note'>{_inline_markdown(p) if note.markdown else _e(p)}</p>" for p in paras]
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width'><title>{_e(title)}</title>{_loader(plotly_js)}"
            f"<script>const TEMPLATE={_script_json(template_json)};</script>"
            f"<style>{STYLE}</style></head><body>" + "\n".join(parts) + "</body></html>")


def jsonable(d: dict) -> dict:
    """Summary values as JSON values: numpy scalars as Python numbers, NaN/inf as null."""
    out = {}
    for k, v in d.items():
        if hasattr(v, "item"):
            v = v.item()
        out[k] = None if isinstance(v, float) and not math.isfinite(v) else v
    return json.loads(json.dumps(out, default=str))
