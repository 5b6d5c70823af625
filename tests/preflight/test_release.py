"""The preflight runs only a vLLM release the project's facts cover, and holds the rendered flags to it."""

from __future__ import annotations

import pytest

from facts.vllm import facts
from preflight.adapt import RefusedError
from preflight.rendered import flag_names, read_engine
from preflight.run import covered
from tests.preflight.runs import DEV, report


def test_a_covered_release_runs() -> None:
    covered("0.26.0", "installed")


def test_another_release_is_refused_naming_the_covered_ones_and_how_to_add_one() -> None:
    with pytest.raises(RefusedError) as refused:
        covered("0.25.0", "installed in /usr/bin/python3")
    message = str(refused.value)
    assert message.startswith("vLLM 0.25.0 (installed in /usr/bin/python3) is not covered")
    assert "0.18.1, 0.26.0, 0.33.0" in message and "dev/vllm_facts.py" in message


@pytest.mark.parametrize("release", ["0.18.1", "0.26.0"])
def test_every_rendered_flag_is_taken_by_the_pinned_release_and_the_one_that_ran(release: str) -> None:
    names = flag_names(read_engine(DEV / "rendered").flags)
    assert [name for name in names if not facts(release).takes(name)] == []


def test_the_stack_could_choose_the_prefill_backend_itself_on_both_releases() -> None:
    assert facts("0.26.0").takes("--gdn-prefill-backend") and facts("0.18.1").takes("--gdn-prefill-backend")
    assert report(DEV)["flags"]["unknown_to_release"] == []
