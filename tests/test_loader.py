"""Building the models of a check (stitch_mcp.loader.build_model): parameters made on the target
device when the constructor allows it, the CPU way otherwise. 'meta' stands in for a GPU here."""
import pytest

from stitch_mcp.loader import build_model

torch = pytest.importorskip("torch")


class Linear(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = torch.nn.Linear(n, n)
        self.built_on = self.fc.weight.device.type


class CpuOnly(torch.nn.Module):
    def __init__(self):
        super().__init__()
        if torch.empty(1).device.type != "cpu":
            raise RuntimeError("this constructor only works on the CPU")
        self.w = torch.nn.Parameter(torch.ones(3))


def test_parameters_are_made_on_the_device():
    m = build_model(Linear, [4], "meta")
    assert m.built_on == "meta" and m.fc.weight.device.type == "meta"


def test_a_constructor_that_needs_the_cpu_is_built_there_and_moved():
    m = build_model(CpuOnly, [], "meta")
    assert m.w.device.type == "meta"


def test_cpu_models_are_seeded():
    a, b = build_model(Linear, [4], "cpu"), build_model(Linear, [4], "cpu")
    assert a.built_on == "cpu" and torch.equal(a.fc.weight, b.fc.weight)
