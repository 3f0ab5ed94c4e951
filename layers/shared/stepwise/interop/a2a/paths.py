"""Where A2A is served: each profile's agent under `/a2a/{profile}`, the default profile's card at the root."""

A2A_PREFIX = "/a2a"
AGENT_CARD_PATH = "/.well-known/agent-card.json"
