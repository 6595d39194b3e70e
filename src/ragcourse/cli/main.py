"""The `ragcourse` command line: chunk a file, index a folder, query it (or the course corpus), evaluate.

    ragcourse chunk notes.md --strategy E          # chunks as JSON lines, offsets included
    ragcourse query "how do I add a caption to a figure" --method hybrid -k 4 --cut 0.6 --rerank  # course corpus
    ragcourse query --queries questions.jsonl --gate   # one JSON line per query; NO ANSWER -> "hits": []
    ragcourse evaluate --strategy E --method hybrid --rerank   # Recall@k and MRR with Wilson intervals
    ragcourse evaluate --questions my-questions.jsonl          # your own ground truth, same format
    ragcourse evaluate --method hybrid --engine qdrant         # the same table, searched by Qdrant
    ragcourse index ./my-docs --out ./my-index      # ingest or sync a folder; failures listed, nothing lost
    ragcourse query ./my-index "question" --method hybrid --rerank --gate --user ana --permissions perms.json
    ragcourse eval ./my-docs --questions my-questions.jsonl --out ./report   # the book's measurements, your folder
    ragcourse needles ./my-docs --n 50               # candidate needle sentences to write questions against
    ragcourse pool ./my-docs --questions q.jsonl --out pool.jsonl   # each method's top 10 per question, to grade
    ragcourse eval ./my-docs --questions q.jsonl --judgements pool.jsonl --out ./report   # + graded nDCG, MAP

Each subcommand is a thin shell over the package's functions; nothing here is taught in the book.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path


def _chunk(args: argparse.Namespace) -> int:
    import dataclasses

    from ..chunking import chunk
    from ..documents import ExtractionError, read_document

    path = Path(args.file)
    try:
        document = read_document(path.resolve(), path.name)  # the reader `index` and `eval` use: same chunks
    except ExtractionError as err:
        raise ValueError(f"{args.file}: {err}") from None
    if args.title:
        document = dataclasses.replace(document, title=args.title)
    for piece in chunk(document, args.strategy, target=args.target, overlap=args.overlap):
        print(json.dumps(asdict(piece), ensure_ascii=False))
    return 0


def _hits(retriever, args: argparse.Namespace, query: str, reranker) -> tuple[list, str | None]:
    """The hits `query` shows for one question after --cut or --gate, and the refusal's message (None: answered)."""
    from ..gate import RECOMMENDED_GATE, NoAnswer, gate

    hits = retriever.retrieve(query, k=args.k, method=args.method, reranker=reranker, depth=args.depth)
    if args.cut is not None:
        result = gate(hits, args.cut, k=args.k, query=query)
        return ([], str(result)) if isinstance(result, NoAnswer) else (list(result.hits), None)
    if args.gate and not RECOMMENDED_GATE.answers(_gate_signals(retriever, query, args.k)):
        return [], f'NO ANSWER: the recommended gate (chapter 6) refuses "{query}"'
    return hits, None


def _gate_signals(retriever, query: str, k: int) -> dict[str, float]:
    """The signals `gate.RECOMMENDED_GATE` reads (chapter 6), measured on the dense top k; no reranker unless needed."""
    from .. import signals
    from ..gate import RECOMMENDED_GATE

    if set(RECOMMENDED_GATE.names) <= {"distance"}:
        return {"distance": signals.nearest_distance(retriever, query)}
    from ..rerank import default_reranker

    return signals.measure(retriever, default_reranker(), query, k).as_dict()


def _retriever(args: argparse.Namespace):
    """The retriever `query` searches: over the saved index INDEX, else over the course corpus (built in memory);
    with --user, over what that user may read only (chapter 11's pre-filter)."""
    from ..dense import load_embedder
    from ..pipeline import Retriever, build

    if args.index is None:
        retriever, permissions = build(args.strategy), _course_permissions(args)
    else:
        from ..index_format import load

        index = load(Path(args.index))  # refused before the model loads, if it cannot be trusted
        embedder = load_embedder(_query_cache())  # queries only: the index holds the chunks' vectors
        index.check_compatible(embedder.name, embedder.dim)
        retriever, permissions = Retriever.over(index.store(), embedder), args.permissions
    if args.user is None:
        return retriever
    if permissions is None:
        raise ValueError("--user needs --permissions PERMISSIONS.json for a saved index: who may read what")
    from ..permissions import pre_filter

    return pre_filter(retriever, _allowed(Path(permissions), args.user, {c.doc_id for c in retriever.chunks}))


def _query_cache() -> Path | None:
    """Where `query` on an index caches a batch's query vectors: the user cache, if it can be written."""
    from ..paths import user_cache_dir

    folder = user_cache_dir() / "embeddings"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder


def _course_permissions(args: argparse.Namespace) -> str:
    from ..paths import DATA_DIR

    return args.permissions or str(DATA_DIR / "permissions.json")


