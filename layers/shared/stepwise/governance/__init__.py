"""Governance: the tool policy (Cedar, through `cedarpy`), decided where the action happens.

Nothing outside this package knows Cedar; it is imported only when a profile names a policy.
"""
