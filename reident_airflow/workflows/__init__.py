"""The checks in order, for every entry point: no Airflow, no argparse.

The command line, the operators, the GX metrics and :mod:`reident_airflow.api` parse their
inputs, open the source at their door, call a workflow here and present its result:

- :mod:`~reident_airflow.workflows.assessment`: :func:`run_assessment`, count -> assess ->
  identifier scan -> compare with the previous release -> advise -> fingerprint;
- :mod:`~reident_airflow.workflows.advice`: the advice on a breach of ``min_k``, on any
  source (Spark's from its aggregates, the others' from the rows read again).

A module here imports the engine and the sources' face; nothing heavier at import time.
"""

from __future__ import annotations

__all__: list[str] = []