def _allowed(permissions: Path, user: str, doc_ids) -> frozenset[str]:
    """The documents `user` may read (chapter 11); documents with no entry are named on stderr, unreadable."""
    from ..documents import printable
    from ..permissions import load_access

    access = load_access(permissions)
    unlisted = access.unlisted(doc_ids)
    if unlisted:
        print(f"{len(unlisted)} document(s) have no permission entry and are readable by nobody: "
              + ", ".join(printable(d) for d in unlisted[:10]) + (" ..." if len(unlisted) > 10 else ""),
              file=sys.stderr)
    return access.readable_by(user)


def _query_texts(args: argparse.Namespace) -> list[tuple[str | None, str]]:
    """(id, question) pairs: the one QUESTION (id None), or every record of --queries FILE.jsonl."""
    if args.query is None and args.queries is None and args.index is not None:
        if Path(args.index).is_dir():
            raise ValueError(f"{args.index!r} is a folder: give a QUESTION after the INDEX, or --queries FILE.jsonl")
        args.index, args.query = None, args.index  # one positional and no --queries: it is the question
    if (args.query is None) == (args.queries is None):
        raise ValueError("give either a QUESTION or --queries FILE.jsonl, not both and not neither")
    if args.gate and args.cut is not None:
        raise ValueError(f"--gate and --cut={args.cut} both decide when to refuse: choose one")
    if args.queries is None:
        return [(None, args.query)]
    from ..groundtruth import read_records

    return [(r["id"], r["query"]) for _, r in read_records(Path(args.queries), ("id", "query"))]  # errors name the line


def _query(args: argparse.Namespace) -> int:
    """`ragcourse query`: the book's retriever (dense, BM25 or hybrid; reranked; gated; as a user) over a saved
    index or the course corpus; the model loads once for every question."""
    questions = _query_texts(args)
    retriever = _retriever(args)
    reranker = None
    if args.rerank:  # the course's token cache for the course corpus, the user's for an index
        from ..paths import user_cache_dir
        from ..rerank import default_reranker

        reranker = default_reranker() if args.index is None else _reranker_factory(user_cache_dir())()
    if len(questions) > 1:  # a batch: each question embedded once, through the embedding cache
        texts = sorted({text for _, text in questions})
        retriever.remember(texts, retriever.dense.embedder.encode_queries(texts))
    for qid, text in questions:
        hits, refusal = _hits(retriever, args, text, reranker)
        if qid is not None:
            shown = [{"doc": h.chunk.doc_id, "start": h.chunk.start, "end": h.chunk.end,
                      "distance": round(float(h.distance), 4)} for h in hits]
            print(json.dumps({"id": qid, "answered": bool(hits), "hits": shown}))  # ASCII: no raw control codes
        else:
            _print_hits(hits, refusal)
    if hasattr(reranker, "save"):  # late interaction: the passages' token vectors, for the next run
        reranker.save()
    return 0


def _print_hits(hits: list, refusal: str | None) -> None:
    """One question's hits for a terminal: every name and text escaped (`documents.printable`), one line each."""
    from ..documents import printable

    if refusal is not None:
        print(printable(refusal))
    for hit in hits:
        c = hit.chunk
        print(f"[{hit.rank}] d={hit.distance:.3f}  {printable(c.doc_id)} > {printable(c.section)}  "
              f"#char={c.start},{c.end}")
        print("    " + printable(c.content[:200].replace("\n", " ")) + ("..." if len(c.content) > 200 else ""))


def _search(args: argparse.Namespace) -> int:
    """`ragcourse search`, the old spelling of `ragcourse query` without an index (kept for one release)."""
    print("ragcourse search: renamed `ragcourse query` (same options; without an INDEX it searches the course "
          "corpus); `search` goes in the next release", file=sys.stderr)
    if args.index is not None and args.query is None:
        args.index, args.query = None, args.index
    if args.index is not None:
        raise ValueError("search reads the course corpus only: `ragcourse query INDEX QUESTION` searches an index")
    return _query(args)


def _evaluate(args: argparse.Namespace) -> int:
    from ..corpus import load_corpus
    from ..evaluation import evaluate, summarize
    from ..groundtruth import load_questions, queries
    from ..pipeline import build
    from .folder import folder_queries, load_folder_questions

    if args.engine_url and args.engine == "ragcourse":
        raise ValueError(f"--engine-url={args.engine_url!r} needs --engine qdrant (choices: ragcourse, qdrant)")
    if args.questions:  # yours: doc and ticket optional, as for `ragcourse eval`
        qs = folder_queries(load_folder_questions(args.questions, load_corpus()))
    else:
        qs = queries(load_questions())
    retriever = build(args.strategy)
    ranker, label = retriever, f"{args.strategy}/{args.method}"
    if args.engine != "ragcourse":  # the same chunks, vectors and BM25 weights, searched by an engine
        from ..engines import connect

        ranker = connect(args.engine, url=args.engine_url)
        ranker.index(retriever)
        label += f" on {args.engine}"
    rankings = ranker.rankings(qs, args.method)
    if args.rerank:
        from ..rerank import default_reranker, rerank_rankings

        reranker = default_reranker()
        rankings = rerank_rankings(reranker, qs, rankings, args.depth)
        label += f" + {reranker.name}, top {args.depth}"
    table = summarize(evaluate(rankings, qs), label)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


