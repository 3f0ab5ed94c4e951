"""A small deterministic JSON API on 127.0.0.1 for the demo's tools: weather and currency conversion.

``GET /weather/{city}`` returns fixed fake weather for a handful of cities (404 for others);
``GET /convert?amount=&from=&to=`` converts with fixed rates. Nothing here is real data: the point is
that the demo's agent makes real HTTP calls through the same guarded tool path as production.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from stepwise.local.loopback import BackgroundServer

WEATHER: dict[str, dict[str, Any]] = {
    "paris": {"city": "Paris", "condition": "light rain", "temperature_c": 14.0, "humidity": 82, "wind_kph": 17},
    "london": {"city": "London", "condition": "overcast", "temperature_c": 12.0, "humidity": 77, "wind_kph": 22},
    "tokyo": {"city": "Tokyo", "condition": "sunny", "temperature_c": 23.0, "humidity": 55, "wind_kph": 9},
    "new york": {
        "city": "New York",
        "condition": "partly cloudy",
        "temperature_c": 18.0,
        "humidity": 60,
        "wind_kph": 14,
    },
    "sydney": {"city": "Sydney", "condition": "clear", "temperature_c": 21.0, "humidity": 48, "wind_kph": 11},
}

# Units of currency per US dollar.
RATES_PER_USD: dict[str, float] = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "JPY": 151.0, "CHF": 0.88, "CNY": 7.2}


class ExampleToolApi:
    """The example API, served from a daemon thread on a free loopback port.

    Use as a context manager, or call `start` and `stop`; `url` is the base URL once started.
    """

    def __init__(self) -> None:
        self._serving: BackgroundServer | None = None

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:54321``."""
        if self._serving is None:
            raise RuntimeError("the example API is not started")
        return self._serving.url

    def start(self) -> ExampleToolApi:
        """Bind a free port on 127.0.0.1 and serve in the background; a second call does nothing."""
        if self._serving is None:
            server = ThreadingHTTPServer(("127.0.0.1", 0), _ExampleHandler)
            server.daemon_threads = True
            self._serving = BackgroundServer(server, name="example-tool-api")
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._serving is not None:
            self._serving.stop()
            self._serving = None

    def __enter__(self) -> ExampleToolApi:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()


def example_tools_config(url: str) -> dict[str, Any]:
    """The ``apis:`` entry describing the example API as tools ``get_weather`` and ``convert_currency``.

    It is marked ``internal`` because the API listens on loopback, which is refused otherwise.
    """
    return {
        "url": url,
        "internal": True,
        "maxExecutionTime": 5000,
        "tools": [
            {
                "toolName": "get_weather",
                "description": "Current weather for a city: condition, temperature, humidity and wind.",
                "method": "GET",
                "path": "/weather/{city}",
                "parameter": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "description": "City name, e.g. Paris"},
                        "units": {
                            "type": "string",
                            "enum": ["metric", "imperial"],
                            "description": "metric (Celsius, km/h) or imperial (Fahrenheit, mph)",
                        },
                    },
                    "required": ["city"],
                },
            },
            {
                "toolName": "convert_currency",
                "description": "Convert an amount between currencies (USD, EUR, GBP, JPY, CHF, CNY).",
                "method": "GET",
                "path": "/convert",
                "parameter": {
                    "type": "object",
                    "properties": {
                        "amount": {"type": "number", "description": "Amount to convert"},
                        "from": {"type": "string", "description": "ISO code of the source currency"},
                        "to": {"type": "string", "description": "ISO code of the target currency"},
                    },
                    "required": ["amount", "from", "to"],
                },
            },
        ],
    }


def weather_report(city: str, units: str) -> dict[str, Any] | None:
    """The fixed weather of ``city`` (any case) in ``metric`` or ``imperial`` units; None if unknown."""
    known = WEATHER.get(city.strip().lower())
    if known is None:
        return None
    report = dict(known)
    if units == "imperial":
        report["temperature_f"] = round(report.pop("temperature_c") * 9 / 5 + 32, 1)
        report["wind_mph"] = round(report.pop("wind_kph") / 1.609344, 1)
    report["units"] = units
    return report


def convert_currency(amount: float, source: str, target: str) -> dict[str, Any] | None:
    """Convert with the fixed rates; None when either currency is unknown."""
    source, target = source.upper(), target.upper()
    if source not in RATES_PER_USD or target not in RATES_PER_USD:
        return None
    rate = RATES_PER_USD[target] / RATES_PER_USD[source]
    return {"amount": amount, "from": source, "to": target, "rate": round(rate, 6), "result": round(amount * rate, 2)}


class _ExampleHandler(BaseHTTPRequestHandler):
    server_version = "StepwiseExampleApi/1.0"

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {name: values[0] for name, values in parse_qs(parts.query).items()}
        if parts.path.startswith("/weather/"):
            self._weather(unquote(parts.path.removeprefix("/weather/")), query.get("units", "metric"))
        elif parts.path == "/convert":
            self._convert(query)
        else:
            self._send(HTTPStatus.NOT_FOUND, {"error": f"no such endpoint: {parts.path}"})

    def _weather(self, city: str, units: str) -> None:
        if units not in ("metric", "imperial"):
            self._send(HTTPStatus.BAD_REQUEST, {"error": "units must be metric or imperial"})
            return
        report = weather_report(city, units)
        if report is None:
            known = ", ".join(entry["city"] for entry in WEATHER.values())
            self._send(HTTPStatus.NOT_FOUND, {"error": f"unknown city {city!r}; known cities: {known}"})
            return
        self._send(HTTPStatus.OK, report)

    def _convert(self, query: dict[str, str]) -> None:
        missing = [name for name in ("amount", "from", "to") if not query.get(name)]
        if missing:
            self._send(HTTPStatus.BAD_REQUEST, {"error": f"missing query parameter(s): {', '.join(missing)}"})
            return
        try:
            amount = float(query["amount"])
        except ValueError:
            self._send(HTTPStatus.BAD_REQUEST, {"error": "amount must be a number"})
            return
        converted = convert_currency(amount, query["from"], query["to"])
        if converted is None:
            known = ", ".join(RATES_PER_USD)
            self._send(HTTPStatus.BAD_REQUEST, {"error": f"unknown currency; known currencies: {known}"})
            return
        self._send(HTTPStatus.OK, converted)

    def _send(self, status: HTTPStatus, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the demo prints its own trace."""
