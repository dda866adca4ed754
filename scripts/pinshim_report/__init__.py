"""pinshim_report: reads pinshim's per-process JSON Lines logs, streaming them, and writes text
and CSV tables, a self-contained HTML page with SVG charts, a Chrome trace or an SQLite database.
Standard library only.

Modules, each with its contract in its docstring:
  logs       the log format: finding files, reading records
  aggregate  one pass over a file into bounded, mergeable aggregates
  sketch     bounded distributions and timeline lanes
  stream     all files through aggregate, on several cores, with progress
  analysis   the derived views every output shows
  text       tables as text and CSV
  svg, html_page   the HTML page
  trace      the Chrome trace
  sqlite_export    the SQLite database"""
import os

VERSION = "0.1.0"   # the shim's PINSHIM_VERSION (include/pinshim.h); a test keeps them equal
FORMAT_SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pinshim-log-format-1.schema.json")
