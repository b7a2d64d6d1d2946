"""The hierarchies the advice on a k breach uses (docs/metrics.md §10): those given for
the QIs, or else those bundled with the package (ARX's hierarchies for the Adult columns,
``reident_airflow/data/hierarchies/``) when one exists for a QI of that name. The advice
itself is :mod:`reident_airflow.workflows.advice`; Spark's outlook
(:meth:`~reident_airflow.sources.spark.SparkSource.advise`) reads the same hierarchies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib.resources import files
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reident_airflow.engine.hierarchies import Hierarchy

__all__ = ["bundled_hierarchy", "hierarchies_for"]


def bundled_hierarchy(column: str) -> Hierarchy | None:
    """The hierarchy bundled for a column of this name, if the package has one."""
    from reident_airflow.engine.hierarchies import load_hierarchy

    resource = files("reident_airflow").joinpath(f"data/hierarchies/adult_hierarchy_{column}.csv")
    if "/" in column or "\\" in column or not resource.is_file():
        return None
    return load_hierarchy(str(resource), column=column)


def hierarchies_for(
    quasi_identifiers: Sequence[str], given: Mapping[str, Hierarchy] | None = None
) -> tuple[dict[str, Hierarchy], tuple[str, ...]]:
    """The hierarchy of each QI (given first, bundled next) and the QIs that have none."""
    found: dict[str, Hierarchy] = {}
    missing: list[str] = []
    for name in quasi_identifiers:
        hierarchy = (given or {}).get(name) or bundled_hierarchy(name)
        if hierarchy is None:
            missing.append(name)
        else:
            found[name] = hierarchy
    return found, tuple(missing)
