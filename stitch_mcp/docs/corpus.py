"""Where the documentation chunks come from.

1. Knowledge cards: Markdown files in rag_index/ (written by this project, shipped with it).
2. API reference extracted on this machine: doc comments of the installed CUDA toolkit headers
   (one chunk per documented symbol, with its signature) and `cuda-bindings` docstrings. This text
   is read from the user's own install at index time and never stored in the repository.
3. The user's own documents added with `stitch-mcp index add PATH` (Markdown, HTML, text).

Every chunk has an id usable in stitch://docs/{id}: only letters, digits and `_ . : - ~`.
"""

from __future__ import annotations

import glob
import hashlib
import html.parser
import logging
import os
import re
import site
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

PARSER_VERSION = "3"
KINDS = ("card", "header", "bindings", "user")
MAX_CHUNK_CHARS = 6000


@dataclass
class Chunk:
    id: str
    title: str
    source: str
    kind: str
    text: str
    symbols: list[str] = field(default_factory=list)
    src: str = ""  # the source key (file) this chunk came from
    dense: list[str] = field(default_factory=list)  # passages to embed; empty: lexical only

    def to_dict(self) -> dict:
        return asdict(self)


_ID_BAD = re.compile(r"[^A-Za-z0-9_.:~-]+")


def safe_id(text: str) -> str:
    return _ID_BAD.sub("-", text).strip("-") or "x"


def short_hash(text: str, n: int = 8) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:n]


def split_long(chunk: Chunk, limit: int = MAX_CHUNK_CHARS) -> list[Chunk]:
    """Split a chunk longer than `limit` at line boundaries into parts id~1, id~2, ..."""
    if len(chunk.text) <= limit:
        return [chunk]
    parts, cur = [], []
    size = 0
    for line in chunk.text.splitlines(keepends=True):
        if size + len(line) > limit and cur:
            parts.append("".join(cur))
            cur, size = [], 0
        cur.append(line)
        size += len(line)
    if cur:
        parts.append("".join(cur))
    out = []
    for i, text in enumerate(parts, 1):
        syms = [s for s in chunk.symbols if s in text] or chunk.symbols[:1]
        if i > 1 and chunk.symbols and chunk.symbols[0] not in syms:
            syms = syms  # the main symbol stays with part 1
        out.append(Chunk(id=f"{chunk.id}~{i}", title=f"{chunk.title} (part {i}/{len(parts)})", source=chunk.source,
                         kind=chunk.kind, text=(f"{chunk.title}\n\n" if i > 1 else "") + text,
                         symbols=syms if i > 1 else list(dict.fromkeys([chunk.symbols[0], *syms]))
                         if chunk.symbols else [],
                         src=chunk.src, dense=chunk.dense if i == 1 else []))
    return out


# ---------------------------------------------------------------------------------------- cards


def cards_dir() -> Path:
    """rag_index/ beside the package in a checkout, or inside the package once installed."""
    env = os.environ.get("STITCH_CARDS_DIR")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent.parent  # stitch_mcp/
    for cand in (here / "rag_index", here.parent / "rag_index"):
        if cand.is_dir() and any(cand.glob("*.md")):
            return cand
    return here / "rag_index"


_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.S)


def parse_card(path: Path, text: str | None = None) -> Chunk:
    text = text if text is not None else path.read_text(encoding="utf-8")
    meta: dict[str, object] = {}
    m = _FRONT.match(text)
    body = text
    if m:
        body = text[m.end():]
        for line in m.group(1).splitlines():
            if ":" not in line:
                continue
            key, value = line.split(":", 1)
            value = value.strip()
            if value.startswith("[") and value.endswith("]"):
                meta[key.strip()] = [v.strip().strip("'\"`") for v in value[1:-1].split(",") if v.strip()]
            else:
                meta[key.strip()] = value.strip("'\"")
    card_id = str(meta.get("id") or path.stem)
    title = str(meta.get("title") or path.stem)
    source = str(meta.get("source") or "")
    symbols = list(meta.get("symbols") or [])  # type: ignore[arg-type]
    body = body.strip()
    full = f"# {title}\n\n{body}\n\nBased on: {source}\n" if source else f"# {title}\n\n{body}\n"
    # passages to embed: the title with each paragraph group (~600 characters)
    dense, cur = [], title
    for para in re.split(r"\n\s*\n", body):
        para = para.strip()
        if not para:
            continue
        if len(cur) + len(para) > 600 and cur != title:
            dense.append(cur)
            cur = title
        cur += "\n" + para
    dense.append(cur)
    return Chunk(id=f"card:{safe_id(card_id)}", title=title, source=source or str(path.name), kind="card",
                 text=full, symbols=symbols, src=f"card:{path.name}", dense=dense)


