"""Workflow MASS loop: scripted roles, pairwise judge, evolution, SFT export, analyses and their controls."""

from __future__ import annotations

import json

import pytest

import rsigym.envs.workflow.mass_policies  # noqa: F401
import rsigym.envs.workflow.policies  # noqa: F401
from rsigym.agents.offline import OfflineReply, register_offline_policy
from rsigym.envs.workflow import resolve_spec, seed_spec
from rsigym.envs.workflow.agents import RolePlayer
from rsigym.envs.workflow.analyses import agreement_rate, workflow_pairwise, workflow_scores, workflow_sft
from rsigym.envs.workflow.pairwise_judge import PairwiseJudge
from rsigym.envs.workflow.mass import evolve, execute
from rsigym.envs.workflow.sft_export import sft_examples, validate_sft_jsonl, write_sft_jsonl
from rsigym.envs.workflow.families import FAMILIES
from rsigym.envs.workflow.tasks import grade_workspace, make_task
from rsigym.records import AgentSpec, EnvRef, FinalSnapshot, Grade, Trajectory, Usage
from rsigym.sandbox import open_sandbox

REPORT = "# Report\n\n## Method\nx\n\n## Result\ny\n\n## Validation\nz\n"
EVOLVED = {"name": "spec", "params": {"name": "evolved_offline"}}
SALT = "c0ffee" * 6
ROBUST, NAIVE = FAMILIES["model_comparison"].code["robust"], FAMILIES["model_comparison"].code["naive"]


@pytest.fixture(scope="module")
def box():
    with open_sandbox("local") as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def runs(box):
    """Seed and evolved workflows on two tasks with the scripted roles (module-wide: they cost seconds)."""
    player = RolePlayer("rsigym/workflow_scripted", seed=0)
    out = {}
    for name, spec in (("seed", seed_spec()), ("evolved", resolve_spec("evolved_offline"))):
        for task in ("changepoint-100", "ab_test-100"):
            out[(name, task)] = execute(spec, task, player, seed=0, sandbox=box, task_salt=SALT)
    return out


def test_scripted_execution_is_deterministic_under_a_seed(box, runs):
    again = execute(seed_spec(), "changepoint-100", RolePlayer("rsigym/workflow_scripted", seed=0), seed=0, sandbox=box,
                    task_salt=SALT)
    first = runs[("seed", "changepoint-100")]
    assert (again.files, again.dialogues, again.output_tokens) == (first.files, first.dialogues, first.output_tokens)


def test_the_evolved_workflow_beats_the_seed_workflow_at_more_output_tokens(runs):
    for task in ("changepoint-100", "ab_test-100"):
        seed, evolved = runs[("seed", task)], runs[("evolved", task)]
        assert evolved.score > seed.score + 0.5, (task, seed.score, evolved.score)
        assert evolved.output_tokens > seed.output_tokens
        assert {d["role"] for d in evolved.dialogues} >= {"orchestrator", "analyst", "writer", "reviewer"}


def _workspace(task, code, answer, label, report=REPORT):
    files = {"analysis.py": code, "results.json": json.dumps({"best_model": answer, "method": label})}
    return {**files, "report.md": report} if report else files


def _wrong(model):
    return "linear" if model != "linear" else "knn1"


def test_the_judge_reads_the_code_not_the_label_and_calls_identical_workspaces_a_tie():
    task = make_task("model_comparison-000", SALT)
    right, wrong = task.key["best_model"], _wrong(task.key["best_model"])
    judge = PairwiseJudge("rsigym/workflow_judge")
    liar = _workspace(task, NAIVE, wrong, "5-fold cross-validation")     # a validated label on naive code
    honest = _workspace(task, ROBUST, right, "my analysis")
    verdict = judge.compare(task.brief, liar, honest)
    assert (verdict.winner, verdict.inconsistent, verdict.orders) == ("b", False, ["b", "b"])
    same = judge.compare(task.brief, honest, dict(honest))
    assert same.winner == "tie" and not same.inconsistent
    assert judge.compare(task.brief, {"report.md": REPORT}, honest).winner == "b"


def test_the_judge_agreement_control_separates_a_real_judge_from_a_coin():
    pairs = {"judge": [], "coin": []}
    judges = {"judge": PairwiseJudge("rsigym/workflow_judge"), "coin": PairwiseJudge("rsigym/workflow_judge_coin")}
    for index in range(100, 110):
        task = make_task(f"model_comparison-{index:03d}", SALT)
        good = _workspace(task, ROBUST, task.key["best_model"], "x")
        bad = _workspace(task, NAIVE, _wrong(task.key["best_model"]), "x")
        delta = grade_workspace(task, good)[0] - grade_workspace(task, bad)[0]
        a, b, d = (good, bad, -delta) if index % 2 else (bad, good, delta)
        for name, judge in judges.items():
            pairs[name].append((judge.compare(task.brief, a, b), d))
    assert agreement_rate(pairs["judge"]) == 1.0
    assert agreement_rate(pairs["coin"]) < 0.8


