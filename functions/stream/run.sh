#!/bin/sh
# Started by the Lambda Web Adapter (AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap): the ASGI app on the port
# the adapter forwards to, loopback only. The layers' packages are under /opt/python.
PYTHONPATH="/opt/python:${LAMBDA_TASK_ROOT:-.}${PYTHONPATH:+:$PYTHONPATH}" exec python -m uvicorn app:app \
  --host 127.0.0.1 --port "${AWS_LWA_PORT:-8080}" --lifespan off --no-access-log --no-server-header