def card_files(root: Path | None = None) -> list[Path]:
    root = root or cards_dir()
    return sorted(p for p in root.glob("*.md") if p.name.lower() != "readme.md")


# -------------------------------------------------------------------------------------- headers

_EXCLUDE = re.compile(r"(^cupti|^nvperf|EGL|egl|GL|gl_interop|VDPAU|vdpau|^generated_|Typedefs\.h$|^nv_decode|"
                      r"^fatbinary|^cudaProfiler|^host_defines|^host_config)")
# headers whose symbols also get a dense vector (their name and first sentence): what kernel
# writers ask about in plain English; everything else is found lexically.
_DENSE_HEADERS = re.compile(r"(cuda_runtime_api\.h|cuda_runtime\.h|sm_\d+_intrinsics\.h|cuda_pipeline|cuda_awbarrier|"
                            r"mma\.h|cooperative_groups|cublasLt\.h|cudnn_graph|nccl\.h|nvToolsExt\.h)")


def default_header_roots() -> list[Path]:
    roots: list[Path] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            roots.append(Path(os.environ[var]) / "include")
    roots.append(Path("/usr/local/cuda/include"))
    sp: list[str] = []
    try:
        sp += site.getsitepackages()
    except AttributeError:
        pass
    try:
        sp.append(site.getusersitepackages())
    except AttributeError:
        pass
    sp += [p for p in sys.path if p.endswith("site-packages")]
    for p in dict.fromkeys(sp):
        roots += sorted(Path(x) for x in glob.glob(os.path.join(p, "nvidia", "*", "include")))
    out, seen = [], set()
    for r in roots:
        try:
            real = r.resolve()
        except OSError:
            continue
        if real.is_dir() and real not in seen:
            seen.add(real)
            out.append(real)
    return out


def header_files(roots: list[Path] | None = None) -> list[Path]:
    """Headers to index: an explicit STITCH_DOC_HEADERS list (files or folders), else the toolkit's."""
    env = os.environ.get("STITCH_DOC_HEADERS")
    files: list[Path] = []
    if env is not None and roots is None:
        for item in filter(None, env.split(os.pathsep)):
            p = Path(item)
            if p.is_dir():
                files += sorted(q for q in p.iterdir() if q.suffix in (".h", ".hpp", ".cuh") and q.is_file())
            elif p.is_file():
                files.append(p)
        return files
    for root in roots if roots is not None else default_header_roots():
        pats = ["*.h", "*.hpp", "crt/*.h", "crt/*.hpp", "cooperative_groups/*.h", "cooperative_groups/details/*.h",
                "nvtx3/nvToolsExt.h", "cccl/cub/block/*.cuh", "cccl/cub/warp/*.cuh", "cccl/cub/device/*.cuh",
                "cccl/cuda/pipeline", "cccl/cuda/barrier", "cccl/cuda/annotated_ptr"]
        for pat in pats:
            for q in sorted(root.glob(pat)):
                if q.is_file() and not _EXCLUDE.search(q.name):
                    files.append(q)
    out, seen = [], set()
    for f in files:
        r = f.resolve()
        if r not in seen:
            seen.add(r)
            out.append(f)
    return out