def _index(args: argparse.Namespace) -> int:
    from ..dense import load_embedder
    from ..index_sync import sync_folder

    embedder = load_embedder(_cache(args, args.folder) / "embeddings")  # the model loads only for new text
    report = sync_folder(Path(args.folder), Path(args.out), embed=embedder.encode, model_name=embedder.name,
                         dim=lambda: embedder.dim, strategy=args.strategy, wait=not args.no_wait,
                         notify=lambda message: print(f"ragcourse index: {message}", file=sys.stderr, flush=True))
    print(report.summary())
    return 1 if report.index.failed else 0


def _count(name: str):
    """An argparse type for a count >= 1 (-k, --depth), checked by `counts.check_k`."""
    from ..counts import check_k

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


def _ks(value: str) -> list[int]:
    """An argparse type for --k: comma-separated cut-offs >= 1, sorted, repeats dropped."""
    try:
        ks = sorted({int(v) for v in value.split(",") if v.strip()})
    except ValueError:
        ks = []
    if not ks or ks[0] < 1:
        raise argparse.ArgumentTypeError(f"k={value!r}: expected comma-separated integers >= 1, e.g. 1,4,8,20")
    return ks


def _choice_list(name: str, valid) -> object:
    """An argparse type for a comma-separated list drawn from `valid` (order kept, repeats dropped)."""

    def parse(value: str) -> list[str]:
        items = list(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
        wrong = [v for v in items if v not in valid]
        if wrong or not items:
            raise argparse.ArgumentTypeError(f"{name}={value!r}: expected a comma-separated list of {list(valid)}")
        return items

    return parse


class _Progress:
    """One line on stderr that rewrites itself, for people at a terminal: never when RAGCOURSE_PROGRESS=0 or when
    stderr is not a terminal (a log or CI)."""

    def __init__(self) -> None:
        from ..dense import show_progress

        self.on = sys.stderr.isatty() and show_progress(True)

    def __call__(self, message: str) -> None:
        if self.on:
            print(f"\r\033[K[eval] {message}", end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.on:
            print("\r\033[K", end="", file=sys.stderr, flush=True)


def _reranker_factory(cache: Path):
    """The default reranker (chapter 5), its token cache in `cache` (never in the course's checkout)."""
    from .. import models, rerank

    if models.reranker_spec() is not None:
        return rerank.CrossEncoderReranker
    return lambda: rerank.LateInteractionReranker(cache_dir=cache / "tokens")


def _readable_folder(corpus, args: argparse.Namespace):
    """The folder as `--user` may read it (chapter 11's pre-filter, for every output: nothing else is indexed,
    checked against, counted or named, and an unknown user's error names that user only); all of it without."""
    if args.user is None and args.permissions is None:
        return corpus
    if args.user is None or args.permissions is None:
        raise ValueError("--user and --permissions go together: whose view, and who may read what")
    from ..documents import printable
    from ..permissions import load_access
    from .folder import readable_part

    access = load_access(Path(args.permissions))
    if args.user not in access.users:
        raise ValueError(f"--user '{printable(args.user)}' is not in the permissions file {args.permissions}")
    return readable_part(corpus, access.readable_by(args.user))


#: How many left-out lines stderr names one by one (the report lists them all).
SHOWN_LEFT_OUT = 20


def _tell_left_out(rejected, command: str = "eval") -> None:
    """Each left-out line on stderr, the first SHOWN_LEFT_OUT of them; the rest counted."""
    from ..documents import printable

    for item in rejected[:SHOWN_LEFT_OUT]:
        print(f"ragcourse {command}: left out {printable(str(item))}", file=sys.stderr)
    if len(rejected) > SHOWN_LEFT_OUT:
        print(f"ragcourse {command}: ... and {len(rejected) - SHOWN_LEFT_OUT} more line(s) left out"
              + (", each listed in report.html and results.json" if command == "eval" else ""), file=sys.stderr)


def _checked_questions(args: argparse.Namespace, corpus):
    """The questions file checked line by line against what is measured (with --user, what that user may read):
    each bad line named on stderr and left out, the rest kept; ValueError when none is left to measure."""
    from .folder import check_folder_questions

    checked = check_folder_questions(args.questions, corpus.documents, corpus.failed, args.user, corpus.root)
    _tell_left_out(checked.rejected)
    if not checked.questions:
        raise ValueError(f"no question of {args.questions} can be measured: {len(checked.rejected)} line(s) "
                         "left out, each named above")
    if len(checked.questions) < 2:
        raise ValueError(f"{len(checked.questions)} question of {args.questions} can be measured: intervals over "
                         "questions need at least 2")
    return checked


def _run_files(paths: list[str]) -> tuple[list[tuple[str, dict]], tuple]:
    """Each --run file parsed (`records.parse_trec_run`): (path, items) and every bad line; ValueError for a file
    that cannot be read at all or two files of the same name (their runs would share a label)."""
    from ..records import RecordsError, parse_trec_run

    stems = [Path(p).stem for p in paths]
    if len(set(stems)) < len(stems):
        raise ValueError(f"--run files {paths} share a name: each run is labelled run/NAME; rename one")
    parsed, bad = [], []
    for path in paths:
        try:
            items, rejected = parse_trec_run(path)
        except RecordsError as err:
            raise ValueError(str(err)) from None
        parsed.append((path, items))
        bad += rejected
    return parsed, tuple(bad)


def _judgements(path: str | None, corpus, questions) -> tuple[dict | None, tuple]:
    """--judgements FILE read (`records.parse_judgements`) and checked against the questions measured and the
    documents read (`runs.judged`): query id -> {passage id: grade}, and every line left out with why."""
    if path is None:
        return None, ()
    from ..records import RecordsError, parse_judgements
    from .folder import folder_queries
    from .runs import judged

    try:
        items, rejected = parse_judgements(path)
    except RecordsError as err:
        raise ValueError(str(err)) from None
    grades, unknown = judged(path, items, folder_queries(questions), {d.id: d.text for d in corpus.documents})
    if not grades:
        raise ValueError(f"--judgements {path}: no line judges a passage of a question measured"
                         + (f"; first left out: {(rejected + unknown)[0]}" if rejected or unknown else ""))
    return grades, tuple(sorted(rejected + unknown, key=lambda r: int(r.where.rsplit(":", 1)[1])))


def _refuse_empty(corpus, docs_dir: str) -> None:
    """ValueError naming the folder and its first failures when not one document in it could be read."""
    if not corpus.documents:
        reasons = "; ".join(f"{f.path}: {f.reason}" for f in corpus.failed[:5]) or "the folder has no documents"
        raise ValueError(f"no readable documents in {docs_dir!r} ({reasons})")


def _eval(args: argparse.Namespace) -> int:
    from .. import dense
    from ..records import Rejected
    from . import report
    from .folder import CheckedQuestions, load_folder_out_of_domain, read_folder
    from .runs import Settings, label_of, measure

    corpus = _readable_folder(read_folder(Path(args.docs_dir), max_bytes=args.max_bytes, globs=args.exclude), args)
    _refuse_empty(corpus, args.docs_dir)
    checked = _checked_questions(args, corpus)
    ood, left_out = load_folder_out_of_domain(args.out_of_domain) if args.out_of_domain else ([], ())
    _tell_left_out(left_out)
    checked = CheckedQuestions(checked.questions, checked.rejected + left_out)
    run_files, bad_lines = _run_files(args.run_files or [])
    grades, unjudged = _judgements(args.judgements, corpus, checked.questions)
    bad_lines += unjudged
    _tell_left_out(bad_lines)
    labels = [label_of(s, m, r) for s in args.strategies for m in args.methods for r in (False, True)[:1 + args.rerank]]
    labels += [label_of("run", Path(name).stem, False) for name, _ in run_files]
    if args.baseline is not None and args.baseline not in labels:
        raise ValueError(f"--baseline {args.baseline!r} is not one of this command's runs: {labels}")
    cache = _cache(args, args.docs_dir)
    out = report.prepare_out(args.out, args.docs_dir)  # refused before any work, if it could lose a file
    settings = Settings(tuple(args.strategies), tuple(args.methods), args.rerank, tuple(args.k), args.baseline,
                        _reranker_factory(cache), tuple(run_files), grades)
    progress = _Progress()
    results, runs = measure(corpus, checked.questions, ood, settings, dense.load_embedder(cache / "embeddings"),
                            progress=progress, bar=progress.on)  # a bar on a terminal only
    progress.done()
    unresolved = results.pop("left_out")
    _tell_left_out([Rejected(r["where"], r["reason"]) for r in unresolved])
    checked = CheckedQuestions(checked.questions, checked.rejected + bad_lines + tuple(
        Rejected(r["where"], r["reason"]) for r in unresolved))
    results = {"corpus": results.pop("corpus"), "questions": report.questions_entry(checked), **results}
    written = report.write(results, runs, out, grades)
    _print_outcome(results, corpus, checked.questions, written, cache)
    return 1 if checked.rejected else 0


def _cache(args: argparse.Namespace, docs: str) -> Path:
    """The reader's embedding cache (--cache-dir, else $RAGCOURSE_CACHE, else the user cache folder; never the
    checkout nor the documents folder `docs`), checked writable before any work, else a ValueError saying why."""
    from ..paths import user_cache_dir
    from .report import refuse_inside

    cache = Path(args.cache_dir) if args.cache_dir else user_cache_dir()
    refuse_inside(cache, docs, "--cache-dir")
    try:
        (cache / "embeddings").mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=cache / "embeddings"):
            pass
    except OSError as err:
        raise ValueError(f"the embedding cache {str(cache)!r} cannot be written ({err.strerror or err}): choose "
                         "another with --cache-dir DIR or the environment variable RAGCOURSE_CACHE") from None
    return cache


def _print_outcome(results: dict, corpus, questions, written: list[Path], cache: Path) -> None:
    """What the terminal shows at the end: counts, failures, the summary table, the worst misses, where files went."""
    from . import report

    c, left_out = results["corpus"], results["questions"]["rejected"]
    print(f"{c['documents']} documents read, {len(c['failed'])} failed, {len(c['no_text'])} with no text; "
          f"{len(questions)} questions measured"
          + (f", {len(left_out)} left out (named above and in the report)" if left_out else "")
          + f"; {len(results['runs'])} runs")
    for failure in c["failed"]:
        print(f"  FAILED {report.printable(failure['path'])}: {report.printable(failure['reason'])}")
    if c["no_text"]:
        print(f"  {len(c['no_text'])} file(s) hold no text (empty, or markup only, such as autodoc stubs): "
              "listed in the report")
    if c["kept_as_text"]:
        print(f"  {sum(k['count'] for k in c['kept_as_text'])} directive(s) this reader does not know were kept "
              f"as plain text, in {len({k['path'] for k in c['kept_as_text']})} file(s): listed in the report")
    if any(f["reason"].startswith("too large") for f in c["failed"]):
        print("  (a larger file is read with --max-bytes N)")
    if c["skipped"]:
        print(f"  {len(c['skipped'])} file(s) skipped: not documents by type (listed in the report)")
    print()
    print(report.summary(results))
    print()
    for line in report.missed_lines(results):
        print(line)
    print(f"wrote {len(written)} files to {report.printable(str(written[0].parent))} (report.html, results.json, "
          f"a CSV and a TREC run per run); embeddings cached in {report.printable(str(cache))}")


def _pool(args: argparse.Namespace) -> int:
    """`ragcourse pool`: the union of each system's top k per question, as a file a judge fills in (`cli.pool`)."""
    from .. import dense
    from .folder import folder_queries, read_folder
    from .pool import pool_questions, pool_records, pool_text, system_rankings, write_new

    out = Path(args.out)
    if out.is_dir() or ((out.exists() or out.is_symlink()) and not args.force):
        write_new(out, "", args.force)  # refused before any work, with write_new's own message
    corpus = _readable_folder(read_folder(Path(args.docs_dir), max_bytes=args.max_bytes, globs=args.exclude), args)
    _refuse_empty(corpus, args.docs_dir)
    questions, rejected = pool_questions(args.questions)
    _tell_left_out(rejected, "pool")
    if not questions:
        raise ValueError(f"no question of {args.questions} can be pooled: {len(rejected)} line(s) left out")
    lexical = set(args.methods) == {"bm25"}
    embedder = None if lexical else dense.load_embedder(_cache(args, args.docs_dir) / "embeddings")
    reranker = _reranker_factory(_cache(args, args.docs_dir))() if args.rerank else None
    systems = system_rankings(corpus.documents, folder_queries(questions), args.strategies, args.methods,
                              embedder, reranker)
    records = pool_records(questions, systems, args.k)
    names = [f"{s}/{m}" + r for s in args.strategies for m in args.methods for r in ("", "+rerank")[:1 + args.rerank]]
    write_new(out, pool_text(records, f"ragcourse pool: {len(records)} passages for {len(questions)} questions, "
                             f"the union of the top {args.k} of {', '.join(names)}, in document order (not by "
                             "system or rank). Set each grade: 0 = not relevant, 1 = partly, 2 = answers it; then "
                             "ragcourse eval DOCS_DIR --questions Q --judgements THIS_FILE"), args.force)
    print(f"wrote {len(records)} passages for {len(questions)} questions to {args.out} (grade null: judge each)",
          file=sys.stderr)
    return 1 if rejected else 0


def _needles(args: argparse.Namespace) -> int:
    from .folder import needles_template, read_folder

    corpus = read_folder(Path(args.docs_dir))
    _refuse_empty(corpus, args.docs_dir)
    records = needles_template(corpus.documents, args.n)
    for record in records:
        print(json.dumps(record, ensure_ascii=False))
    print(f"{len(records)} candidate needle(s). Blank in every record: 'question' (required: write the question the "
          "needle answers, as your documentation would phrase it) and 'ticket' (optional: as a user would ask it; "
          "leave it blank or delete it). Delete the records you cannot write a question for; "
          "`ragcourse eval` then accepts the file. A needle is matched against the text as read (markup stripped, "
          "roles reduced to their text), which `ragcourse chunk FILE` prints.", file=sys.stderr)
    return 0


#: The epilog of `ragcourse eval --help`: the files it reads and writes, and its exit status.
EVAL_EPILOG = ("QUESTIONS.jsonl: one JSON object a line with id, needle, question and optional ticket and doc "
               "(a path relative to DOCS_DIR); each needle must occur exactly once in the folder, outside "
               "headings and titles (`ragcourse needles` writes a template). OOD.jsonl: id, query and optional "
               "kind. The embedding cache: --cache-dir, else $RAGCOURSE_CACHE, else your user cache folder "
               "(never the documents folder or a checkout). OUTDIR gets results.json, report.html, and per run "
               "queries-RUN.csv and run-RUN.trec (with qrels-STRATEGY.trec, for ranx or trec_eval, and "
               "qrels-graded.trec with --judgements). A bad line of QUESTIONS.jsonl (named with its line number) is "
               "left out and the rest measured; blank and # comment lines are skipped. Exit status 0 when every "
               "question was measured, 1 when some lines were left out, 2 on bad input that stops the run, 130 on "
               "Ctrl-C.")


def _folder_commands(sub) -> None:
    """The `eval` and `needles` subcommands: the book's measurements on a folder of your own."""
    from ..chunking import STRATEGIES
    from ..documents import MAX_BYTES
    from ..pipeline import METHODS

    v = sub.add_parser("eval", help="run the book's measurements on a folder; write results.json and report.html",
                       description="Read DOCS_DIR (.md .rst .txt .html .pdf, recursively), chunk and index it "
                                   "with each strategy, score your questions with each method, and write "
                                   "OUTDIR/results.json and a self-contained OUTDIR/report.html.", epilog=EVAL_EPILOG)
    v.add_argument("docs_dir", metavar="DOCS_DIR", help="the folder of documents (read recursively)")
    v.add_argument("--questions", required=True, metavar="QUESTIONS.jsonl", help="your questions (see below)")
    v.add_argument("--out-of-domain", default=None, metavar="OOD.jsonl",
                   help="queries the folder cannot answer; adds the threshold sweep (chapter 6)")
    v.add_argument("--strategies", type=_choice_list("strategies", STRATEGIES), default=["E"],
                   help=f"comma-separated chunking strategies from {','.join(STRATEGIES)} (default E)")
    v.add_argument("--methods", type=_choice_list("methods", METHODS), default=list(METHODS),
                   help=f"comma-separated retrieval methods from {','.join(METHODS)} (default all)")
    v.add_argument("--rerank", action="store_true", help="also run each with the default reranker (chapter 5)")
    v.add_argument("--max-bytes", type=_count("max-bytes"), default=MAX_BYTES, metavar="N",
                   help=f"a file larger than N bytes is listed as too large, not read (default {MAX_BYTES:,}; a PDF "
                        "full of images may need more)")
    _eval_options(v)
    n = sub.add_parser("needles", help="print a questions template (JSONL): candidate needles to write questions for",
                       description="Print up to N sentences of DOCS_DIR that occur exactly once and outside "
                                   "headings, spread over the folder, as question records whose 'question' "
                                   "(required) and 'ticket' (optional) are blank: fill them in, and "
                                   "`ragcourse eval --questions` accepts the file.")
    n.add_argument("docs_dir", metavar="DOCS_DIR")
    n.add_argument("--n", type=_count("n"), default=50, help="how many candidates (default 50)")
    n.set_defaults(run=_needles)


def _pool_command(sub) -> None:
    """`ragcourse pool`: a judged pool, apart from `eval` because its output is one file a person edits by hand
    (never replaced without --force), and it measures nothing (its questions need no needle)."""
    from ..chunking import STRATEGIES
    from ..documents import MAX_BYTES
    from ..pipeline import METHODS
    from .pool import POOL_K

    p = sub.add_parser("pool", help="write each question's pooled passages (the union of several methods' top k) as "
                                    "a JSON Lines file for a judge to grade; eval --judgements reads it back",
                       description="Rank your questions with each strategy x method (x rerank) over DOCS_DIR and "
                                   "write, per question, every passage in some method's top K, once, in "
                                   "document order (never by method or rank), with grade null: set each to 0 (not "
                                   "relevant), 1 (partly) or 2 (answers it), then give the file to "
                                   "`ragcourse eval --judgements`. QUESTIONS.jsonl: id and question, optional "
                                   "ticket, needle and doc. Exit status 0, 1 when some lines were left out, 2 on "
                                   "bad input (an existing OUT without --force: nothing is overwritten).")
    p.add_argument("docs_dir", metavar="DOCS_DIR", help="the folder of documents (read recursively)")
    p.add_argument("--questions", required=True, metavar="QUESTIONS.jsonl", help="your questions")
    p.add_argument("--out", required=True, metavar="POOL.jsonl", help="the pool file to write (a new file)")
    p.add_argument("--force", action="store_true", help="replace OUT if it exists (its grades are lost)")
    p.add_argument("-k", type=_count("k"), default=POOL_K, help=f"how many of each method's top to pool "
                                                                 f"(default {POOL_K})")
    p.add_argument("--strategies", type=_choice_list("strategies", STRATEGIES), default=["E"],
                   help=f"comma-separated chunking strategies from {','.join(STRATEGIES)} (default E)")
    p.add_argument("--methods", type=_choice_list("methods", METHODS), default=list(METHODS),
                   help=f"comma-separated retrieval methods from {','.join(METHODS)} (default all)")
    p.add_argument("--rerank", action="store_true", help="also pool each method reranked (chapter 5)")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB", help="a path never read; repeatable")
    p.add_argument("--max-bytes", type=_count("max-bytes"), default=MAX_BYTES, metavar="N",
                   help=f"a file larger than N bytes is not read (default {MAX_BYTES:,})")
    p.add_argument("--cache-dir", default=None, metavar="DIR", help="where embeddings are cached (as for eval)")
    _permission_options(p, "pool only the documents this user (the judge) may read; needs --permissions",
                        "paths relative to DOCS_DIR")
    p.set_defaults(run=_pool)


def _eval_options(v) -> None:
    """`eval`'s exclusions, cut-offs, run files, baseline, cache and output folder."""
    from ..evaluation import KS

    v.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="a path relative to DOCS_DIR (or a folder) never read, e.g. 'api/*' or '**/_build'; "
                        "repeatable; what it leaves out is listed in the report")
    v.add_argument("--k", type=_ks, default=list(KS), metavar="K,K,...",
                   help=f"cut-offs for recall@k and nDCG@k (default {','.join(map(str, KS))}); the largest is where "
                        "a question counts as missed")
    v.add_argument("--run", action="append", default=None, metavar="RUN.trec", dest="run_files",
                   help="another system's TREC run (qid Q0 docno rank score tag; qids as in the qrels eval writes, "
                        "docnos chunk ids of the first strategy, or DOC#char=START,END passages of a document's "
                        "text), scored on the same needles and tested against every run as run/NAME; repeatable")
    v.add_argument("--judgements", default=None, metavar="JUDGEMENTS",
                   help="graded judgements (0 = not relevant, 1 = partly, 2 = answers it), TREC qrels (qid 0 docno "
                        "grade) or JSON Lines (qid, docno, grade: what `ragcourse pool` writes, filled in); qid a "
                        "question id (each phrasing) or a query id (q1/doc), docno a chunk id (DOC#START-END) or "
                        "DOC#char=START,END; adds nDCG@k, MAP and bpref, graded, to every run, with intervals and "
                        "paired tests; a bad line is left out and named")
    v.add_argument("--baseline", default=None, metavar="RUN",
                   help="the run the paired tests compare against, e.g. E/bm25 or E/hybrid+rerank (default: "
                        "the first run); each reranked run is also tested against its own first stage")
    v.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="where embeddings are cached (default: $RAGCOURSE_CACHE, else your user cache folder, "
                        "e.g. ~/.cache/ragcourse)")
    v.add_argument("--out", required=True, metavar="OUTDIR",
                   help="a new or empty folder outside DOCS_DIR (or one an earlier eval wrote): the report goes here")
    _permission_options(v, "measure as this user: only the documents they may read are indexed, and only "
                           "questions about them are asked; needs --permissions",
                        "paths relative to DOCS_DIR")
    v.set_defaults(run=_eval)


