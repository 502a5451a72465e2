"""Research with citations: conversations, evidence, and cited Gemini runs over them."""
