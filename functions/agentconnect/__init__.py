"""AgentConnect: a frozen, auditable model selection at the start of each agent session."""
