"""A memory-aware order in ExecuTorch: the reordered program runs right and its arena shrinks."""

from __future__ import annotations

import functools
import re

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch.exir", reason="the ExecuTorch route needs executorch")
pytest.importorskip("executorch.runtime", reason="running a .pte needs executorch's runtime")

from executorch.exir import ExecutorchBackendConfig, to_edge  # noqa: E402
from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, greedy  # noqa: E402
from executorch.exir.passes import MemoryPlanningPass  # noqa: E402
from executorch.runtime import Runtime  # noqa: E402

from gaplanner.integrations.executorch import plan_memory  # noqa: E402
from gaplanner.integrations.executorch_schedule import schedule_for_memory  # noqa: E402
from gaplanner.schedule import ScheduleSettings  # noqa: E402


class Branches(torch.nn.Module):
    """Four wide branches, each squeezed to a small result; the code computes every wide one first."""

    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.ModuleList([torch.nn.Linear(32, 512) for _ in range(4)])
        self.down = torch.nn.ModuleList([torch.nn.Linear(512, 8) for _ in range(4)])

    def forward(self, x):
        wide = [torch.relu(up(x)) for up in self.up]
        return torch.cat([down(w) for down, w in zip(self.down, wide, strict=True)], dim=1)


def lower(model, inputs, algorithm, reorder: bool):
    edge = to_edge(torch.export.export(model, inputs))
    result = schedule_for_memory(edge, settings=ScheduleSettings(time_limit=2.0)) if reorder else None
    suite = MemoryPlanningAlgorithmSuite(algo_list=[algorithm])
    config = ExecutorchBackendConfig(memory_planning_pass=MemoryPlanningPass(memory_planning_algo=suite))
    return edge.to_executorch(config), result


def kind(name: str) -> str:
    """A node's operator without the number that tells nodes of one operator apart (re-traces renumber)."""
    return re.sub(r"_\d+$", "", name)


def kinds(program, order) -> list[str]:
    names = {kind(name) for name in order}
    return [kind(n.name) for n in program.exported_program().graph.nodes if kind(n.name) in names]


def arena(program) -> int:
    return program.exported_program().graph_module.meta["non_const_buffer_sizes"][1]


@pytest.mark.slow
def test_a_reordered_program_runs_as_eager_in_a_smaller_arena():
    torch.manual_seed(0)
    model, inputs = Branches().eval(), (torch.randn(16, 32),)
    planner = functools.partial(plan_memory, time_limit=1.0, seed=0)
    default, _ = lower(model, inputs, greedy, reorder=False)
    given_order, _ = lower(model, inputs, planner, reorder=False)
    ours, result = lower(model, inputs, planner, reorder=True)
    assert result is not None and result.chosen_bound < result.given_bound
    assert kinds(ours, result.order) == [kind(name) for name in result.order]  # to_executorch kept it
    wide = 16 * 512 * 4
    assert arena(default) >= 4 * wide  # ExecuTorch's order: every wide activation live at once
    assert arena(given_order) >= 4 * wide  # the planner alone cannot help: the order sets the bound
    assert arena(ours) <= 0.6 * arena(default)
    method = Runtime.get().load_program(ours.buffer).load_method("forward")
    (output,) = method.execute(list(inputs))
    torch.testing.assert_close(output, model(*inputs), rtol=1e-5, atol=1e-5)
