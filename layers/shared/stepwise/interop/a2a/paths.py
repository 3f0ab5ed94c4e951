"""Where A2A is served: each profile's agent under `/a2a/{profile}`, the default profile's card at the root."""

A2A_PREFIX = "/a2a"
AGENT_CARD_PATH = "/.well-known/agent-card.json"

# The methods of API Gateway (on AWS) that reach the A2A app: its endpoints take the API's key, like every
# route; its Agent Cards are public.
KEYED_ROUTES = frozenset(
    {
        ("POST", A2A_PREFIX + "/{profile}"),
        ("GET", A2A_PREFIX + "/{profile}/{proxy+}"),
        ("POST", A2A_PREFIX + "/{profile}/{proxy+}"),
    }
)
PUBLIC_ROUTES = frozenset({("GET", A2A_PREFIX + "/{profile}" + AGENT_CARD_PATH), ("GET", AGENT_CARD_PATH)})
