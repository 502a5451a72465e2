"""The account entry points: one thin module per registry entry."""
