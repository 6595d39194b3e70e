"""Build-time code: turns pinned, checked package files into the course corpora (``make corpus``).

Needs the ``build`` extra (docutils, mwparserfromhell); nothing at run time imports it.
"""
