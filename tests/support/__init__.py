"""Test helpers shared by unit, integration and end-to-end tests (fakes of what lies outside the machine)."""