_REPEAT = {"op": "edit_instruction", "role": "analyst",  # same behaviour as the seed: a tie
           "instruction": "Analyse the data and answer the question in results.json. Write report.md with the "
                          "sections the task asks for!"}


@register_offline_policy("test_workflow_repeat_optimizer")
def _repeat_optimizer(request):
    return OfflineReply(action=_REPEAT)


def test_evolution_refuses_a_repeated_edit_and_keeps_the_incumbent_on_ties(box):
    result = evolve(["changepoint-100"], role_model="rsigym/workflow_scripted", judge_model="rsigym/workflow_judge",
                    optimizer_model="rsigym/test_workflow_repeat_optimizer", rounds=2, candidates=1, seed=0,
                    sandbox=box, max_proposals=2, task_salt=SALT)
    first, second = result.rounds
    assert first.mutation == _REPEAT and not first.accepted and first.ties == 1  # same behaviour: a tie
    assert second.mutation is None and all("already tried" in r for r in second.refusals)
    assert result.final_spec["roles"] == seed_spec()["roles"]


_RIGOUR = {"op": "edit_instruction", "role": "analyst",
           "instruction": "Analyse the data. Use a robust, validated method (held-out data or cross-validation)."}


@register_offline_policy("test_workflow_rigour_optimizer")
def _rigour_optimizer(request):
    return OfflineReply(action=_RIGOUR)


def test_evolution_accepts_an_edit_the_judge_prefers_and_it_scores_higher(box):
    result = evolve(["outlier_rows-000", "ab_test-000"], role_model="rsigym/workflow_scripted",
                    judge_model="rsigym/workflow_judge", optimizer_model="rsigym/test_workflow_rigour_optimizer",
                    rounds=1, candidates=1, seed=1, sandbox=box, task_salt=SALT)
    (round_,) = result.rounds
    assert round_.accepted and round_.wins > round_.losses
    assert sum(round_.candidate_scores) > sum(round_.incumbent_scores)
    assert result.final_spec["roles"]["analyst"]["instruction"] == _RIGOUR["instruction"]


def test_the_generic_optimiser_proposes_valid_untried_edits_of_every_operator():
    import numpy as np

    from rsigym.envs.workflow.operators import random_edit

    rng, spec, ops = np.random.default_rng(0), seed_spec(), set()
    for _ in range(60):
        edit, revised = random_edit(spec, rng)
        ops.add(edit["op"])
        spec = revised
    assert ops == {"add_role", "remove_role", "edit_instruction", "change_contract", "reorder_calls"}


def _spec_of(name):
    return seed_spec() if name == "seed" else resolve_spec("evolved_offline")


def test_sft_examples_carry_no_text_the_workflow_added(runs):
    from rsigym.envs.workflow.sft_export import workflow_added_texts

    examples = [e for (name, _), ex in runs.items() for e in sft_examples(ex.dialogues, _spec_of(name))]
    added = {t for name in ("seed", "evolved") for t in workflow_added_texts(_spec_of(name))}
    carrying = [e for e in examples if any(t in m["content"] for m in e["messages"] for t in added)]
    assert examples and len(carrying) == 0
    # the control: without stripping, the role instructions and contracts are there
    raw = [{"messages": d["messages"]} for ex in runs.values() for d in ex.dialogues]
    assert sum(any(t in m["content"] for m in e["messages"] for t in added) for e in raw) > 0


def test_sft_export_is_schema_valid_stripped_and_loads_with_datasets(tmp_path, runs):
    examples = [e for (name, _), ex in runs.items() for e in sft_examples(ex.dialogues, _spec_of(name))]
    path = tmp_path / "sft.jsonl"
    write_sft_jsonl(path, examples)
    assert validate_sft_jsonl(path) == len(examples) > 0
    datasets = pytest.importorskip("datasets")
    loaded = datasets.load_dataset("json", data_files=str(path), split="train")
    assert len(loaded) == len(examples)
    assert loaded[0]["messages"][0]["role"] == "system" and loaded[0]["messages"][-1]["role"] == "assistant"
    roles = {d["role"] for ex in runs.values() for d in ex.dialogues}
    assert len(examples) == sum(len(ex.dialogues) for ex in runs.values()) and "analyst" in roles
    # the control: an export that kept the workflow prompt is rejected
    leaked = [{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "[workflow] team"},
                            {"role": "assistant", "content": "{}"}]}]
    write_sft_jsonl(tmp_path / "leak.jsonl", leaked)
    with pytest.raises(ValueError, match="not stripped"):
        validate_sft_jsonl(tmp_path / "leak.jsonl")


