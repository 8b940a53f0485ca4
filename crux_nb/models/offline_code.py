"""Technical text for the offline extractors: markup noise, code spans and identifiers.

Two jobs, both general rules over the input's own text and statistics (no name lists):

1. :func:`mask_noise` blanks markup that names nothing -- HTML comments and tags, front
   matter, table rules (``|---|``, ``+===+``), base64-like runs, URLs, e-mail addresses,
   file paths and section numbers (``Section 24.3``) -- with spaces of the same length, so
   every offset (and every sentence span) stays where it was. :func:`mask_code` also blanks
   fenced code blocks and code spans, for the capitalised-name rules (a grammar block's
   ``NAME2`` or a quoted ``"TypeError"`` is not a proper name).
2. :func:`code_entities` finds identifiers: the content of code spans (Markdown `` `x` ``,
   reST ````x````, and straight double quotes in an input that quotes code, i.e. where most
   quoted spans are code-like or one word, as in ``pydoc``'s ``"__exit__()"``) and, in prose,
   the unmistakable code shapes: dunder names, ``snake_case``, ``lowerCamel``, ``name()``
   calls, ``--options`` and dotted names of three parts (``os.path.join``) or of two whose head is
   shared by another dotted name or that are seen in a code span (``setup.py`` alone is not code). A trailing ``()`` folds (``dict.get()`` is
   ``dict.get``); a one-letter head is a placeholder (``x.__del__`` is ``__del__``); an
   all-caps word (``NAME1``, ``EXPRESSION``) is a grammar metavariable; a plain word (``with``,
   ``None``) is an identifier only when it recurs in code spans, and since it is also a word of
   the prose it is linked only where it is marked as code. Types: ``option`` for flags,
   ``code`` for the rest. Names are case-sensitive (``Path`` is not ``path``).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

__all__ = ["CODE_TYPES", "code_entities", "code_spans", "mask_code", "mask_noise", "acronym_definitions", "metavariables"]

#: Entity types whose names are case-sensitive identifiers.
CODE_TYPES = frozenset({"code", "option"})

_NOISE = [
    re.compile(r"<!--.*?(?:-->|\Z)", re.S),  # HTML comments (<!-- YAML --> blocks)
    re.compile(r"\A\ufeff?---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S),  # YAML front matter
    re.compile(r"^[ \t]*[|+]?[ \t]*:?[-=]{3,}:?[ \t]*(?:[|+][ \t]*:?[-=]{3,}:?[ \t]*)*[|+]?[ \t]*$", re.M),  # table rules
    # a reST section title's under- or overline (one punctuation character repeated; not a fence's ` or ~, not a
    # session's "..."): blanked, the title reads as a heading line, whose common words confirm known names only
    re.compile(r"^[ \t]*([!-\-/:-@\[-_{-}])\1{2,}[ \t]*$", re.M),
    re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>\n]*)?/?>"),  # HTML tags (the text between them stays)
    re.compile(r"\b(?:https?|ftp|file)://[^\s<>\"'`)\]]+|\bwww\.[^\s<>\"'`)\]]+", re.I),  # URLs
    re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b"),  # e-mail addresses
    re.compile(r"(?<![\w/.])(?:~|\.{1,2})?/(?:[\w.@-]+/)+[\w.@-]*|\b[A-Za-z]:\\[^\s\"'`]+"),  # file paths
    re.compile(r"\b(?:[Ss]ections?|[Cc]hapters?|§)\s*\d+(?:\.\d+)*"),  # section numbers: "Section 24.3"
    re.compile(r"(?<=[ \t\[(])-[A-Za-z]\w*"),  # a short option (ctest -SP, -D): its letters are no acronym
    # reStructuredText markup: a substitution reference (|name|, no space inside, so no Markdown table cell),
    re.compile(r"(?<![|\w])\|[A-Za-z_][\w.-]*\|(?![|\w])"),
    # a directive's marker and a file-name argument (.. include:: FILE.rst), a hyperlink target (.. _name:),
    re.compile(r"^[ \t]*\.\. [A-Za-z][\w:-]*::(?:[ \t]+\S+\.[A-Za-z]\w{0,4}[ \t]*$)?", re.M),
    re.compile(r"^[ \t]*\.\. _(?:`[^`\n]*`|[^:\n]*):", re.M),
    # a role's name before its backticked content (:prop_tgt:`X`), a directive option's name (:target: ...)
    re.compile(r"(?<![\w:`]):[A-Za-z][\w+.-]*(?::[A-Za-z][\w+.-]*)*:(?=`)"),
    re.compile(r"^[ \t]+:[A-Za-z][\w-]*:(?=[ \t]|$)", re.M),
]
#: a reST reference: a hyperlink reference (`Options`_, `text <target>`__) or a :ref: or :doc: role
#: (:ref:`Normalization`): a title-case text is a section's title (`Path Structure And Terminology`_, `Options`_, a
#: capitalised common word: the text writes it in lowercase too) and names nothing the heading does not, so the whole
#: reference is blanked; other references (:ref:`bracket argument`, `RELATIVE_PART`_, `Emscripten`_) stay code spans
_REFERENCE = re.compile(r"(?<![`\w])(:(?:ref|doc):)?`([^`<\n]*?)(\s*<[^`>\n]*>)?`(__?)?(?![\w`])")
#: an identifier around a <placeholder> (CMAKE_<LANG>_FLAGS, lib<name>.a) names a family, and cut at the angle
#: brackets its parts name nothing (CMAKE_LINK_GROUP_USING_, _STANDARD_REQUIRED): blanked whole
_TEMPLATE = re.compile(r"[\w./-]*(?:<[A-Za-z][\w-]*>[\w./-]*)+")  # test_prep/<name>, lib/<name>.a
#: a reST literal block's opening: a paragraph ending in "::" (not a directive's ".. x::" line)
_LITERAL = re.compile(r"^(?![ \t]*\.\. )([ \t]*)\S[^\n]*::[ \t]*\n", re.M)
#: a reST code directive (``.. code-block:: cmake``, ``.. code::``, ``.. sourcecode::``, ``.. parsed-literal::``,
#: ``.. productionlist::``) or the first paragraph of a directive whose body opens with a call (``.. signature::`` then
#: ``list(APPEND ...)``, its description after): its indented body is example code (``find_package(Stats 2.6.4 REQUIRED)``, ``GROUP SomeGroup QUIET``): blanked
#: with the markup (read before the directive's marker is), as the name and identifier rules skip literal blocks
_DIRECTIVE = re.compile(r"^([ \t]*)\.\. ([A-Za-z][\w-]*)::[^\n]*\n", re.M)
_CODE_DIRECTIVES = frozenset({"code", "code-block", "sourcecode", "parsed-literal", "productionlist"})
_OPENS_CALL = re.compile(r"(?:[ \t]*\n)*[ \t]*(?::[\w-]+:[^\n]*\n(?:[ \t]*\n)*[ \t]*)*[A-Za-z_][\w:]*\(")
_PARAGRAPH = re.compile(r"(?:[ \t]*\n)*([^\n]*(?:\n(?![ \t]*(?:\n|\Z))[^\n]*)*)")
#: an interactive session's input lines (">>> d = {'two': 2}", "... "): code, whose string literals are no names
_PROMPT = re.compile(r"^[ \t]*(?:>>>|\.\.\.)(?: [^\n]*)?$", re.M)
#: an identifier part made of one letter repeated (xxx, Xxx, VV): a filler standing for any name
_FILLER = re.compile(r"^(?i:([a-z])\1+)$")
#: a metavariable: a lowercase word inside angle brackets without spaces (<file1>, $<CONFIG:cfgs>, <dir>)
_ANGLE = re.compile(r"<([^<>\s]+)>")
_ANGLE_WORD = re.compile(r"(?<![\w-])[a-z][a-z0-9_]*(?![\w-])")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{20,}={0,2}")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*\1[`~]*[ \t]*$|\Z)", re.M | re.S)
_BACKTICK = re.compile(r"``([^`\n]+?)``|(?<!`)`([^`\n]+)`(?!`)")
_DQUOTE = re.compile(r'(?<![\w"])"([^"\n]{1,80})"(?![\w"])')
_CODE_CHARS = re.compile(r"[_\[\]{}=<>*/%|^~]|\w\(|\w\.\w")

_IDENT = r"[A-Za-z_][\w]*"
_DOTTED = re.compile(rf"(?<![\w.]){_IDENT}(?:\.{_IDENT})+(?:\(\))?(?![\w(]|\.\w)")
_DUNDER = re.compile(r"(?<![\w.])__[A-Za-z][\w]*?__(?:\(\))?(?!\w)")
#: (not before ".h": a file name's stem, other_header of other_header.h, is no identifier of its own)
_SNAKE = re.compile(r"(?<![\w.-])[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?:\(\))?(?![\w-]|\.\w)")
_LOWER_CAMEL = re.compile(r"(?<![\w.-])[a-z]+[A-Z][A-Za-z0-9]*(?:\(\))?(?![\w-]|\.\w)")
_CALL = re.compile(rf"(?<![\w.]){_IDENT}\(\)")
_LONG_FLAG = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*[A-Za-z0-9]")
_FLAG = re.compile(r"^--?[A-Za-z][\w-]*$")
_WHOLE = re.compile(rf"^{_IDENT}(?:\.{_IDENT})*(?:\(.*\))?$")
_PHRASE = re.compile(r"^[a-z][\w-]*(?: [a-z][\w-]*){1,2}$")
#: a call's argument list, on one line or several (no blank line), one level of nested parentheses
_CALL_ARGS = re.compile(r"(?<![\w.])[A-Za-z_][\w:.]*\(((?:[^()\n]|\n(?![ \t]*\n)|\([^()\n]*\))*)\)")
_CALLEE = re.compile(rf"(?<![\w.])({_IDENT}(?:\.{_IDENT})*)\(")
_ACRONYM_DEF = re.compile(r"\b((?:[A-Z][a-z]+|[a-z]+)(?:[ -](?:[A-Za-z][a-z]+|of|and|for|the)){1,6}) \(([A-Z]{2,}s?)\)")


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def _blank_all(text: str, spans) -> str:
    chars = list(text)
    for start, end in spans:
        for i in range(start, end):
            if chars[i] != "\n":
                chars[i] = " "
    return "".join(chars)


def _body(text: str, start: int, indent: int, paragraphs: int = 1_000_000) -> tuple[int, int]:
    """The span of the indented body that starts at ``start`` (after a block's opening line indented ``indent``).

    A chunker strips the indentation of a paragraph's first line, so only a paragraph's other lines (and an indented
    first line) tell its depth: the body's first paragraph sets it (deeper than the opening; a lone unindented line
    right after the opening is the body's only line), and the paragraphs after belong to the body while their known
    lines are at least that deep (prose after a code block, back at the opening's depth, ends it), up to ``paragraphs``.
    """
    end, pos, depth = start, start, None
    while pos < len(text) and paragraphs > 0:
        m = _PARAGRAPH.match(text, pos)
        lines = m.group(1).split("\n")
        if not m.group(1).strip():
            break
        known = [len(line) - len(line.lstrip()) for i, line in enumerate(lines)
                 if line.strip() and (i or line[:1] in " \t")]
        if depth is None and end == start:
            if known and min(known) <= indent:
                break
            depth = min(known) if known else None
        elif depth is None or not known or min(known) < depth:
            break
        end, pos, paragraphs = m.end(), m.end(), paragraphs - 1
        if depth is None:
            break  # a lone unindented line: nothing tells how deep the next paragraph would have to be
    return (start, end)


def mask_noise(text: str) -> str:
    """``text`` with markup noise blanked (same length, newlines kept).

    >>> mask_noise("<!-- YAML --> See https://x.org/a and Section 24.3 of IACJCAAAAbbbb0123456789==.")
    '              See                 and                of                            .'
    """
    spans = [m.span() for pat in _NOISE for m in pat.finditer(text)]
    spans += [m.span() for m in _REFERENCE.finditer(text) if (m.group(1) or m.group(4)) and _title_case(m.group(2))
              and (" " in m.group(2).strip() or re.search(rf"\b{re.escape(m.group(2).strip().lower())}\b", text))]
    spans += [m.span() for m in _TEMPLATE.finditer(text) if re.search(r"\w", re.sub(r"<[^<>]*>", "", m.group()))]
    spans += [m.span() for m in _BASE64.finditer(text) if _base64_like(m.group())]
    spans += [_body(text, m.end(), len(m.group(1))) if m.group(2).lower() in _CODE_DIRECTIVES
              else _body(text, m.end(), len(m.group(1)), paragraphs=1)  # a signature; its description follows
              for m in _DIRECTIVE.finditer(text)
              if m.group(2).lower() in _CODE_DIRECTIVES or _OPENS_CALL.match(text, m.end())]
    return _blank_all(text, spans) if spans else text


def _title_case(text: str) -> bool:
    """Words capitalised (function words aside) and not all caps: a title (``Path Structure And Terminology``)."""
    words = [w for w in re.findall(r"[^\W\d_][\w-]*", text) if len(w) > 3 or w[:1].isupper()]
    return bool(words) and all(w[:1].isupper() for w in words) and any(c.islower() for w in words for c in w)


def _base64_like(run: str) -> bool:
    """Mixed upper, lower and digits (or ``+/``) with no lowercase word inside: not an identifier."""
    body = run.rstrip("=")
    return (any(c.isupper() for c in body) and any(c.islower() for c in body)
            and (any(c.isdigit() for c in body) or "+" in body or "/" in body)
            and not re.search(r"[a-z]{5,}", body))


def _code_like(quoted: str) -> bool:
    """Code characters, not a sentence (``x.y``, ``f(a, b)``, ``a_b``, ``a < b``)."""
    q = quoted.strip()
    return bool(_CODE_CHARS.search(q)) and q[-1:] not in ".!?,;:" and len(q.split()) <= 8


def quotes_code(text: str) -> bool:
    """Does the input quote code in straight double quotes? At least two quoted spans hold code characters
    (``x.y``, ``f(``, ``_``, ``=``), and with the one-word ones they are most of the quoted spans (dialogue, song
    titles and foreign words, ``"Beat It"``, ``"voivode"``, are not code)."""
    quoted = [m.group(1).strip() for m in _DQUOTE.finditer(text)]
    code = sum(1 for q in quoted if _code_like(q))
    words = sum(1 for q in quoted if not _code_like(q) and q and " " not in q)  # "yield", "None"
    return len(quoted) >= 3 and code >= 2 and 2 * (code + words) >= len(quoted)


def code_spans(text: str, quoted: bool) -> list[tuple[int, int, str]]:
    """``(start, end, content)`` of the code spans of ``text`` (backticks; straight quotes when ``quoted``), outside
    reST literal blocks and session lines (their quotes are string literals); a fenced block's spans count, as before
    (Markdown's inline backticks in fences are mostly code)."""
    # a LaTeX quotation (``Thriller'') or a long phrase in backticks is not code
    out = [(m.start(), m.end(), m.group(1) or m.group(2)) for m in _BACKTICK.finditer(text)
           if "''" not in (m.group(1) or m.group(2)) and len((m.group(1) or m.group(2)).split()) <= 8]
    in_block = bytearray(len(text) + 1)  # one pass: a span is dropped when it starts inside a block
    for a, b in _blocks(text, fences=False):
        in_block[a:b] = b"\x01" * (b - a)
    out = [span for span in out if not in_block[span[0]]]
    if quoted:
        taken = [(a, b) for a, b, _ in out]
        out += [(m.start(), m.end(), m.group(1)) for m in _DQUOTE.finditer(text) if not in_block[m.start()]
                and not any(a < m.end() and m.start() < b for a, b in taken)]
    return sorted(out)


def mask_code(text: str, spans: list[tuple[int, int, str]]) -> str:
    """``text`` with code blocks (fenced, reST literal) and the given code spans blanked (for the name rules)."""
    return _blank_all(text, _blocks(text) + [(a, b) for a, b, _ in spans])


def _blocks(text: str, fences: bool = True) -> list[tuple[int, int]]:
    """The spans of ``text``'s code blocks: fenced, reST literal blocks and interactive-session input lines (example
    code: an argument list's ``GROUP SomeGroup QUIET``, a template's ``I2``, a literal's ``"two"`` are no names)."""
    return [m.span() for m in _FENCE.finditer(text) if fences] + [_body(text, m.end(), len(m.group(1))) for m in _LITERAL.finditer(text)] + [
        m.span() for m in _PROMPT.finditer(text)]


def _fold(ident: str) -> str:
    ident = re.sub(r"\(.*\)$", "", ident)
    parts = ident.split(".")
    while len(parts) > 1 and len(parts[0]) == 1:  # "x.__del__": a one-letter head is a placeholder
        parts = parts[1:]
    return ".".join(parts)


def _placeholder(name: str) -> bool:
    """A grammar metavariable or a non-identifier: all caps without ``_`` (``NAME1``, ``CLS``), one letter, digits,
    or a part that is one letter repeated, the writer's filler for "any name here" (``xxx_provide_dependency``,
    ``Xxx_LIBRARIES``, ``Xxx_VERSION_VV``)."""
    bare = name.lstrip("-")
    letters = bare.replace(".", "")
    mixed_short = len(letters) <= 3 and letters.isalpha() and not letters.islower() and any(
        c.isupper() for c in letters[1:])  # "bR", "rF": a literal's prefix letters, not a name
    return (len(letters) < 2 or (letters.isupper() and "_" not in letters) or not any(c.isalpha() for c in bare)
            or all(p.isupper() and "_" not in p for p in bare.split(".")) or mixed_short
            or any(_FILLER.match(part) for part in re.split(r"[._-]", bare)))


def _from_span(content: str) -> list[tuple[str, str, bool]]:
    """``(name, type, shaped)`` identifiers in one code span's content; ``shaped``: not a plain word."""
    content = content.strip()
    if _FLAG.match(content.split("=")[0]) and " " not in content:
        return [(content.split("=")[0], "option", True)]
    if _WHOLE.match(content):
        name = _fold(content)
        shaped = "." in name or "_" in name or "(" in content or any(c.isupper() for c in name[1:])
        return [] if _placeholder(name) else [(name, "code", shaped)]
    if _PHRASE.match(content) and all(len(w) >= 2 for w in content.split(" ")):
        return [(content, "code", False)]  # "async with", "yield from", "playwright-cli open"
    found = [(m.group(), "option", True) for m in _LONG_FLAG.finditer(content)]
    for pat in (_DUNDER, _DOTTED, _SNAKE, _LOWER_CAMEL):
        found += [(_fold(m.group()), "code", True) for m in pat.finditer(content)]
    found += [(_fold(m.group(1)), "code", True) for m in _CALLEE.finditer(content) if len(m.group(1)) >= 2]
    return [(n, t, s) for n, t, s in found if n and not _placeholder(n)]


def metavariables(texts: list[str]) -> frozenset[str]:
    """The lowercase words ``texts`` write inside angle brackets (``<file1>``, ``$<CONFIG:cfgs>``): a signature's
    metavariables, the writer's "put your value here"; never a tag's name (a tag closes: ``</code>``).

    >>> sorted(metavariables(["if(<file1> IS_NEWER_THAN <file2>)", "$<CONFIG:cfgs>", "<b>x</b>", "<Out-Var>"]))
    ['cfgs', 'file1', 'file2']
    """
    found = {w for text in texts for m in _ANGLE.finditer(text) for w in _ANGLE_WORD.findall(m.group(1))}
    closed = {m.group(1) for text in texts for m in re.finditer(r"</([a-z][\w-]*)>", text)}
    return frozenset(found - closed)


def code_entities(texts: list[str], *, placeholders: frozenset[str] = frozenset()
                  ) -> tuple[dict[str, str], list[dict[str, list[int]]], list[str], bool]:
    """Identifiers of ``texts`` (noise-masked inputs): ``(types, positions, masked, technical)``.

    ``placeholders`` (the input's :func:`metavariables`) are no identifiers where the text writes them bare
    (``True if ``file1`` is newer``), unless the input also calls them (``list(APPEND ...)`` beside ``<list>``).

    ``types`` maps a name to ``code`` or ``option``; ``positions[i]`` maps a name to its start
    offsets in ``texts[i]``; ``masked[i]`` is ``texts[i]`` with code blocks and spans blanked; ``technical``:
    the input has code spans or blocks (prose code shapes count only then).

    >>> types, where, _, _ = code_entities(['Use `dict.get()` or `__missing__()`; see os.path.join and --verbose.'])
    >>> sorted(types.items())
    [('--verbose', 'option'), ('__missing__', 'code'), ('dict.get', 'code'), ('os.path.join', 'code')]
    """
    joined = "\n".join(texts)
    quoted = quotes_code(joined)
    spans = [code_spans(t, quoted) for t in texts]
    types: dict[str, str] = {}
    plain_counts: Counter = Counter()
    span_names: dict[int, list[tuple[str, int, bool]]] = defaultdict(list)
    for i, chunk_spans in enumerate(spans):
        for start, _end, content in chunk_spans:
            for name, kind, shaped in _from_span(content):
                span_names[i].append((name, start, shaped))
                types.setdefault(name, kind)
                if not shaped:
                    plain_counts[name] += 1
    masked = [mask_code(t, s) for t, s in zip(texts, spans)]
    # code shapes in prose count only in a technical input (one with code spans or blocks): a novel's
    # "--Marley" is a dash and its "St.Paul" a typo
    technical = any(spans) or any(_blocks(t) for t in texts)
    prose: list[list[tuple[str, int, str, int]]] = []
    for text in masked if technical else ():
        hits = [(m.group(), m.start(), "option", m.end()) for m in _LONG_FLAG.finditer(text)]
        for pat in (_DUNDER, _SNAKE, _LOWER_CAMEL, _CALL, _DOTTED):
            hits += [(_fold(m.group()), m.start(), "code", m.end()) for m in pat.finditer(text)]
        prose.append(hits)
    dotted_names = {n for hits in prose for n, _p, _k, _e in hits if "." in n}
    shared_heads = Counter(n.split(".")[0] for n in dotted_names | {n for n in types if "." in n})
    for hits in prose:
        for name, _pos, kind, _end in hits:
            if "." in name and not (name in types or shared_heads[name.split(".")[0]] >= 2
                                    or name.split(".")[0] in types or name.count(".") >= 2):
                continue  # "setup.py", "e.g": a dotted word with nothing to say it is code
            if not _placeholder(name):
                types.setdefault(name, kind)
    # a plain word ("with", "None") is an identifier only when it recurs in code spans
    types = {n: k for n, k in types.items() if n not in plain_counts or plain_counts[n] >= 2 or _shaped(n)}
    if placeholders:  # a metavariable is a placeholder wherever it is written, unless the input calls it
        called = {m.group(1) for m in _CALLEE.finditer(joined)}
        types = {n: k for n, k in types.items() if n not in placeholders or n in called}
    positions: list[dict[str, list[int]]] = []
    prose += [[] for _ in range(len(masked) - len(prose))]
    for i, text in enumerate(masked):
        where: dict[str, list[int]] = defaultdict(list)
        for name, start, _flag in span_names.get(i, ()):
            if name in types:
                where[name].append(start)
        for name, start, _kind, _end in prose[i]:
            if name in types:
                where[name].append(start)
        positions.append(dict(where))
    # the name rules do not read identifiers either ("Numeric" of "Numeric_Type=Digit"); in a technical input a call's
    # arguments are separate keywords and values (found while the callee is still there), no run of words is one name
    masked = [_split_arguments(text) if technical else text for text in masked]
    masked = [_blank_all(text, [(a, b) for n, a, _k, b in hits if n in types]) if hits else text
              for text, hits in zip(masked, prose)]
    return types, positions, masked, technical


def _split_arguments(text: str) -> str:
    """``text`` with the spaces between the words of every call's argument list made commas (same length), so the
    name rules read each argument alone: ``project(MyProject NONE)``, ``find_package(Qt5 COMPONENTS Gui REQUIRED)``
    and ``ctest_start(GROUP SomeGroup QUIET)`` name no ``MyProject NONE`` or ``GROUP SomeGroup``."""
    spans = [m.span(1) for m in _CALL_ARGS.finditer(text)]
    if not spans:
        return text
    chars = list(text)
    for start, end in spans:
        for gap in re.finditer(r"(?<=\S)\s*[ \t](?=\S)", text[start:end]):  # a line break keeps its newline
            chars[start + gap.end() - 1] = ","
    return "".join(chars)


def _shaped(name: str) -> bool:
    return "." in name or "_" in name or name.startswith("-") or " " in name or any(c.isupper() for c in name[1:])


def prose_pattern(name: str, technical: bool = True) -> re.Pattern[str] | None:
    """Where an identifier is mentioned outside code spans (case-sensitive); ``None`` for a plain word,
    which is also a word of the prose and links only where it is marked as code."""
    if not technical or not _shaped(name) or " " in name:
        return None
    return re.compile(r"(?<![\w.-])" + re.escape(name) + r"(?:\(\))?(?![\w-]|\.\w)")


def acronym_definitions(text: str) -> dict[str, str]:
    """Acronym -> the long name it is defined as in ``text`` (``Application Programming Interface (API)``),
    only when the acronym's letters are the initials of the long name's words (function words optional).

    >>> acronym_definitions("An Application Programming Interface (API) and the central processing unit (CPU).")
    {'API': 'Application Programming Interface', 'CPU': 'central processing unit'}
    """
    out: dict[str, str] = {}
    for m in _ACRONYM_DEF.finditer(text):
        words, acronym = re.split(r"[ -]", m.group(1)), m.group(2).rstrip("s")
        for start in range(len(words)):  # the shortest tail of the phrase whose initials spell it
            tail = words[start:]
            full = "".join(w[0] for w in tail).upper()
            content = "".join(w[0] for w in tail if w not in ("of", "and", "for", "the")).upper()
            if acronym in (full, content) and tail[0] not in ("of", "and", "for", "the"):
                out.setdefault(acronym, " ".join(tail))
                break
    return out
