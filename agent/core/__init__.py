"""The core that every layer imports: policy, events, MCP registry/detector/decisions,
data flow, sensitive data, the daemon clients and small shared helpers.

Nothing here imports the daemon, the CLI, the BPF layer, the shim or the proxy
(tests/test_layering.py; docs/architecture.md "Code layout").
"""
