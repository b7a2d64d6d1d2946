"""reident-airflow: gate data releases on re-identification risk.

The risk engine lives in :mod:`reident_airflow.engine` and imports neither Airflow nor
Great Expectations; the operators (:mod:`reident_airflow.operators`) and expectations
(:mod:`reident_airflow.gx`) are thin adapters over it.
"""

from __future__ import annotations

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    # read from the installed metadata on first use: importing the package stays cheap
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("reident-airflow")
        except PackageNotFoundError:  # pragma: no cover - a source tree without install
            return "0.0.0"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
