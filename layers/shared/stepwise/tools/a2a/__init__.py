"""Remote agents spoken to over A2A, offered as tools, through the official ``a2a-sdk`` client.

The agent's Agent Card is read when the registry is built (cold start) and each call sends one message and
follows its task to its end::

    tools, notes = load_a2a_tools(agent_config, secret_resolver=resolver)
"""

from stepwise.tools.a2a.client import A2aAgentClient
from stepwise.tools.a2a.tools import A2aTool, load_a2a_tools

__all__ = ["A2aAgentClient", "A2aTool", "load_a2a_tools"]
