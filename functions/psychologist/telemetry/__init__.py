"""Telemetry into sessions: OTLP exports decoded (`otlp`), each record read by its
source's row (`sources`, `records`, `spans`, `log_records`, `metric_points`, `reports`),
stored once per event (`ingestion`, `event_index`), and sessions ended (`endings`)."""
