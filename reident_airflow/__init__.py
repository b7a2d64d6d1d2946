"""reident-airflow: gate data releases on re-identification risk.

The risk engine lives in :mod:`reident_airflow.engine` and imports neither Airflow nor
Great Expectations; the operators (:mod:`reident_airflow.operators`) and expectations
(:mod:`reident_airflow.gx`) are thin adapters over it.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("reident-airflow")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
