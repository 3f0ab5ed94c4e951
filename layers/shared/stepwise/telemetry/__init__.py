"""Telemetry: the one Logger, Tracer and Metrics (`observability`), the log guard that keeps secrets out of
every log record (`log_guard`), and the GenAI spans of model and tool calls (`spans`, `span_types`, and
`otel_spans`, loaded only when spans are on)."""
