"""ragcourse: the course companion for *Production RAG: chunking, retrieval and honest citations*.

Each module implements one idea that one chapter of the book teaches:
corpus and groundtruth (ch. 1), chunking (ch. 2), dense and evaluation (ch. 3),
bm25 and fusion (ch. 4), rerank (ch. 5), gate (ch. 6), citations and index (ch. 7-8).
"""

__version__ = "0.1.0"
