"""The `ragcourse` command line: chunk a file, search or evaluate the course corpus, index a folder.

    ragcourse chunk notes.md --strategy E          # chunks as JSON lines, offsets included
    ragcourse search "how do I add a caption to a figure" --method hybrid -k 4 --cut 0.6 --rerank
    ragcourse evaluate --strategy E --method hybrid --rerank   # Recall@k and MRR with Wilson intervals
    ragcourse evaluate --questions my-questions.jsonl          # your own ground truth, same format
    ragcourse evaluate --method hybrid --engine qdrant         # the same table, searched by Qdrant
    ragcourse index ./my-docs --out ./my-index      # ingest a folder; failures listed, nothing lost
    ragcourse query ./my-index "question"

Each subcommand is a thin shell over the package's functions; nothing here is taught in the book.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path


def _chunk(args: argparse.Namespace) -> int:
    from .chunking import chunk
    from .corpus import Document

    path = Path(args.file)
    document = Document(id=path.stem, title=args.title or path.stem, text=path.read_text(encoding="utf-8"))
    for piece in chunk(document, args.strategy, target=args.target, overlap=args.overlap):
        print(json.dumps(asdict(piece), ensure_ascii=False))
    return 0


def _reranked_hits(retriever, query: str, k: int, method: str, depth: int) -> list:
    """The first stage's top `depth` reranked by `default_reranker()`, cut to k; distances kept."""
    from .dense import Hit
    from .rerank import default_reranker, rerank

    shortlist = retriever.retrieve(query, k=max(k, depth), method=method)
    distance = {h.chunk: h.distance for h in shortlist}
    reranked = rerank(default_reranker(), query, [h.chunk for h in shortlist], top=k)
    return [Hit(r.chunk, distance[r.chunk], r.rank) for r in reranked]


def _search(args: argparse.Namespace) -> int:
    from .gate import NoAnswer, gate
    from .pipeline import build

    retriever = build(args.strategy)
    if args.rerank:
        hits = _reranked_hits(retriever, args.query, args.k, args.method, args.depth)
    else:
        hits = retriever.retrieve(args.query, k=args.k, method=args.method)
    if args.cut is not None:
        result = gate(hits, args.cut, k=args.k, query=args.query)
        if isinstance(result, NoAnswer):
            print(result)
            return 0
        hits = result.hits
    for hit in hits:
        c = hit.chunk
        print(f"[{hit.rank}] d={hit.distance:.3f}  {c.doc_id} > {c.section}  #char={c.start},{c.end}")
        print("    " + c.content[:200].replace("\n", " ") + ("..." if len(c.content) > 200 else ""))
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from .evaluation import evaluate, summarize
    from .groundtruth import load_questions, queries
    from .pipeline import build

    if args.engine_url and args.engine == "ragcourse":
        raise ValueError(f"--engine-url={args.engine_url!r} needs --engine qdrant (choices: ragcourse, qdrant)")
    retriever = build(args.strategy)
    qs = queries(load_questions(args.questions) if args.questions else load_questions())
    ranker, label = retriever, f"{args.strategy}/{args.method}"
    if args.engine != "ragcourse":  # the same chunks, vectors and BM25 weights, searched by an engine
        from .engines import connect

        ranker = connect(args.engine, url=args.engine_url)
        ranker.index(retriever)
        label += f" on {args.engine}"
    rankings = ranker.rankings(qs, args.method)
    if args.rerank:
        from .rerank import default_reranker, rerank_head

        reranker = default_reranker()
        rankings = {q.id: rerank_head(reranker, q.text, rankings[q.id], args.depth) for q in qs}
        label += f" + {reranker.name}, top {args.depth}"
    table = summarize(evaluate(rankings, qs), label)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


def _index(args: argparse.Namespace) -> int:
    from .dense import load_embedder
    from .index import ingest_folder

    embedder = load_embedder()
    report = ingest_folder(Path(args.folder), embed=embedder.encode, model_name=embedder.name,
                           dim=embedder.dim, strategy=args.strategy)
    report.index.save(Path(args.out))
    print(report.summary())
    return 1 if report.failed else 0


def _query(args: argparse.Namespace) -> int:
    from .dense import load_embedder
    from .index import Index

    embedder = load_embedder()
    index = Index.load(Path(args.index))
    index.check_compatible(embedder.name, embedder.dim)
    for hit in index.search(embedder.encode_query(args.query), k=args.k, model_name=embedder.name):
        print(f"[{hit.rank}] d={hit.distance:.3f}  {hit.chunk.doc_id}  #char={hit.chunk.start},{hit.chunk.end}")
    return 0


def _count(name: str):
    """An argparse type for a count >= 1 (-k, --depth), checked by `dense.check_k`."""
    from .dense import check_k

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}={value!r}: expected an integer >= 1") from None
        try:
            return check_k(number, name)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return parse


def parser() -> argparse.ArgumentParser:
    from .chunking import STRATEGIES
    from .pipeline import METHODS

    p = argparse.ArgumentParser(prog="ragcourse", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("chunk", help="chunk a Markdown file and print JSON lines")
    c.add_argument("file")
    c.add_argument("--title", default=None)
    s = sub.add_parser("search", help="search the course corpus")
    e = sub.add_parser("evaluate", help="score a strategy on the ground truth")
    i = sub.add_parser("index", help="ingest a folder of text/Markdown files into an index")
    r = sub.add_parser("query", help="query an index built by `ragcourse index`")
    for q in (c, s, e, i):
        q.add_argument("--strategy", default="E", choices=list(STRATEGIES))
    for q, default in ((s, "hybrid"), (e, "dense")):
        q.add_argument("--method", default=default, choices=list(METHODS))
    for q in (s, r):
        q.add_argument("-k", type=_count("k"), default=4, help="how many chunks to show (default 4)")
    for q in (s, e):
        q.add_argument("--rerank", action="store_true",
                       help="rerank the first stage's top --depth with the default reranker (chapter 5)")
        q.add_argument("--depth", type=_count("depth"), default=25, help="shortlist size for --rerank (default 25)")
    c.add_argument("--target", type=int, default=512)
    c.add_argument("--overlap", type=int, default=64)
    c.set_defaults(run=_chunk)
    s.add_argument("query")
    s.add_argument("--cut", type=float, default=None, help="cosine-distance gate; NO ANSWER when nothing passes")
    s.set_defaults(run=_search)
    e.add_argument("--questions", default=None, help="a questions JSONL file (default: the course's 32)")
    e.add_argument("--engine", default="ragcourse", choices=["ragcourse", "qdrant"],
                   help="search with the package (default) or Qdrant, local mode unless --engine-url")
    e.add_argument("--engine-url", default=None,
                   help="a Qdrant server or cluster (default: $RAGCOURSE_QDRANT_URL, else in-process)")
    e.set_defaults(run=_evaluate)
    i.add_argument("folder")
    i.add_argument("--out", required=True)
    i.set_defaults(run=_index)
    r.add_argument("index")
    r.add_argument("query")
    r.set_defaults(run=_query)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, RuntimeError, OSError) as err:
        print(f"ragcourse {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
