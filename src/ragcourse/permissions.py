"""Who may read what: documents' groups, users' groups, and retrieval that respects them (chapter 11).

Implements `Access` (document -> groups allowed, user -> groups), `load_access` (a JSON file, checked),
and the two ways to filter a ranking: `post_filter` (the engine returns its top `depth`, then the
unreadable chunks are dropped) and `pre_filter` (a retriever over the readable chunks only, with the
reader's own BM25 statistics). `leaks`
counts what a user sees of documents they may not read; `evaluation.filter_trials` asks every query as a user of each
group, with no filter, the post-filter and the pre-filter. A document with no entry is readable by nobody.

Leaves out: permissions finer than a document, nested groups, and revoking answers already cached.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .pipeline import Retriever


class PermissionError_(ValueError):
    """A permissions file or a user name that cannot be used as given."""


class HasDoc(Protocol):
    """Anything that names the document it came from (a `Chunk`)."""

    doc_id: str


@dataclass(frozen=True)
class Access:
    """Which groups may read each document, and which groups each user belongs to."""

    documents: Mapping[str, frozenset[str]]
    users: Mapping[str, frozenset[str]]

    def groups_of(self, user: str) -> frozenset[str]:
        """The user's groups; an unknown user is an error, never 'no groups'.

        >>> Access({}, {"ana": frozenset({"dev"})}).groups_of("ana")
        frozenset({'dev'})
        """
        if user not in self.users:
            raise PermissionError_(f"user {user!r} is not in the permissions file")  # other users' names stay private
        return self.users[user]

    def readable(self, groups: Iterable[str]) -> frozenset[str]:
        """The documents a reader in `groups` may read: those sharing at least one group with them.

        >>> Access({"a": frozenset({"dev"}), "b": frozenset({"ops"}), "c": frozenset()}, {}).readable({"dev"})
        frozenset({'a'})
        """
        groups = frozenset(groups)
        return frozenset(doc for doc, allowed in self.documents.items() if allowed & groups)

    def readable_by(self, user: str) -> frozenset[str]:
        """The documents `user` may read (`readable` of their groups; an unknown user is an error).

        >>> Access({"a": frozenset({"dev"}), "b": frozenset({"ops"})}, {"ana": frozenset({"dev"})}).readable_by("ana")
        frozenset({'a'})
        """
        return self.readable(self.groups_of(user))

    def unlisted(self, doc_ids: Iterable[str]) -> list[str]:
        """Documents with no permission entry: readable by nobody, and worth saying so.

        >>> Access({"a": frozenset({"dev"})}, {}).unlisted(["a", "b"])
        ['b']
        """
        return sorted(set(doc_ids) - set(self.documents))


def _groups(value: object, where: str) -> frozenset[str]:
    """A list of group names, checked."""
    if not isinstance(value, list) or not all(isinstance(g, str) and g for g in value):
        raise PermissionError_(f"{where}: expected a list of group names, got {value!r}")
    return frozenset(value)


def parse_access(data: object, source: str = "permissions") -> Access:
    """An `Access` from parsed JSON ``{"documents": {doc: [groups]}, "users": {user: [groups]}}``.

    >>> parse_access({"documents": {"a": ["dev"]}, "users": {"ana": ["dev"]}}).readable({"dev"})
    frozenset({'a'})
    """
    if not isinstance(data, dict) or set(data) != {"documents", "users"}:
        raise PermissionError_(f"{source}: expected an object with exactly 'documents' and 'users'")
    parts = {}
    for part in ("documents", "users"):
        if not isinstance(data[part], dict):
            raise PermissionError_(f"{source}: '{part}' must map names to lists of groups")
        parts[part] = {name: _groups(groups, f"{source}: {part}[{name!r}]") for name, groups in data[part].items()}
    return Access(parts["documents"], parts["users"])


def load_access(path: Path) -> Access:
    """Read and check a permissions file (errors name the file and the entry)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PermissionError_(f"{path}: cannot read permissions: {error}") from error
    return parse_access(data, str(path))



def one_user_per_group(access: Access) -> dict[str, str]:
    """Group -> the first user whose only group it is (chapter 11 asks as each); a group with none is left out.

    >>> docs = {"a": frozenset({"dev"}), "b": frozenset({"ops"})}
    >>> one_user_per_group(Access(docs, {"ana": frozenset({"dev", "ops"}), "bo": frozenset({"dev"})}))
    {'dev': 'bo'}
    """
    groups = sorted({g for allowed in access.documents.values() for g in allowed})
    only = {g: [u for u, gs in access.users.items() if gs == {g}] for g in groups}
    return {g: users[0] for g, users in only.items() if users}

def leaks(ranked: Sequence[HasDoc], allowed: frozenset[str]) -> int:
    """How many of the ranked chunks come from documents outside `allowed`.

    >>> from types import SimpleNamespace as C
    >>> leaks([C(doc_id="a"), C(doc_id="b"), C(doc_id="a")], frozenset({"a"}))
    1
    """
    return sum(1 for chunk in ranked if chunk.doc_id not in allowed)


def post_filter(ranked: Sequence[HasDoc], allowed: frozenset[str], depth: int, k: int) -> list:
    """The engine returns its top `depth`; the unreadable ones are dropped; at most k remain.

    With depth = k, every unreadable chunk in the engine's top k costs the user one result:

    >>> from types import SimpleNamespace as C
    >>> ranked = [C(doc_id=d) for d in "abab"]
    >>> [c.doc_id for c in post_filter(ranked, frozenset({"a"}), depth=2, k=2)]
    ['a']
    """
    return [chunk for chunk in ranked[:depth] if chunk.doc_id in allowed][:k]


def pre_filter(retriever: Retriever, allowed: frozenset[str]) -> Retriever:
    """A retriever over the readable chunks only: nothing else is ever scored, and BM25's statistics
    (document frequencies, average length) are the reader's own. Dense vectors are reused, not re-embedded."""
    keep = [i for i, chunk in enumerate(retriever.chunks) if chunk.doc_id in allowed]
    if not keep:
        raise PermissionError_("this reader may read no document of the index")
    return retriever.with_chunks([retriever.chunks[i] for i in keep], retriever.dense.vectors[keep])
