"""ragcourse: the course companion for *Production RAG: chunking, retrieval and honest citations*.

Each module implements one idea that one chapter of the book teaches:
corpus and groundtruth (ch. 1), chunking (ch. 2), dense and evaluation (ch. 3),
bm25 and fusion (ch. 4), rerank (ch. 5), gate and signals (ch. 6), citations (ch. 7),
index (ch. 8), genres and genre_chunking (ch. 9), expansion (ch. 10), permissions, poisoning and
injection (ch. 11), ann and engines (appendix 2),
documents and rst (one reader for your own files), cli (the command line: folder, runs, report);
models loads every model, precision and timings keep numbers the same on every machine, sources holds
the sources' figures, exercises the public checks.
"""

__version__ = "0.1.0"
