"""``lsp-memory mcp --http 127.0.0.1:0 --no-auth`` as the conformance suite meets it, plus
the one tool its ``json-schema-2020-12`` scenario lists: ``json_schema_2020_12_tool``, whose
input schema (``$schema``, ``$defs``, ``additionalProperties``) must reach the client
unchanged through the SDK and this transport. A test fixture, never part of the server:
the other scenarios see the server exactly as users run it.

Run as ``python -m tests.mcp.conformance_server`` with the usual settings in the
environment (``LSP_MEMORY_STORE``, ``LSP_MEMORY_USER``); it writes the URL to stderr."""

from __future__ import annotations

from typing import Any

from lsp_memory.app import App
from lsp_memory.config import load_config
from lsp_memory.mcp.http import serve_http, settings_from
from lsp_memory.mcp.server import Lanes, build

TOOL = "json_schema_2020_12_tool"
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


def main() -> None:
    config, _warnings = load_config({})
    app = App(config)
    lanes = Lanes(app)
    server = build(app, lanes)

    def json_schema_2020_12_tool(
        name: str | None = None, address: dict[str, Any] | None = None
    ) -> str:
        return f"{name}: {address}"

    server.add_tool(
        json_schema_2020_12_tool, name=TOOL, description="Tool with JSON Schema 2020-12 features"
    )
    # The SDK makes a tool's schema from its signature; the scenario's schema is given.
    server._tool_manager.get_tool(TOOL).parameters = SCHEMA  # type: ignore[union-attr]
    settings, _ = settings_from("127.0.0.1:0", no_auth=True)
    try:
        serve_http(server, settings, generated=False)
    finally:
        lanes.close()


if __name__ == "__main__":
    main()