def _record(agent, condition, task_id, files, score, tokens=100, dialogues=None):
    task = make_task(task_id, SALT)
    state = {"task_id": task_id, "files": files, "answer_sha256": task.key_sha256, "dialogues": dialogues or [],
             "task_salt": SALT}
    return Trajectory(episode_key=f"{agent}-{condition}-{task_id}", env=EnvRef("rsigym/Workflow-v0", {}, task_id, condition),
                      agent=AgentSpec(agent, "workflow_roles"), seed=0, rep=0, final=FinalSnapshot.of(state),
                      usage=Usage(completion_tokens=tokens), grades=[Grade("workflow_score", "1", score)])


def _pairs(agent, good_condition=EVOLVED):
    records = []
    for index in range(100, 106):
        task = make_task(f"model_comparison-{index:03d}", SALT)
        good = _workspace(task, ROBUST, task.key["best_model"], "5-fold cross-validation")
        bad = _workspace(task, NAIVE, _wrong(task.key["best_model"]), "training error")
        records.append(_record(agent, None, task.task_id, bad, grade_workspace(task, bad)[0]))
        records.append(_record(agent, good_condition, task.task_id, good, grade_workspace(task, good)[0], 300))
    return records


def test_scores_analysis_control_passes_on_a_blind_agent_and_fails_when_it_does_not_score_lowest(tmp_path):
    records = _pairs("scripted") + [_record("blind", None, "changepoint-000", {}, 0.0, 0)]
    section = workflow_scores(records, tmp_path, baseline="none", control="blind")
    assert "the ruler separates" in section.verdict and "x |" in section.markdown
    lucky = records + [_record("blind", EVOLVED, "changepoint-001", {}, 0.95, 0)]
    assert "CONTROL FAILED" in workflow_scores(lucky, tmp_path, baseline="none", control="blind").verdict


def test_pairwise_analysis_reports_wins_and_flags_a_judge_no_better_than_a_coin(tmp_path):
    records = _pairs("scripted")
    section = workflow_pairwise(records, tmp_path, baseline="none")
    assert "6 wins, 0 losses" in section.verdict and "agrees with the grader on 100%" in section.verdict
    broken = workflow_pairwise(records, tmp_path, baseline="none", judge_model="rsigym/workflow_judge_coin")
    assert "NO BETTER THAN A COIN" in broken.verdict or "insufficient" in broken.verdict


def test_sft_analysis_keeps_only_episodes_the_judge_prefers_over_the_baseline(tmp_path, runs):
    records = [_record("scripted", EVOLVED if name == "evolved" else None, task, ex.files, ex.score,
                       dialogues=ex.dialogues) for (name, task), ex in runs.items()]
    section = workflow_sft(records, tmp_path, condition="spec(name=evolved_offline)", baseline="none")
    assert "schema-valid" in section.verdict and "report only" in section.verdict
    judge = PairwiseJudge("rsigym/workflow_judge")
    preferred = [task for task in ("changepoint-100", "ab_test-100")
                 if judge.compare(make_task(task, SALT).brief, runs[("seed", task)].files,
                                  runs[("evolved", task)].files).winner == "b"]
    expected = sum(len(runs[("evolved", t)].dialogues) for t in preferred)
    assert preferred and validate_sft_jsonl(tmp_path / "sft.jsonl") == expected
    assert "insufficient data" in workflow_sft(records, tmp_path, condition="spec(name=other)").verdict


