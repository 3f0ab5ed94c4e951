"""Answers written over time: the HTTP pieces shared by `stepwise serve` and the streaming Lambda.

`answers` holds what a route answers and how it is written to an ASGI server; `proxy_event` turns an
HTTP request into the API Gateway REST proxy event the API's logic reads; `routes` are the two routes
that stream (run events as server-sent events, chat completions with `stream: true`); `lambda_app` is
the ASGI app the streaming function runs behind the AWS Lambda Web Adapter. Nothing here is imported
by the state handlers or the API function, so their cold start never loads uvicorn or this package.
"""
