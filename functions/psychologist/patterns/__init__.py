"""Patterns: what goes wrong again and again across an agent's sessions. Each ended
session's summary names its main failure in one sentence; the sentences are embedded,
grouped by meaning (`clustering`), matched to the patterns already known so that a
pattern keeps its id (`identity`), labelled by Gemini with claims checked against the
events they cite (`labels`), and counted over every ended session (`refresh`, and `joins`
as each new one ends). They read the Psychologist's summaries and outcome records through
its stores, never its worker."""