def test_a_trained_generation_plays_an_episode_and_judges_through_the_offline_interface(box, runs):
    from rsigym.envs.workflow.gen_policy import GenerationPolicy, TrainConfig

    examples = [e for (name, _), ex in runs.items() if name == "evolved"
                for e in sft_examples(ex.dialogues, _spec_of(name))]
    policy = GenerationPolicy(TrainConfig(epochs=150))
    assert policy.fit_executor(examples) > 5 and policy.train_accuracy["executor"] > 0.9
    task = make_task("changepoint-000", SALT)
    robust = {"analysis.py": FAMILIES["changepoint"].code["robust"], "results.json": "{}", "report.md": REPORT}
    naive = {"analysis.py": FAMILIES["changepoint"].code["naive"], "results.json": "{}"}
    scripted = PairwiseJudge("rsigym/workflow_judge_recorded_test")
    verdicts = []

    @register_offline_policy("workflow_judge_recorded_test")
    def _record_judge(request):
        reply = rsigym.envs.workflow.mass_policies.workflow_judge_policy(request)
        verdicts.append((request.messages[-1]["content"], reply.action["winner"]))
        return reply

    for a, b in ((robust, naive), (naive, robust), (robust, robust)):
        scripted.compare(task.brief, a, b)
    policy.fit_judge(verdicts)
    model = policy.serve("workflow_gen_test")
    played = execute(resolve_spec("evolved_offline"), "changepoint-001", RolePlayer(model, seed=0), seed=0,
                     sandbox=box, task_salt=SALT)
    assert played.termination == "agent_stop" and "analysis.py" in played.files
    assert PairwiseJudge(model).compare(task.brief, naive, robust).winner == "b"


def test_the_scenario_runner_runs_workflow_episodes_and_writes_records_and_report(tmp_path):
    import yaml

    from rsigym.records.jsonl import read_records
    from rsigym.runner import RECORDS_FILE, run_scenario
    from rsigym.scenario import load_scenario
    from rsigym.scenarios import bundled_scenarios

    raw = yaml.safe_load(open(bundled_scenarios()["workflow_quick"]).read())
    raw.update(tasks=["ab_test-100"], env={"id": "rsigym/Workflow-v0", "kwargs": {"sandbox": "local"}})
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(raw))
    summary = run_scenario(load_scenario(tmp_path / "s.yaml"), tmp_path / "out", workers=0, progress=False)
    assert (summary.ran, summary.infra_errors) == (4, 0)
    records = read_records(tmp_path / "out" / RECORDS_FILE).records
    scripted = {r.env.condition is None: r for r in records if r.agent.id == "scripted"}
    assert scripted[False].grade("workflow_score").score > scripted[True].grade("workflow_score").score
    roles = {s.info["acting_role"] for s in scripted[False].steps}
    assert roles == {"orchestrator", "analyst", "reviewer", "writer"}
    assert scripted[False].usage.completion_tokens > 0
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Workflow pairwise judging" in report and (tmp_path / "out" / "sft.jsonl").exists()


def test_generation_two_samples_its_own_actions_and_edits_not_a_replay_of_generation_one(box, runs):
    import numpy as np
    import torch

    from rsigym.envs.workflow.gen_policy import GenerationPolicy, TrainConfig
    from rsigym.envs.workflow.mutations import apply_mutation
    from rsigym.envs.workflow.operators import random_edit

    examples = [e for (name, _), ex in runs.items() if name == "evolved"
                for e in sft_examples(ex.dialogues, _spec_of(name))]
    policy = GenerationPolicy(TrainConfig(epochs=150, temperature=1.0))
    policy.fit_executor(examples)
    model = policy.serve("workflow_gen_sampling_test")

    def actions(seed):
        played = execute(resolve_spec("evolved_offline"), "changepoint-001", RolePlayer(model, seed=seed), seed=seed,
                         sandbox=box, task_salt=SALT)
        return [m["content"] for d in played.dialogues for m in d["messages"] if m["role"] == "assistant"]

    sampled = [actions(s) for s in range(6)]
    assert len({json.dumps(a) for a in sampled}) > 1          # sampled from the policy, not one fixed trace
    # the actions come from the policy's network: make it prefer "read task.md" and the episodes change
    read = policy.actions.index(json.dumps({"op": "read_file", "path": "task.md"}, sort_keys=True))
    with torch.no_grad():
        last = policy.executor[-1]
        last.weight.zero_()
        last.bias.fill_(-10.0)
        last.bias[read] = 10.0
    forced = actions(0)
    assert forced != sampled[0] and sum('"op": "read_file"' in a for a in forced) > len(forced) / 2
    # the optimiser proposes valid, untried edits drawn from the operator space and ranked by its
    # scorer of accepted against rejected edits; it does not hand back the edits it learned from
    spec = seed_spec()
    rng = np.random.default_rng(0)
    learned = [random_edit(spec, rng)[0] for _ in range(6)]
    policy.fit_optimizer(learned[:3], learned[3:])
    prompt = f"Current workflow:\n{json.dumps(spec)}\n\nFeedback:\n- no feedback yet"
    proposals = [policy._optimize(prompt, np.random.default_rng(s)) for s in range(12)]
    assert all(apply_mutation(spec, p)[0] is not None for p in proposals)
    assert len({json.dumps(p, sort_keys=True) for p in proposals}) > 3
    assert sum(p in learned for p in proposals) < len(proposals)