def _permission_options(p, user_help: str, where: str) -> None:
    """--user and --permissions (chapter 11), for search and eval."""
    p.add_argument("--user", default=None, help=f"{user_help} (chapter 11: a document with no permission entry "
                                                 "is readable by nobody)")
    p.add_argument("--permissions", default=None, metavar="PERMISSIONS.json",
                   help=f'{{"documents": {{doc: [groups]}}, "users": {{user: [groups]}}}}, {where}')


def parser() -> argparse.ArgumentParser:
    from .. import __version__
    from ..chunking import STRATEGIES
    from ..pipeline import METHODS
    from ..rerank import DEPTH

    p = argparse.ArgumentParser(prog="ragcourse", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"ragcourse {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("chunk", help="chunk a document (.md .rst .txt .html .pdf) as index and eval read it; "
                                     "print JSON lines (their text is what needles are matched against)")
    c.add_argument("file")
    c.add_argument("--title", default=None)
    r = sub.add_parser("query", help="search an index built by `ragcourse index` (or, without INDEX, the course "
                                     "corpus) as the book's pipeline does: dense, BM25 or hybrid, reranked, gated")
    s = sub.add_parser("search", help="the old spelling of `ragcourse query` without INDEX (goes in the next release)")
    e = sub.add_parser("evaluate", help="score a strategy on the course corpus (its ground truth, or --questions "
                                        "about it); a folder of your own: `ragcourse eval DOCS_DIR`")
    i = sub.add_parser("index", help="ingest a folder of documents (.md .rst .txt .html .pdf) into an index")
    for q in (c, r, s, e, i):
        q.add_argument("--strategy", default="E", choices=list(STRATEGIES),
                       help="chunking strategy (default E; `query` on an INDEX uses the index's own)")
    for q, default in ((r, "hybrid"), (s, "hybrid"), (e, "dense")):
        q.add_argument("--method", default=default, choices=list(METHODS))
    for q in (r, s, e):
        q.add_argument("--rerank", action="store_true",
                       help="rerank the first stage's top --depth with the default reranker (chapter 5)")
        q.add_argument("--depth", type=_count("depth"), default=DEPTH,
                       help=f"shortlist size for --rerank (default {DEPTH})")
    for q, run in ((r, _query), (s, _search)):
        _query_options(q)
        q.set_defaults(run=run)
    _own_arguments(c, e, i)
    _folder_commands(sub)
    _pool_command(sub)
    return p


