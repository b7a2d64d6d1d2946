"""Notifiers: alerts on a failed release gate (aggregates only)."""

from __future__ import annotations

from reident_airflow.notifiers.breach import ReidentBreachNotifier, breach_email, breach_payload

__all__ = ["ReidentBreachNotifier", "breach_email", "breach_payload"]
