"""Cost and time of a run: tokens, USD, latency and retries per agent, in every report.

Every step records the agent's usage and every record its usage by role (the agent, a simulated
user, a candidate generator, ...); this section adds them up per agent and role, so the price of a
result is printed next to it. Cost is LiteLLM's price map (0 where a model has no price: offline
models, unknown servers), latency is wall-clock time waiting for the model (or for a scripted
agent's ``act``), retries are provider errors retried and replies fed back as invalid.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..records.trajectory import Trajectory, Usage

if TYPE_CHECKING:
    from .report_parts import ReportSection

__all__ = ["usage_section", "usage_by_agent"]


def usage_by_agent(records: Sequence[Trajectory]) -> dict[tuple[str, str], tuple[int, Usage]]:
    """{(agent id, role): (episodes, summed usage)}; role ``all`` is the episode total."""
    table: dict[tuple[str, str], tuple[int, Usage]] = {}
    sums: dict[tuple[str, str], Usage] = defaultdict(Usage)
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for record in records:
        cells = [("all", record.usage), *record.usage_by_role.items()]
        for role, usage in cells:
            key = (record.agent.id, role)
            sums[key] = sums[key] + usage
            counts[key] += 1
    for key in sorted(sums, key=lambda k: (k[0], k[1] != "all", k[1])):
        table[key] = (counts[key], sums[key])
    return table


def usage_section(records: Sequence[Trajectory], out_dir: Path | None = None) -> ReportSection:
    """The report section "Cost and time": one row per agent (all roles), then one per role."""
    from .report_parts import ReportSection, md_text

    table = usage_by_agent(records)
    lines = ["Per agent: LLM calls, tokens and cost (LiteLLM's price map; 0 where unknown), time waiting "
             "for the agent and the env, provider retries and invalid replies fed back. `all` is the "
             "episode total; other rows split it by who called a model.", "",
             "| agent | role | episodes | model calls | prompt tokens | completion tokens | cost USD | "
             "USD / episode | latency s | latency s / episode | env s | provider retries | invalid replies |",
             "|---|---|" + "---:|" * 11]
    total = Usage()
    for (agent, role), (n, u) in table.items():
        if role == "all":
            total = total + u
        lines.append(f"| {md_text(agent)} | {md_text(role)} | {n} | {u.model_calls} | {u.prompt_tokens} | {u.completion_tokens} | "
                     f"{u.cost_usd:.4f} | {u.cost_usd / n:.4f} | {u.latency_s:.2f} | {u.latency_s / n:.3f} | "
                     f"{u.env_s:.2f} | {u.provider_retries} | {u.invalid_replies} |")
    verdict = (f"{total.prompt_tokens + total.completion_tokens} tokens, {total.cost_usd:.4f} USD, "
               f"{total.model_calls} model calls ({total.provider_retries} retried) over {len(records)} episodes"
               + (f"; {total.usage_estimated} calls without a valid usage report, their tokens counted locally"
                  if total.usage_estimated else ""))
    return ReportSection("Cost and time", "\n".join(lines), verdict)
