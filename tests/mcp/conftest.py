"""The MCP tests' fixtures; their helpers live in ``mcp_harness`` so that no test imports a conftest."""

from mcp_harness import cli, served

__all__ = ["cli", "served"]
