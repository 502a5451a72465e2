"""Closing the loop: AgentConnect sessions joined to how the Psychologist saw them end."""