def _query_options(q) -> None:
    """The options of `query` (and of its old spelling `search`), defined once."""
    q.add_argument("index", nargs="?", default=None, metavar="INDEX",
                   help="a folder written by `ragcourse index` (default: the course corpus)")
    q.add_argument("query", nargs="?", default=None, metavar="QUESTION", help="the question (or use --queries)")
    q.add_argument("-k", type=_count("k"), default=4, help="how many chunks to show (default 4)")
    q.add_argument("--cut", type=float, default=None, help="cosine-distance gate; NO ANSWER when nothing passes")
    q.add_argument("--gate", action="store_true",
                   help="apply chapter 6's recommended gate (ragcourse.gate.RECOMMENDED_GATE); "
                        "NO ANSWER when it refuses")
    q.add_argument("--queries", default=None, metavar="FILE.jsonl",
                   help='batch mode: lines {"id", "query"} in, one JSON line per query out: '
                        '{"id", "answered", "hits": [{"doc", "start", "end", "distance"}]}, hits [] when refused')
    _permission_options(q, "search only what this user may read (the pre-filter, with the user's own BM25 "
                           "statistics)", "with --user (default for the course corpus: its data/permissions.json)")


def _own_arguments(c, e, i) -> None:
    """The arguments only one of chunk, evaluate and index takes."""
    from ..chunking import OVERLAP, TARGET

    c.add_argument("--target", type=int, default=TARGET)
    c.add_argument("--overlap", type=int, default=OVERLAP)
    c.set_defaults(run=_chunk)
    e.add_argument("--questions", default=None, metavar="FILE.jsonl",
                   help="your questions: id, needle, question, optional doc and ticket, one JSON object a line "
                        "(default: the course's ground truth)")
    e.add_argument("--engine", default="ragcourse", choices=["ragcourse", "qdrant"],
                   help="search with the package (default) or Qdrant, local mode unless --engine-url")
    e.add_argument("--engine-url", default=None,
                   help="a Qdrant server or cluster (default: $RAGCOURSE_QDRANT_URL, else in-process)")
    e.set_defaults(run=_evaluate)
    i.add_argument("folder")
    i.add_argument("--out", required=True)
    i.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="where embeddings are cached (default: $RAGCOURSE_CACHE, else your user cache folder)")
    i.add_argument("--no-wait", action="store_true",
                   help="exit (status 2) naming the running writer instead of waiting for it to finish")
    i.set_defaults(run=_index)


def main(argv: list[str] | None = None) -> int:
    """Run one command: 0 done, 1 done with items left out (named), 2 bad input; Ctrl-C 130; a closed pipe 141."""
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:  # `ragcourse needles DIR | head`: the reader has gone, nothing to say to it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        return 141
    except KeyboardInterrupt:
        print(f"\nragcourse {args.command}: interrupted: nothing more was written", file=sys.stderr)
        return 130
    except (ValueError, RuntimeError, OSError) as err:
        print(f"ragcourse {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
