"""MCP for AI assistants: every connected client is a gem of kind ``assistant``.

Not named ``mcp``, which would shadow the SDK. Nothing here is imported by ``import notochord``.
"""
