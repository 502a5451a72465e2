"""The MCP server's entry point."""
