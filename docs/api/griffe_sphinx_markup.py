"""A griffe extension for the API reference: the Sphinx markup our docstrings use, as Markdown.

The code's docstrings are written for Sphinx: fields (``:param x:``, read by griffe's sphinx
parser), cross-reference roles (``:class:`~pkg.Name```, ``:func:`name```, ``:mod:`.view```,
``:pep:`562```), ``#:`` comments documenting module and class attributes, literal blocks
introduced by ``::`` and ``.. code-block::`` directives. mkdocstrings renders docstrings as
Markdown, where none of these but the fields mean anything. This extension, loaded by
``mkdocs.yml``, rewrites them once the package is loaded:

- a role becomes an optional autorefs link (``<autoref optional>``): a link to the object's
  entry when the site documents it, its name in code font otherwise (never a warning);
- a ``#:`` comment block above an attribute becomes that attribute's docstring;
- ``text::`` before an indented block becomes ``text:``, and a ``.. code-block::`` line is
  dropped: the indented block is then a Markdown code block;
- a citation of a reference page, ``docs/metrics.md §4``, becomes a link to that section of
  the site (to the page alone when it has no such section).
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import griffe
from markdown.extensions.toc import slugify

__all__ = ["SphinxMarkup"]

#: ``:role:`target``` or ``:role:`title <target>```.
ROLE = re.compile(r":(?P<role>[a-z]+):`(?P<body>[^`]+)`")
#: Roles naming a Python object.
OBJECT_ROLES = frozenset({"class", "func", "meth", "mod", "data", "attr", "exc", "obj", "const"})
DIRECTIVE = re.compile(r"^\s*\.\. code-block::.*$", re.MULTILINE)
#: reST's literal-block markers: ``text::`` reads "text:", `` ::`` and a lone ``::`` vanish.
LITERAL_ALONE = re.compile(r"^\s*::\s*$|\s+::$", re.MULTILINE)
LITERAL_INTRO = re.compile(r"::$", re.MULTILINE)

#: ``docs/metrics.md``, ````docs/metrics.md````, either followed by ``§4``.
PAGE_CITATION = re.compile(
    r"(?<![\w/])(?P<code>``)?docs/(?P<page>[a-z_]+)\.md(?(code)``)(?:\s*§\s*(?P<section>\d+))?"
)
#: The site's pages (this file is in docs/api/; the API pages are one folder down from them).
DOCS = Path(__file__).resolve().parent.parent
SECTION_HEADING = re.compile(r"^## (?P<number>\d+)\. .*$", re.MULTILINE)


def _section_slugs(page: str) -> dict[str, str] | None:
    """``{"4": "4-population-uniqueness", ...}`` of a reference page; None if no such page."""
    path = DOCS / f"{page}.md"
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    return {m["number"]: slugify(m[0][3:].strip(), "-") for m in SECTION_HEADING.finditer(text)}


def _citation(match: re.Match[str]) -> str:
    slugs = _section_slugs(match["page"])
    if slugs is None:
        return match[0]
    section = match["section"]
    anchor = f"#{slugs[section]}" if section in slugs else ""
    name = f"docs/{match['page']}.md"
    title = f"`{name}`" if match["code"] else name
    if section:
        title += f" §{section}"
    return f"[{title}](../{match['page']}.md{anchor})"


def _resolve(obj: griffe.Object, target: str) -> str:
    """The dotted path ``target`` names from ``obj``'s docstring, as the site anchors it."""
    if target.startswith("."):  # relative to the docstring's package
        module = obj if isinstance(obj, griffe.Module) else obj.module
        base = module if module.is_init_module else module.parent
        target = f"{base.path if base else module.path}{target}"
    elif "." not in target or target.split(".", 1)[0] != "reident_airflow":
        scope: Any = obj
        while scope is not None:  # the object, its class, its module: first one holding it
            head = target.split(".", 1)[0]
            if head in getattr(scope, "members", {}):
                target = f"{scope.path}.{target}"
                break
            scope = scope.parent
    try:
        found = obj.modules_collection.get_member(target)
        return str(found.final_target.path if found.is_alias else found.path)
    except Exception:  # not loaded, or an alias to another package: keep the written path
        return target


def _role(obj: griffe.Object, match: re.Match[str]) -> str:
    role, body = match["role"], match["body"]
    if role == "pep":
        number = int(body) if body.isdigit() else 0
        return f"[PEP {body}](https://peps.python.org/pep-{number:04d}/)"
    if role not in OBJECT_ROLES:
        return f"`{body}`"
    titled = re.fullmatch(r"(?P<title>.+?)\s*<(?P<target>[^>]+)>", body)
    target = (titled["target"] if titled else body).lstrip("!")
    short = target.startswith("~")
    target = target.lstrip("~")
    title = titled["title"] if titled else (target.rsplit(".", 1)[-1] if short else target)
    if role in ("func", "meth") and not titled:
        title += "()"
    identifier = html.escape(_resolve(obj, target), quote=True)
    code = f"<code>{html.escape(title)}</code>"
    return f'<autoref identifier="{identifier}" optional>{code}</autoref>'


def _convert(obj: griffe.Object, text: str) -> str:
    text = DIRECTIVE.sub("", text)
    text = LITERAL_ALONE.sub("", text)
    text = LITERAL_INTRO.sub(":", text)
    text = PAGE_CITATION.sub(_citation, text)
    return ROLE.sub(lambda match: _role(obj, match), text)


def _comment_docstring(attr: griffe.Attribute) -> str | None:
    """The ``#:`` comment lines right above ``attr``'s assignment, without the markers."""
    if attr.lineno is None or not isinstance(attr.filepath, Path):
        return None
    # griffe's LinesCollection has no .get(); it does answer `in`
    collection = attr.lines_collection
    lines = collection[attr.filepath] if attr.filepath in collection else []  # noqa: SIM401
    found: list[str] = []
    index = attr.lineno - 2  # the line above the assignment, 0-based
    while index >= 0 and lines[index].strip().startswith("#:"):
        found.insert(0, lines[index].strip()[2:].removeprefix(" "))
        index -= 1
    return "\n".join(found) or None


class SphinxMarkup(griffe.Extension):
    """Sphinx roles, ``#:`` comments and literal blocks rendered as Markdown."""

    def on_attribute_instance(self, *, attr: griffe.Attribute, **kwargs: Any) -> None:
        if attr.docstring is None and (text := _comment_docstring(attr)):
            attr.docstring = griffe.Docstring(text, lineno=attr.lineno, parent=attr)

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        pending: list[griffe.Object] = [pkg]
        while pending:
            obj = pending.pop()
            if obj.docstring is not None:
                obj.docstring.value = _convert(obj, obj.docstring.value)
            pending.extend(m for m in obj.members.values() if not m.is_alias)  # type: ignore[misc]
