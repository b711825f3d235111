"""Whether a browser renders a parsed page in quirks mode, for
:mod:`notochord.extraction.style_cascade`: there, and only there, class and id selectors match in
any ASCII case (``.Note`` matches ``class="note"``); in no-quirks and limited-quirks mode they match
exactly.

The mode is decided as the HTML standard's "initial" insertion mode decides it: by the first
doctype, when nothing but white space, comments and processing instructions (which HTML reads as
comments) stands before it. No doctype, anything else before it, a doctype not named ``html`` and
the legacy public and system identifiers the standard lists mean quirks mode.

Where the mode is not known, :func:`quirks_mode` says None and a selector that matches only in
another case is neither applied nor ruled out: a doctype this reader cannot read, or a page that
may be read as XML (an ``<?xml`` declaration, an ``xmlns`` on its root, a type or name saying
XHTML), whose selectors always match exactly and which then has no quirks mode.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from bs4 import BeautifulSoup

__all__ = ["quirks_mode"]

_SPACE: Final = " \t\n\r\f"

# a doctype's name and its public and system identifiers, as the tokenizer reads a well-formed one
_DOCTYPE: Final = re.compile(
    r"""[ \t\n\r\f]*+(?P<name>[^ \t\n\r\f>]++)[ \t\n\r\f]*+"""
    r"""(?:PUBLIC[ \t\n\r\f]*+(?:"(?P<public_dq>[^">]*+)"|'(?P<public_sq>[^'>]*+)')"""
    r"""(?:[ \t\n\r\f]*+(?:"(?P<system_dq>[^">]*+)"|'(?P<system_sq>[^'>]*+)'))?+"""
    r"""|SYSTEM[ \t\n\r\f]*+(?:"(?P<only_system_dq>[^">]*+)"|'(?P<only_system_sq>[^'>]*+)'))?+"""
    r"""[ \t\n\r\f]*+""",
    re.IGNORECASE,
)
_QUIRKY_PUBLIC_IDS: Final = frozenset(
    {"-//w3o//dtd w3 html strict 3.0//en//", "-/w3c/dtd html 4.0 transitional/en", "html"}
)
_QUIRKY_SYSTEM_ID: Final = "http://www.ibm.com/data/dtd/v11/ibmxhtml1-transitional.dtd"
_QUIRKY_PUBLIC_PREFIXES: Final = (
    "+//silmaril//dtd html pro v0r11 19970101//",
    "-//as//dtd html 3.0 aswedit + extensions//",
    "-//advasoft ltd//dtd html 3.0 aswedit + extensions//",
    "-//ietf//dtd html 2.0 level 1//",
    "-//ietf//dtd html 2.0 level 2//",
    "-//ietf//dtd html 2.0 strict level 1//",
    "-//ietf//dtd html 2.0 strict level 2//",
    "-//ietf//dtd html 2.0 strict//",
    "-//ietf//dtd html 2.0//",
    "-//ietf//dtd html 2.1e//",
    "-//ietf//dtd html 3.0//",
    "-//ietf//dtd html 3.2 final//",
    "-//ietf//dtd html 3.2//",
    "-//ietf//dtd html 3//",
    "-//ietf//dtd html level 0//",
    "-//ietf//dtd html level 1//",
    "-//ietf//dtd html level 2//",
    "-//ietf//dtd html level 3//",
    "-//ietf//dtd html strict level 0//",
    "-//ietf//dtd html strict level 1//",
    "-//ietf//dtd html strict level 2//",
    "-//ietf//dtd html strict level 3//",
    "-//ietf//dtd html strict//",
    "-//ietf//dtd html//",
    "-//metrius//dtd metrius presentational//",
    "-//microsoft//dtd internet explorer 2.0 html strict//",
    "-//microsoft//dtd internet explorer 2.0 html//",
    "-//microsoft//dtd internet explorer 2.0 tables//",
    "-//microsoft//dtd internet explorer 3.0 html strict//",
    "-//microsoft//dtd internet explorer 3.0 html//",
    "-//microsoft//dtd internet explorer 3.0 tables//",
    "-//netscape comm. corp.//dtd html//",
    "-//netscape comm. corp.//dtd strict html//",
    "-//o'reilly and associates//dtd html 2.0//",
    "-//o'reilly and associates//dtd html extended 1.0//",
    "-//o'reilly and associates//dtd html extended relaxed 1.0//",
    "-//sq//dtd html 2.0 hotmetal + extensions//",
    "-//softquad software//dtd hotmetal pro 6.0::19990601::extensions to html 4.0//",
    "-//softquad//dtd hotmetal pro 4.0::19971010::extensions to html 4.0//",
    "-//spyglass//dtd html 2.0 extended//",
    "-//sun microsystems corp.//dtd hotjava html//",
    "-//sun microsystems corp.//dtd hotjava strict html//",
    "-//w3c//dtd html 3 1995-03-24//",
    "-//w3c//dtd html 3.2 draft//",
    "-//w3c//dtd html 3.2 final//",
    "-//w3c//dtd html 3.2//",
    "-//w3c//dtd html 3.2s draft//",
    "-//w3c//dtd html 4.0 frameset//",
    "-//w3c//dtd html 4.0 transitional//",
    "-//w3c//dtd html experimental 19960712//",
    "-//w3c//dtd html experimental 970421//",
    "-//w3c//dtd w3 html//",
    "-//w3o//dtd w3 html 3.0//",
    "-//webtechs//dtd mozilla html 2.0//",
    "-//webtechs//dtd mozilla html//",
)
# quirky only without a system identifier (with one, limited-quirks: selectors match exactly)
_QUIRKY_WITHOUT_SYSTEM_ID: Final = ("-//w3c//dtd html 4.01 frameset//", "-//w3c//dtd html 4.01 transitional//")


