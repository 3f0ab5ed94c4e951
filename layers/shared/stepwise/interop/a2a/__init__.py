"""Stepwise as an A2A agent: each profile an agent, its tasks the runs the API starts.

`mount.a2a_protocol_app` is what the fronts mount; `app` the SDK's routes over `handler`, which answers
each A2A method with calls of the API; `cards` and `tasks` translate profiles and runs.
"""
