"""The process boundary of gem tools: a JSON-RPC channel over stdio between the host and each tool.

``child.py`` (Python tools) and ``shim.mjs`` (JavaScript tools under node) run *inside* the tool's
process and import nothing of notochord's host side; ``host.py`` runs in the host and executes every
call through the same ``ctx`` facades as in-process calls.
"""
