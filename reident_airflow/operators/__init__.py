"""Airflow operators over the reident-airflow engine."""