_COMMENT = re.compile(r"/\*[*!](?![*/])(.*?)\*/|((?:[ \t]*//[/!](?!/)[^\n]*\n)+)", re.S)
_MACRO_CALL = re.compile(r"\b(?:__attribute__|__declspec|__dv|[A-Z_][A-Z0-9_]{3,})\s*\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
_FNPTR = re.compile(r"\(\s*(?:[A-Za-z_]\w*\s+)?\*\s*([A-Za-z_]\w*)\s*\)\s*\(")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_KEYWORDS = {"const", "struct", "enum", "union", "typedef", "extern", "static", "inline", "unsigned", "signed",
             "void", "int", "char", "float", "double", "long", "short", "volatile", "class", "template", "typename",
             "return", "if", "else", "namespace", "using", "operator", "sizeof", "defined", "public", "private"}


def clean_doc(raw: str) -> str:
    lines = []
    for line in raw.splitlines():
        line = re.sub(r"^\s*(?://[/!]<?|\*(?!\*))?\s?", "", line, count=1)
        lines.append(line.rstrip())
    text = "\n".join(lines).lstrip("<").strip()
    text = re.sub(r"\\internal.*?(\\endinternal|$)", "", text, flags=re.S)
    text = re.sub(r"(?m)^\s*[\\@](ingroup|defgroup|addtogroup|{|}|name|file|hideinitializer|cond|endcond)\b.*$", "", text)
    text = re.sub(r"[\\@](brief|details|short|rst|endrst)\s*", "", text)
    text = re.sub(r"[\\@]param(?:\[[a-z, ]+\])?\s+(\w+)\s*-?\s*", r"- `\1`: ", text)
    text = re.sub(r"[\\@]tparam\s+(\w+)\s*", r"- template `\1`: ", text)
    text = re.sub(r"[\\@]returns?\b\s*", "Returns: ", text)
    text = re.sub(r"[\\@]retval\s+(\S+)", r"Returns \1", text)
    text = re.sub(r"[\\@]sa\b\s*", "See also: ", text)
    text = re.sub(r"[\\@](note|warning|deprecated|par|pre|post)\b\s*", lambda m: m.group(1).capitalize() + ": ", text)
    text = re.sub(r"\\(?:note_\w+|notefnerr|ref|copydoc)\b\s*", "", text)
    text = re.sub(r"(?m)^\s*\\(exception-guarantee|behavior|req)\b.*$", "", text)
    text = re.sub(r"[\\@](?:p|c|a|e|b|em)\s+([\w:.\[\]*&]*\w)", r"`\1`", text)
    text = re.sub(r"[\\@](?:code|endcode)(\{[^}]*\})?", "```", text)
    text = re.sub(r"::(?=[A-Za-z_])", "", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def _skip_space_and_pp(text: str, pos: int) -> int:
    n = len(text)
    while pos < n:
        m = re.compile(r"\s+").match(text, pos)
        if m:
            pos = m.end()
            continue
        if text.startswith("#", pos) and not re.match(r"#\s*define\b", text[pos:pos + 20]):
            end = text.find("\n", pos)
            while end != -1 and text[end - 1] == "\\":
                end = text.find("\n", end + 1)
            pos = n if end == -1 else end + 1
            continue
        if text.startswith("//", pos) and not text.startswith(("///", "//!"), pos):
            end = text.find("\n", pos)
            pos = n if end == -1 else end + 1
            continue
        if text.startswith("/*", pos) and not text.startswith(("/**", "/*!"), pos):
            end = text.find("*/", pos)
            pos = n if end == -1 else end + 2
            continue
        break
    return pos


def _match_brace(text: str, start: int) -> int:
    """Index just past the '}' matching the '{' at start (comments skipped)."""
    depth, i, n = 0, start, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j == -1 else j + 2
            continue
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j == -1 else j + 1
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _decl_name(decl: str) -> str | None:
    d = re.sub(r"template\s*<[^;{]*?>\s*", "", decl)
    m = re.match(r"#\s*define\s+([A-Za-z_]\w*)", d)
    if m:
        return m.group(1)
    d = _MACRO_CALL.sub(" ", d)
    m = _FNPTR.search(d)
    if m:
        return m.group(1)
    m = re.search(r"\boperator\s*([^\s(]+|\(\))\s*\(", d)
    if m:
        return "operator" + m.group(1)
    if "(" in d:
        before = d[:d.index("(")]
        ids = [i for i in _IDENT.findall(before) if i not in _KEYWORDS]
        return ids[-1] if ids else None
    d = re.sub(r"\[[^\]]*\]", "", d)
    d = d.split("=")[0]
    ids = [i for i in _IDENT.findall(d) if i not in _KEYWORDS]
    return ids[-1] if ids else None


def _signature(decl: str) -> str:
    s = re.sub(r"//[^\n]*", "", decl)
    s = re.sub(r"__dv\(([^()]*)\)", r"= \1", s)
    s = re.sub(r"\s+", " ", s).strip()
    s = re.sub(r"^extern\s+", "", s)
    return s[:600]


def _members(body: str, sep: str) -> list[tuple[str, str]]:
    """(declaration, doc) for each member of an enum (sep ',') or struct (sep ';') body."""
    inner = body[body.find("{") + 1: body.rfind("}")]
    segs: list[list] = []  # [decl, [docs before], [docs after]]
    cur_decl, pending = [], []
    pos = 0
    depth = 0
    items: list[tuple[str, str]] = []
    last: list | None = None
    # walk: collect comments and text, split at top-level separators
    token = re.compile(r"/\*.*?\*/|//[^\n]*\n?|[{}()]|" + re.escape(sep), re.S)
    for m in token.finditer(inner):
        cur_decl.append(inner[pos:m.start()])
        pos = m.end()
        t = m.group(0)
        if t.startswith("/*") or t.startswith("//"):
            is_doc = t.startswith(("/**", "/*!", "///", "//!"))
            if not is_doc:
                continue
            doc = clean_doc(t[3:-2] if t.startswith("/*") else t)
            if t.startswith(("/**<", "/*!<", "///<", "//!<")):
                if "".join(cur_decl).strip() and depth == 0:
                    pending.append(doc)  # trailing doc of a member not yet closed (last one)
                elif last is not None:
                    last[1] = (last[1] + " " + doc).strip()
            elif depth == 0:
                pending.append(doc)
            continue
        if t in "{(":
            depth += 1
            cur_decl.append(t)
        elif t in "})":
            depth -= 1
            cur_decl.append(t)
        elif depth == 0:
            decl = re.sub(r"\s+", " ", "".join(cur_decl)).strip()
            if decl:
                last = [decl, " ".join(pending)]
                segs.append(last)
            cur_decl, pending = [], []
        else:
            cur_decl.append(t)
    cur_decl.append(inner[pos:])
    decl = re.sub(r"\s+", " ", "".join(cur_decl)).strip()
    if decl:
        segs.append([decl, " ".join(pending)])
    elif pending and last is not None:
        last[1] = (last[1] + " " + " ".join(pending)).strip()
    for decl, doc in segs:
        items.append((decl, doc))
    return items


def extract_header(path: Path, text: str | None = None, label: str | None = None) -> list[Chunk]:
    """One chunk per documented symbol of a C/C++ header (doc comments /** */, /*! */, ///, //!)."""
    if text is None:
        text = path.read_text(encoding="utf-8", errors="replace")
    fname = label or path.name
    stem = safe_id(fname.rsplit(".", 1)[0] if not fname.endswith(".cuh") else fname[:-4])
    dense_file = bool(_DENSE_HEADERS.search(str(path)))
    by_symbol: dict[str, Chunk] = {}  # in the order first declared
    for doc, line_no, decl, body, name in _documented_decls(text):
        if not body:
            name = _decl_name(decl)
        if not name or not doc:
            continue
        members_text, member_syms = _members_text(decl, body) if body else ("", [])
        sig = _signature(decl)
        if name in by_symbol:
            old = by_symbol[name]
            if sig not in old.text:
                old.text += f"\n\nAlso declared as: `{sig}`\n\n{doc}"
            old.symbols = list(dict.fromkeys(old.symbols + member_syms))
            continue
        first = re.split(r"(?<=[.!?])\s", re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0], maxsplit=1)[0]
        first = re.sub(r"\s+", " ", first)[:240]
        text_out = f"`{sig}`\n\n{doc}" + (("\n\nMembers:\n" + members_text) if members_text else "")
        sym_id = safe_id(name) if re.fullmatch(r"\w+", name) else f"{safe_id(name)}-{short_hash(name, 6)}"
        by_symbol[name] = Chunk(id=f"hdr:{stem}:{sym_id}", title=f"{name} ({fname})",
                                source=f"{path}:{line_no} ({name})", kind="header", text=text_out,
                                symbols=[name, *member_syms], src="", dense=[f"{name}: {first}"] if dense_file else [])
    out: list[Chunk] = []
    for chunk in by_symbol.values():
        out += split_long(chunk)
    return out


def _documented_decls(text: str) -> Iterator[tuple[str, int, str, str, str | None]]:
    """(doc, line, declaration, body, name) for each doc comment that a declaration follows. A type
    with a body ({...}) comes with its members' body and its name; other declarations without them."""
    pos = 0
    n = len(text)
    while True:
        m = _COMMENT.search(text, pos)
        if not m:
            return
        pos = m.end()
        raw = m.group(1) if m.group(1) is not None else m.group(2)
        if raw.lstrip().startswith("<") or (m.group(2) and re.match(r"\s*//[/!]<", m.group(2))):
            continue  # a trailing doc (/**< */, ///<) of what came before; _members reads those of members
        start = _skip_space_and_pp(text, m.end())
        if start >= n or text.startswith(("/**", "/*!", "///", "//!"), start):
            continue  # a group or file comment
        found, pos = _read_declaration(text, start, pos)
        if found is not None:
            decl, body, name = found
            yield clean_doc(raw), text.count("\n", 0, start) + 1, decl, body, name


def _read_declaration(text: str, start: int, pos: int) -> tuple[tuple[str, str, str | None] | None, int]:
    """The declaration at `start` as (declaration, body, name), or None to skip it; and the
    position past what was read (never before `pos`)."""
    if re.match(r"#\s*define\b", text[start:start + 20]):
        end = text.find("\n", start)
        while end != -1 and text[end - 1] == "\\":
            end = text.find("\n", end + 1)
        end = len(text) if end == -1 else end
        return (text[start:end], "", None), max(pos, end)
    i = _declaration_end(text, start)
    if i is None:
        return None, pos
    decl = text[start:i]
    if text[i] != "{":
        return (decl, "", None), max(pos, i + 1)
    close = _match_brace(text, i)
    if re.match(r"\s*(typedef\s+)?(enum|struct|union|class)\b", decl):
        return _read_type(text, decl, i, close, pos)
    if re.match(r"\s*(extern\s+\"C(\+\+)?\"|namespace\b)", decl):
        return None, max(pos, i + 1)  # a linkage block or namespace: its contents are declarations
    return (decl, "", None), max(pos, close)  # an inline function body


def _declaration_end(text: str, start: int) -> int | None:
    """Index of the ';' or '{' at paren depth 0 that ends the declaration at `start`; None at the
    end of the text or past 3000 characters."""
    n = len(text)
    i, depth = start, 0
    while i < n:
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth <= 0 and c in ";{":
            break
        elif c == "/" and text.startswith("/*", i):
            j = text.find("*/", i)
            i = n if j == -1 else j + 2
            continue
        i += 1
        if i - start > 3000:
            break
    if i >= n or i - start > 3000:
        return None
    return i


def _read_type(text: str, decl: str, brace: int, close: int, pos: int) -> tuple[tuple[str, str, str | None], int]:
    """An enum, struct, union or class with a body from `brace` to `close`: named by the typedef
    name after its body if there is one, else by its tag."""
    semi = text.find(";", close)
    tail = text[close:semi if semi != -1 else close]
    body = text[brace:close]
    names = [x for x in _IDENT.findall(_MACRO_CALL.sub(" ", tail)) if x not in _KEYWORDS]
    head = [x for x in _IDENT.findall(_MACRO_CALL.sub(" ", decl)) if x not in _KEYWORDS]
    head = [x for x in head if not x.startswith("__device_builtin") and not x.isupper()] or head
    name = (names[0] if names else (head[-1] if head else None))
    decl = decl.strip() + " { ... }" + (" " + tail.strip() if tail.strip() else "")
    return (decl, body, name), max(pos, semi + 1 if semi != -1 else close)


def _members_text(decl: str, body: str) -> tuple[str, list[str]]:
    """A type's members as a Markdown list, and the names of an enum's members (symbols to search by)."""
    kind_word = re.match(r"\s*(?:typedef\s+)?(\w+)", decl).group(1)
    sep = "," if kind_word == "enum" else ";"
    lines, member_syms = [], []
    for mdecl, mdoc in _members(body, sep):
        if kind_word == "enum":
            mname = _IDENT.match(mdecl)
            if mname:
                member_syms.append(mname.group(0))
        lines.append(f"- `{mdecl}`" + (f": {mdoc}" if mdoc else ""))
    members_text = "\n".join(lines)
    if len(members_text) > 40000:
        members_text = members_text[:40000] + "\n..."
    return members_text, member_syms


# ------------------------------------------------------------------------------- cuda-bindings


def bindings_modules() -> list[str]:
    return ["cuda.bindings.runtime", "cuda.bindings.driver", "cuda.bindings.nvrtc"]


def bindings_version() -> str | None:
    try:
        from importlib.metadata import version  # noqa: PLC0415

        return version("cuda-bindings")
    except Exception:
        return None


def extract_bindings(module_name: str) -> list[Chunk]:
    """One chunk per documented function or class of a cuda-bindings module."""
    import importlib  # noqa: PLC0415
    import inspect  # noqa: PLC0415

    try:
        mod = importlib.import_module(module_name)
    except Exception as exc:  # not installed, or no driver library
        log.info("cuda-bindings module %s not indexed: %s", module_name, exc)
        return []
    short = module_name.rsplit(".", 1)[-1]
    out = []
    for name in sorted(dir(mod)):
        if name.startswith("_"):
            continue
        try:
            obj = getattr(mod, name)
        except Exception:
            continue
        doc = inspect.getdoc(obj) if callable(obj) else None
        if not doc or len(doc) < 20 or getattr(obj, "__module__", module_name).split(".")[0] not in ("cuda", None):
            continue
        try:
            sig = f"{name}{inspect.signature(obj)}"
        except (TypeError, ValueError):
            sig = name
        doc = re.sub(r":py:\w+:`~?\.?([^`]+)`", r"`\1`", doc)
        doc = re.sub(r"(?m)^\s*\.\. \w+::\s*", "", doc)
        chunk = Chunk(id=f"py:{short}:{safe_id(name)}", title=f"{module_name}.{name}",
                      source=f"{module_name}.{name} (cuda-bindings {bindings_version() or ''})".strip(),
                      kind="bindings", text=f"`{sig}`\n\n{doc}", symbols=[name, f"{module_name}.{name}"],
                      src=f"bindings:{module_name}", dense=[])
        out += split_long(chunk)
    return out


# ------------------------------------------------------------------------------- user documents

USER_SUFFIXES = {".md", ".markdown", ".txt", ".rst", ".html", ".htm", ".text"}


class _HTMLText(html.parser.HTMLParser):
    """HTML to text with Markdown-style headings; scripts, styles and navigation dropped."""

    SKIP = {"script", "style", "nav", "header", "footer", "noscript", "svg"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        elif tag == "title":
            self._in_title = True
        elif re.fullmatch(r"h[1-6]", tag):
            self.parts.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag in ("p", "div", "br", "li", "tr", "pre", "section", "table", "dt", "dd"):
            self.parts.append("\n" + ("- " if tag == "li" else ""))

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag == "title":
            self._in_title = False
        elif re.fullmatch(r"h[1-6]", tag) or tag in ("p", "pre", "table"):
            self.parts.append("\n\n")

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        elif not self.skip:
            self.parts.append(data)


def html_to_text(text: str) -> tuple[str, str]:
    p = _HTMLText()
    try:
        p.feed(text)
        p.close()
    except Exception:
        pass
    body = "".join(p.parts)
    body = re.sub(r"[ \t\r\f\v]+", " ", body)
    body = re.sub(r"\n\s*\n\s*(\n\s*)+", "\n\n", body)
    return p.title.strip(), body.strip()


def user_files(folder: Path) -> list[Path]:
    if folder.is_file():
        return [folder] if folder.suffix.lower() in USER_SUFFIXES else []
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in USER_SUFFIXES
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def extract_user(path: Path, root: Path, text: str | None = None) -> list[Chunk]:
    raw = text if text is not None else path.read_text(encoding="utf-8", errors="replace")
    doc_title = path.stem
    if path.suffix.lower() in (".html", ".htm"):
        t, raw = html_to_text(raw)
        doc_title = t or doc_title
    rel = path.name if root.is_file() else str(path.relative_to(root))
    folder_key = f"{safe_id(root.name)[:24]}-{short_hash(str(root), 4)}"
    # sections at headings, then pieces of at most ~1500 characters at paragraph breaks
    sections: list[tuple[str, str]] = []
    heading, buf = doc_title, []
    for line in raw.splitlines():
        m = re.match(r"^(#{1,4})\s+(.*\S)\s*$", line)
        if m:
            if "".join(buf).strip():
                sections.append((heading, "\n".join(buf).strip()))
            heading, buf = m.group(2).strip(), []
        else:
            buf.append(line)
    if "".join(buf).strip():
        sections.append((heading, "\n".join(buf).strip()))
    out = []
    n = 0
    for head, body in sections:
        pieces, cur = [], ""
        for para in re.split(r"\n\s*\n", body):
            if len(cur) + len(para) > 1500 and cur:
                pieces.append(cur)
                cur = ""
            cur = (cur + "\n\n" + para).strip()
        if cur:
            pieces.append(cur)
        for piece in pieces:
            n += 1
            title = head if head == doc_title else f"{doc_title}: {head}"
            out.append(Chunk(id=f"user:{folder_key}:{safe_id(rel)}:{n}", title=title[:200],
                             source=f"{path} § {head}"[:500], kind="user", text=f"## {head}\n\n{piece}",
                             symbols=[], src="", dense=[f"{head}\n{piece}"[:1200]]))
    return out
