"""The research entry points: one thin module per registry entry, each handing its request
to the domain layer beside this folder."""
