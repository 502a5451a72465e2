"""Statistics over samples, and the table `python -m benchmarks` prints."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(samples_ms: list[float]) -> dict[str, float]:
    return {
        "n": len(samples_ms),
        "p50_ms": round(pct(samples_ms, 0.5), 3),
        "p95_ms": round(pct(samples_ms, 0.95), 3),
    }


def spread(samples_ms: list[float]) -> dict[str, float]:
    """Median and spread (interquartile range, min, max) of a few slow samples."""
    return {
        "n": len(samples_ms),
        "median_ms": round(statistics.median(samples_ms), 1),
        "p25_ms": round(pct(samples_ms, 0.25), 1),
        "p75_ms": round(pct(samples_ms, 0.75), 1),
        "min_ms": round(min(samples_ms), 1),
        "max_ms": round(max(samples_ms), 1),
    }


def _warm_lines(results: dict[str, Any]) -> list[str]:
    lines = [
        "Warm latency (ms), function vs floor, interleaved:",
        f"  {'endpoint':34} {'p50':>8} {'p95':>8} {'floor p50':>10} {'floor p95':>10} {'ratio':>6}",
    ]
    for name, row in results["warm_latency"].items():
        lines.append(
            f"  {name:34} {row['function']['p50_ms']:8.2f} {row['function']['p95_ms']:8.2f} "
            f"{row['floor']['p50_ms']:10.2f} {row['floor']['p95_ms']:10.2f} {row['p50_ratio']:6.2f}"
        )
    lines.append(
        "Firestore round trips per request (cold / warm / floor), documents a warm one reads "
        "and writes:"
    )
    for name, row in results["round_trips"].items():
        calls = " ".join(row["warm_calls"])
        lines.append(
            f"  {name:34} {row['cold']:3} / {row['warm']:3} / {row['floor']:3}  "
            f"{row['reads']:4} read {row['writes']:4} written   {calls}"
        )
    lines.append("One job's worker (Firestore calls, documents read and written, Gemini calls):")
    for name, row in results["job_costs"].items():
        lines.append(
            f"  {name:34} {row['firestore_calls']:3} calls {row['reads']:5} read "
            f"{row['writes']:4} written {row['gemini_calls']:3} Gemini calls"
        )
    return lines


def _cold_lines(cold: dict[str, Any]) -> list[str]:
    lines = [
        "Cold start (ms, process start to first answer, median (p25-p75)), each function "
        "interleaved with its floor answering the same first request (floor_read: one "
        f"document read; median of every floor start {cold['floor']['median_ms']:.0f} ms):"
    ]
    for name, row in cold["functions"].items():
        own = row["function"]
        heavy = " ".join(row["heavy"])
        lines.append(
            f"  {name:34} {own['median_ms']:6.0f} ({own['p25_ms']:.0f}-{own['p75_ms']:.0f}, "
            f"n={own['n']}) x{row['ratio']:.2f} of {row['floor']['target']} "
            f"{row['floor']['median_ms']:.0f}  import {row['import_ms']:5.0f} ms  {heavy}"
        )
    return lines


def _growth_lines(results: dict[str, Any]) -> list[str]:
    growth = results["growth"]
    hl = growth["hypotheses_list"]
    lines = [
        f"Hypotheses list p50: 100 stored {hl['100']['p50_ms']:.2f} ms, "
        f"10,000 stored {hl['10000']['p50_ms']:.2f} ms (x{hl['p50_ratio']:.2f}); "
        f"floor x{hl['floor_p50_ratio']:.2f}"
    ]
    ingest = results["warm_latency"]["psychologist_session_events"]
    lines.append(
        f"Ingest: {ingest['events']} events in batches of 500 at {ingest['events_per_s']} events/s"
    )
    for size, row in growth["analysis_preparation"].items():
        lines.append(
            f"Analysis preparation, {size} events: {row['wall_s']} s, peak {row['peak_mib']} MiB, "
            f"{row['gemini_calls']} Gemini calls, at most {row['max_tokens_per_call']} "
            f"tokens a call (budget {row['budget_tokens']})"
        )
    prompt = growth["research_prompt"]
    for count, row in prompt["items"].items():
        lines.append(
            f"Research prompt, {count} items: {row['chars']} chars, "
            f"~{row['estimated_tokens']} tokens, input_too_large={row['input_too_large']}"
        )
    lines.append(
        f"  input_too_large from {prompt['input_too_large_from_items']} such items "
        f"(budget {prompt['budget_tokens']} tokens)"
    )
    lines.append("Trigger pipeline, document created -> worker finished (ms):")
    for name, row in results["pipeline"].items():
        if isinstance(row, dict):
            lines.append(
                f"  {name:34} p50 {row['p50_ms']:8.1f}  p95 {row['p95_ms']:8.1f}  n={row['n']}"
            )
    if "research_quote_repairs" in results["pipeline"]:
        lines.append(
            f"  research runs asked again for a misquote: "
            f"{results['pipeline']['research_quote_repairs']}"
        )
    return lines


def _cost_cells(row: dict[str, Any]) -> str:
    return f"{row['tokens']:>7} tokens ({row['cached_tokens']:>6} cached)  ${row['cost_usd']:.5f}"


def _models(models: dict[str, str]) -> str:
    return ", ".join(f"{flow} on {model}" for flow, model in models.items())


def _token_lines(tokens: dict[str, Any]) -> list[str]:
    lines = [
        f"Gemini tokens and cost per analysis ({_models(tokens['models'])}, prices read "
        f"{tokens['prices_read']}; local development model's answers), first / repeated:"
    ]
    lines += [
        f"  research run, {row['items']:>5} items:  {_cost_cells(row['first'])}  /  "
        f"{_cost_cells(row['repeated'])}"
        for row in tokens["research"]
    ]
    analysis = tokens["analysis"]
    lines.append(
        f"  analysis, {analysis['events']} events:   {_cost_cells(analysis['first'])}  /  "
        f"{_cost_cells(analysis['repeated'])}"
    )
    evaluation = tokens["evaluation"]
    lines.append(
        f"  evaluation, per step:     {_cost_cells(evaluation['per_step'])}  "
        f"(prompt under the cache's {evaluation['cache_min_tokens']}-token minimum)"
    )
    return lines


def _mcp_lines(mcp: dict[str, Any]) -> list[str]:
    warm, cold = mcp["warm"], mcp["cold"]
    return [
        "MCP status tool vs the HTTP status endpoint (same run, same token):",
        f"  warm p50 {warm['mcp']['p50_ms']:.2f} ms vs {warm['http']['p50_ms']:.2f} ms "
        f"(x{mcp['warm_p50_ratio']:.2f}); cold start {cold['mcp']['median_ms']:.0f} ms vs "
        f"{cold['http']['median_ms']:.0f} ms (x{mcp['cold_ratio']:.2f})",
    ]


def _burst_lines(bursts: dict[str, Any]) -> list[str]:
    lines = ["Bursts and mixed load (real threads, answers by status, p50 / p95 / slowest):"]
    for group, rows in bursts.items():
        for label, row in rows.items():
            answered = ", ".join(f"{n} x {status}" for status, n in row["statuses"].items())
            lines.append(
                f"  {group} {label}: {answered}; {row['p50_ms']:.0f} / {row['p95_ms']:.0f} / "
                f"{row['max_ms']:.0f} ms"
            )
    return lines


def _throughput_lines(throughput: dict[str, Any]) -> list[str]:
    lines = [
        "Throughput of one instance (THREADS = concurrency = clients at once), function vs "
        "floor: requests/s and p50/p95 ms:",
        f"  {'endpoint':30} {'c':>3} {'rps':>8} {'p50':>8} {'p95':>8} "
        f"{'floor rps':>10} {'p50':>8} {'p95':>8} {'ratio':>6}",
    ]
    for name, levels in throughput.items():
        for level, row in levels.items():
            own, floor = row["function"], row["floor"]
            lines.append(
                f"  {name:30} {level:>3} {own['rps']:8.1f} {own['p50_ms']:8.2f} "
                f"{own['p95_ms']:8.2f} {floor['rps']:10.1f} {floor['p50_ms']:8.2f} "
                f"{floor['p95_ms']:8.2f} {row['rps_ratio']:6.2f}"
            )
    return lines


def _routing_lines(routing: dict[str, Any]) -> list[str]:
    real, sim = routing["real_path"], routing["simulation"]
    coverage, error = sim["coverage"], sim["estimator_error"]
    policies = sim["policies"]
    recommended = policies["recommended"]
    lines = [
        "Model selection judged by outcomes:",
        f"  real path: {real['sessions_sent']} sessions started, logged and ended; report "
        f"joined {real['report_joined']}; per-target counts equal to what was sent: "
        f"{'yes' if real['counts_equal'] else 'NO'}; the report read cost "
        f"{real['report_cost']['firestore_calls']} Firestore calls and "
        f"at most {real['report_cost']['reads']} documents read ({real['report_targets']} "
        "targets; a query counted at its limit)",
        f"  simulation: {sim['replications']} replications of {sim['sessions_per_replication']} "
        f"sessions at exploration {sim['exploration_share']} "
        f"({sim['explored_per_replication']:.0f} explored each)",
        f"  coverage of 95% intervals (goal 93-97%): target shares (Wilson) "
        f"{coverage['target_shares_wilson']:.1%} of {coverage['target_share_intervals']}; "
        f"current rules (SNIPW) {coverage['current_rules_snipw']:.1%}; every served "
        f"estimate {coverage['every_served_estimate_snipw']:.1%} of "
        f"{coverage['served_estimates']}",
        f"  estimator error against the truth: mean absolute {error['mean_absolute']:.4f}, "
        f"mean signed {error['mean_signed']:+.4f}",
        f"  recommendations: {recommended['replications_with_a_recommendation']} of "
        f"{sim['replications']} replications, {recommended['recommendations_truly_worse']} "
        "of them truly no better than the current rules",
        f"  {'policy':18} {'abnormal share':>15} {'strongest share':>16}",
    ]
    for name in ("recommended", "current_rules", "always_strongest", "always_default"):
        row = policies[name]
        lines.append(f"  {name:18} {row['abnormal_share']:15.4f} {row['strongest_share']:16.4f}")
    if "changes" in routing:
        from benchmarks.routing_changes import lines as changes_lines

        lines += changes_lines(routing)
    return lines


def _trial_lines(trials: dict[str, Any]) -> list[str]:
    lines = [
        f"Randomised trials read after every session to {trials['horizon']:,} "
        f"({trials['null_trials']:,} null trials per share, {trials['trials']:,} per power figure):"
    ]
    for method in ("safe", "asymptotic"):
        found = trials[method]
        false = ", ".join(
            f"{each['control_share']:.0%} {each['false_share']:.1%}" for each in found["null"]
        )
        power = ", ".join(
            f"RR {each['true_ratio']} at {each['control_share']:.0%} within {each['within']} "
            f"{each['found_share']:.1%} (80% by {each['sessions_for_80']})"
            for each in found["power"]
        )
        lines.append(f"  {method}: false verdicts {false}; found {power}")
    splits = ", ".join(
        f"{each['joined_share']:.0%}/{each['control_share']:.0%} {each['false_share']:.1%}"
        for each in trials["splits"]
    )
    lines.append(f"  unequal splits (treated/control share): false verdicts {splits}")
    lines.extend(
        f"  mismatch flag, lost {each['lost']}: {each['flagged_share']:.1%}"
        for each in trials["sample_ratio_mismatch"]
    )
    false_harm = ", ".join(
        f"{each['control_share']:.0%} {each['false_share']:.1%}" for each in trials["harm_null"]
    )
    lines.append(f"  guardrail, no true difference: harm found {false_harm}")
    for each in trials["harm"]:
        mirror = each["mirror"]
        lines.append(
            f"  harm {each['true_ratio']} at {each['control_share']:.0%}: 80% by "
            f"{each['sessions_for_80']}; mirror {mirror['true_ratio']} at "
            f"{mirror['control_share']:.0%}: 80% by {mirror['sessions_for_80']}"
        )
    for each in trials["sessions_needed"]:
        found = "-" if each["found_share"] is None else f"{each['found_share']:.1%}"
        lines.append(
            f"  sessionsNeeded {'harm ' if each.get('harm') else ''}{each['ratio']} at "
            f"{each['control_shares']}: {each['sessions_needed']}, found within {found}"
        )
    return lines


def _met(met: bool) -> str:
    return "met" if met else "NOT met"


def _auto_adopt_lines(adopt: dict[str, Any]) -> list[str]:
    adopted = ", ".join(
        f"{each['control_share']:.0%} {each['adopted_share']:.1%}" for each in adopt["null"]
    )
    effect = adopt["effect"]
    return [
        f"autoAdopt read after every session to {adopt['horizon']:,} "
        f"({adopt['null_trials']:,} trials per control rate, {effect['trials']:,} with an effect):",
        f"  no true effect, trials ever adopted: {adopted} (goal at most "
        f"{adopt['goal_adopted_max']:.0%}: {_met(adopt['met'])})",
        f"  ratio {effect['true_ratio']} at {effect['control_share']:.0%}: adopted by "
        f"{effect['sessions_median']} sessions (median), {effect['sessions_80']} (80%); "
        f"{effect['adopted_share']:.1%} adopted, {effect['stopped_share']:.1%} stopped first by "
        "the guardrail",
    ]


def _pattern_rate_lines(rate: dict[str, Any]) -> list[str]:
    false = ", ".join(
        f"{each['control_share']:.0%} {each['false_share']:.1%}" for each in rate["null"]
    )
    covered = ", ".join(
        f"{each['true_ratio']} at {each['control_share']:.0%} {each['coverage']:.1%}"
        for each in rate["coverage"]
    )
    unequal = rate["unequal_recall"]
    lowest = min(each["coverage"] for each in rate["coverage"])
    worst = max(each["false_share"] for each in rate["null"])
    return [
        f"A pattern's own rate per arm read after every session to {rate['horizon']:,}, "
        f"{rate['summarised']:.0%} of sessions summarised and joins found at recall "
        f"{rate['recall']} in both arms (the observed ratio is the true one):",
        f"  false verdicts, no true effect: {false} of {rate['null_trials']:,} trials each "
        f"(goal at most {rate['goal_false_max']:.0%}: {_met(worst <= rate['goal_false_max'])})",
        f"  the sequence holds the ratio at every read: {covered} of "
        f"{rate['coverage_trials']:,} trials each (goal at least "
        f"{rate['goal_coverage_min']:.0%}: {_met(lowest >= rate['goal_coverage_min'])})",
        f"  recall {unequal['recall'][0]} treated, {unequal['recall'][1]} control: holds the "
        f"observed ratio {unequal['observed_ratio']} in {unequal['coverage_observed']:.1%}, "
        f"the true {unequal['true_ratio']} in {unequal['coverage_true']:.1%}",
    ]


def _session_start_lines(start: dict[str, Any]) -> list[str]:
    without, with_ = start["without"], start["with"]
    return [
        f"Session start, documents read (first of an instance / warm, median of "
        f"{start['starts'] - 1}): without instructions {without['first_reads']} / "
        f"{without['warm_reads']:g}, with {with_['first_reads']} / {with_['warm_reads']:g} "
        f"(goal at most {start['goal_more_reads']} more: {_met(start['met'])})",
    ]


def _telemetry_lines(telemetry: dict[str, Any]) -> list[str]:
    goal = telemetry["goal_per_record"]
    lines = [
        f"Telemetry through the OTLP endpoints, documents per new record (goal at most {goal} "
        "read and written per log record and per span):"
    ]
    for name in ("per_log_record", "per_span", "per_metric_point"):
        row = telemetry[name]
        lines.append(
            f"  {name:18} {row['sent']:5} sent in {row['exports']} exports, {row['new']} new: "
            f"{row['reads']:.4f} read {row['writes']:.4f} written {row['deletes']:.4f} deleted"
        )
    session = telemetry["claude_code_session"]
    whole, stored = session["session"], session["stored"]
    lines.append(
        f"  Claude Code session, {session['prompts']} prompts over {session['minutes']:g} min: "
        f"{whole['records']} records in {whole['exports']} exports "
        f"({whole['records_per_minute']:g} records and {whole['exports_per_minute']:g} exports "
        f"a minute), {whole['reads']} read, {whole['writes']} written, {whole['deletes']} "
        f"deleted; {stored['events']} events stored, {stored['tool_errors']} tool errors"
    )
    for signal, row in session["signals"].items():
        lines.append(
            f"    {signal:8} {row['exports']:4} exports ({row['exports_per_minute']:g}/min) "
            f"{row['records']:5} records ({row['records_per_minute']:g}/min): per export "
            f"{row['reads_per_export']:g} read {row['writes_per_export']:g} written; per record "
            f"{row['reads_per_record']:.3f} read {row['writes_per_record']:.3f} written"
        )
    return lines


def _cost_interval_lines(costs: dict[str, Any]) -> list[str]:
    lines = [
        f"Mean-cost 95% interval coverage of the true mean ({costs['replications']:,} "
        "replications each; Student's t beside it):"
    ]
    for each in costs["distributions"]:
        cells = ", ".join(
            f"n={row['sessions']} {row['coverage']:.1%} (normal {row['coverage_normal']:.1%})"
            + (" POOR" if row["poor"] else "")
            for row in each["sizes"]
        )
        worst = each["worst"]
        lines.append(
            f"  {each['distribution']}: {cells}; worst {worst['coverage']:.1%} at "
            f"{worst['sessions']} ({worst['sizes_under_goal']} sizes under "
            f"{costs['worst_goal']:.0%})"
        )
    return lines


def _launch_lines(launch: dict[str, Any]) -> list[str]:
    added, beyond = launch["added"], launch["beyond_gemini"]
    lines = [
        f"evidencia launch before Claude Code's first model request, {launch['pairs']} pairs "
        f"(direct p50 {launch['direct']['p50_ms']:.0f} ms, launched "
        f"{launch['launched']['p50_ms']:.0f} ms): adds p50 {added['p50_ms']:.0f} ms, p95 "
        f"{added['p95_ms']:.0f} ms; beyond the Gemini call p50 {beyond['p50_ms']:.0f} ms "
        f"(goal at most {launch['goal_s'] * 1000:.0f} ms: {'met' if launch['met'] else 'NOT met'})"
    ]
    for part, row in launch["parts"].items():
        lines.append(f"  {part:14} p50 {row['p50_ms']:8.1f} ms  p95 {row['p95_ms']:8.1f} ms")
    reads = launch["wait_reads"]
    lines.append(
        f"  wait: {reads['polls_p50']} polls (at most {reads['polls_max']}), "
        f"{reads['reads_p50']} documents read (at most {reads['reads_max']}); a listener "
        f"{reads['listener_reads_p50']}"
    )
    return lines


def _hook_lines(hook: dict[str, Any]) -> list[str]:
    added = hook["added"]
    return [
        f"The session-start hook before Claude Code's first model request, {hook['pairs']} "
        f"pairs (plain p50 {hook['plain']['p50_ms']:.0f} ms, hooked "
        f"{hook['hooked']['p50_ms']:.0f} ms): adds p50 {added['p50_ms']:.0f} ms, p95 "
        f"{added['p95_ms']:.0f} ms (goal at most {hook['goal_ms']:.0f} ms at p50: "
        f"{'met' if hook['met'] else 'NOT met'})"
    ]


def _refresh_line(name: str, row: dict[str, Any]) -> str:
    return (
        f"  {name}: {row['wall_s']:g} s, peak {row['rss_peak_mib']} MiB "
        f"(+{row['rss_growth_mib']} MiB), {row['reads_per_session']:g} documents read and "
        f"{row['writes_per_session']:g} written a session"
    )


def _patterns_lines(patterns: dict[str, Any]) -> list[str]:
    first, covered, cost = patterns["first"], patterns["coverage"], patterns["cost"]
    deployed = patterns["repeat_as_deployed"]
    parts = ", ".join(f"{part} ${usd:.4f}" for part, usd in cost["per_1000_sessions_usd"].items())
    lines = [
        f"Patterns: one refresh over {patterns['sessions']:,} ended sessions (goals "
        f"{patterns['goals']['wall_s']} s and {patterns['goals']['peak_mib']} MiB: "
        f"{'met' if patterns['met'] else 'NOT met'})",
        _refresh_line("first", first),
        _refresh_line("repeat", patterns["repeat"]),
    ]
    if not deployed["completed"]:
        lines.append(
            f"  repeat as deployed: failed {deployed['failed']} after {deployed['after_s']:g} s"
        )
    return [
        *lines,
        f"  embedding requests {first['embedding_requests']} "
        f"({first['spent']['embedding_tokens']:,} tokens), label calls "
        f"{first['spent']['label_calls']} ({first['spent']['input_tokens']:,} in, "
        f"{first['spent']['output_tokens']:,} out)",
        f"  covered: {covered['sessions_ended']:,} of {covered['sessions_seeded']:,} ended; "
        f"{covered['embedded']:,} of {covered['failing']:,} failing embedded, "
        f"{covered['grouped']:,} grouped in {covered['patterns']} patterns, {covered['lone']} lone",
        f"  per 1,000 sessions ${cost['total_per_1000_usd']:.4f} (goal at most "
        f"${cost['goal_per_1000_usd']:.2f}: {'met' if cost['met'] else 'NOT met'}): {parts}",
    ]


SECTION_LINES: tuple[tuple[tuple[str, ...], Callable[[dict[str, Any]], list[str]]], ...] = (
    (("warm_latency", "round_trips", "job_costs"), _warm_lines),
    (("throughput",), lambda results: _throughput_lines(results["throughput"])),
    (("cold_start",), lambda results: _cold_lines(results["cold_start"])),
    (("mcp",), lambda results: _mcp_lines(results["mcp"])),
    (("growth", "pipeline", "warm_latency"), _growth_lines),
    (("tokens",), lambda results: _token_lines(results["tokens"])),
    (("bursts",), lambda results: _burst_lines(results["bursts"])),
    (("routing",), lambda results: _routing_lines(results["routing"])),
    (("trials",), lambda results: _trial_lines(results["trials"])),
    (("auto_adopt",), lambda results: _auto_adopt_lines(results["auto_adopt"])),
    (("pattern_rate",), lambda results: _pattern_rate_lines(results["pattern_rate"])),
    (("session_start",), lambda results: _session_start_lines(results["session_start"])),
    (("telemetry",), lambda results: _telemetry_lines(results["telemetry"])),
    (("cost_intervals",), lambda results: _cost_interval_lines(results["cost_intervals"])),
    (("launch",), lambda results: _launch_lines(results["launch"])),
    (("hook",), lambda results: _hook_lines(results["hook"])),
    (("patterns",), lambda results: _patterns_lines(results["patterns"])),
)
"""Each table and the results it is made of: a run of some sections (`--only`) into a new
results file prints the tables it has."""


def table(results: dict[str, Any]) -> str:
    return "\n".join(
        line
        for sections, lines in SECTION_LINES
        if all(section in results for section in sections)
        for line in lines(results)
    )
