"""Guardrails: local PII detectors, deny patterns and Amazon Bedrock Guardrails on a run's input, tool
results and answer (configured by `stepwise.config.guardrails`, applied by the steps through
`stepwise.steps.guardrail_points`)."""

from stepwise.guardrails.checks import Checked, Intervention, check_text

__all__ = ["Checked", "Intervention", "check_text"]
