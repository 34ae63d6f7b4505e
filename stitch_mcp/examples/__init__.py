"""The demo's bundled task: a reference and two candidates each for the GPU and the CPU path."""

from importlib.resources import files


def read(name: str) -> str:
    return files(__package__).joinpath(name).read_text(encoding="utf-8")
