"""The readers of the classification data sets that `classifier_tasks` registers, one module
per kind of data set: `glue`, `imdb`, `movie_reviews` (bundled), `generic` (TSV/CSV/JSONL
with columns chosen by options), over `delimited` (delimited files as tables, and the
errors every reader raises)."""
