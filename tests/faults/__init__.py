"""Fault-injection suite: runs under injected faults end terminal, complete and with the right outcome."""
