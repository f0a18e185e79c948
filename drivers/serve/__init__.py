"""`cra serve`: warm knowledge bases served to coding agents over MCP."""
