"""The streamed routes on AWS: run events as server-sent events, and chat completions with `stream: true`.

An ASGI app that uvicorn serves on 127.0.0.1 (`run.sh`) behind the AWS Lambda Web Adapter layer, which
turns API Gateway's streamed invocations into HTTP requests and streams the answers back.
"""

import os

from stepwise.streaming.lambda_app import app_from_environment

app = app_from_environment(os.environ)
