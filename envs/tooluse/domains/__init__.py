"""Customer-service domains of rsigym/ToolUse-v0."""