def _doctype_quirky(doctype: str) -> bool | None:
    """Whether a doctype's text puts the page in quirks mode; None when it cannot be read."""
    match = _DOCTYPE.fullmatch(doctype)
    if match is None:
        return None
    public = match["public_dq"] if match["public_dq"] is not None else match["public_sq"]
    system = next(
        (
            match[group]
            for group in ("system_dq", "system_sq", "only_system_dq", "only_system_sq")
            if match[group] is not None
        ),
        None,
    )
    if match["name"].lower() != "html":
        return True
    if system is not None and system.lower() == _QUIRKY_SYSTEM_ID:
        return True
    if public is None:
        return False
    public = public.lower()
    return (
        public in _QUIRKY_PUBLIC_IDS
        or public.startswith(_QUIRKY_PUBLIC_PREFIXES)
        or (system is None and public.startswith(_QUIRKY_WITHOUT_SYSTEM_ID))
    )


def quirks_mode(soup: BeautifulSoup, *, may_be_xml: bool = False) -> bool | None:
    """Whether the page ``soup`` is rendered in quirks mode: True or False, or None when that is not
    known. ``may_be_xml`` says that the page's type or name marks it as XHTML."""
    from bs4.element import Doctype, NavigableString, ProcessingInstruction, Tag

    xml_declared = False
    quirky: bool | None = True
    for node in soup.contents:
        if isinstance(node, Doctype):
            quirky = _doctype_quirky(str(node))
            break
        if isinstance(node, ProcessingInstruction):
            xml_declared = xml_declared or str(node).lower().startswith("xml")
            continue
        # comments, and the declarations and sections HTML reads as comments, leave the mode open
        if isinstance(node, NavigableString) and (type(node) is not NavigableString or not node.strip(_SPACE)):
            continue
        break  # text or an element before any doctype: a doctype after it is ignored
    if quirky is not True:
        return quirky
    root = soup.find("html", recursive=False)
    if may_be_xml or xml_declared or (isinstance(root, Tag) and root.get("xmlns") is not None):
        return None
    return True
