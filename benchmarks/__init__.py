"""`python -m benchmarks`: what each function costs against the floor of its own stack.

It starts its own Firestore emulator and Gemini protocol stand-in, seeds data, and
measures: warm latency against floor functions (interleaved A/B), Firestore round trips
per request (counted by a gRPC interceptor on the client's channel), cold starts
interleaved with the floor's and heavy imports, growth (list size, ingest volume,
analysis preparation, research prompt size) and the trigger pipeline. It prints a table
and writes the same figures as JSON to `benchmarks/results.json`. Never deployed.

Modules: `seeding` (tenants, tokens, data), `processes` (functions started as their own
processes), `counting` (round trips), `measuring` (latency, round trips, cold starts),
`growth` (size and pipeline), `telemetry` (the agents' telemetry through the OTLP
endpoints), `costs` (the mean-cost interval's coverage), `launch` (what `evidencia
launch` adds before an agent's first model request), `routing` and `trials` (the loop's
simulations), `patterns` (a refresh of 10,000 ended sessions and what summarising and
clustering cost), `reporting` (statistics and the table), `floor` (the floor functions).
Gemini is answered by the local development model (`cli/local_model.py`), the one
`serve --local-model` uses.
"""
