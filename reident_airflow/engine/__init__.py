"""The risk engine: pure Python over numpy/scipy; no Airflow or Great Expectations import."""
