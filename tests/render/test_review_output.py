"""What a reviewer reads: the estimate's change first, the value as written, every subcommand named."""

from __future__ import annotations

import pytest

from render.__main__ import main
from stacks.problems import StackConfigError
from tests.conftest import render_with


def test_render_diff_puts_the_estimates_change_first(capsys: pytest.CaptureFixture[str]) -> None:
    main(["diff", "dev", "prod"])
    out = capsys.readouterr().out
    assert out.startswith("estimates:\n")
    head = out[: out.index("resource changes")]
    assert "costPerHour: 32.73 -> 1067.28" in head and "tokensPerSecond: 95317 -> 1103941" in head


def test_an_unchanged_estimate_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    main(["diff", "dev", "dev"])
    assert capsys.readouterr().out.startswith("estimates: unchanged\n")


def test_a_fractional_node_count_is_shown_as_written() -> None:
    with pytest.raises(StackConfigError) as error:
        render_with("dev", nodes=2.5)
    assert "llm:nodes: 2.5 is not allowed" in str(error.value)


def test_render_help_names_the_diff_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "python -m render diff" in capsys.readouterr().out
