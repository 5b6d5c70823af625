"""A program's files shipped as a ConfigMap, on a hand-made repository: its keys, volume, mount, paths and digest."""

from __future__ import annotations

from pathlib import Path

import pytest

from components import programs
from components.programs import Program, key_of, program

LABELS = {"team": "ml"}


@pytest.fixture
def repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository of three programs' files, and one file of another kind."""
    for path, text in {
        "workloads/batch/runner.py": "import lines\n",
        "workloads/batch/lines.py": "LINES = 'é'\n",
        "workloads/cache_release.py": "print('release')\n",
        "workloads/batch/README.md": "not shipped\n",
    }.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    monkeypatch.setattr(programs, "REPOSITORY", tmp_path)
    return tmp_path


def test_a_key_is_the_repository_path_with_dots_for_slashes() -> None:
    assert key_of("workloads/batch/runner.py") == "workloads.batch.runner.py"


def test_a_program_is_the_files_its_patterns_match_sorted_once_each(repository: Path) -> None:
    batch = program("batch-runner", ("workloads/batch/*.py", "workloads/batch/runner.py", "workloads/*.py"), "/opt/batch")
    assert batch == Program(
        "batch-runner", ("workloads/batch/lines.py", "workloads/batch/runner.py", "workloads/cache_release.py"), "/opt/batch"
    )


def test_a_pattern_that_matches_nothing_is_refused_with_the_programs_name(repository: Path) -> None:
    with pytest.raises(ValueError, match=r"^release: no file matches \('workloads/release/\*\.py',\)$"):
        program("release", ("workloads/release/*.py",), "/opt/release")


def test_the_config_map_holds_each_files_text_by_its_key(repository: Path) -> None:
    batch = program("batch-runner", ("workloads/batch/*.py",), "/opt/batch")
    assert batch.config_map("serving", LABELS) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "batch-runner", "namespace": "serving", "labels": LABELS},
        "data": {"workloads.batch.lines.py": "LINES = 'é'\n", "workloads.batch.runner.py": "import lines\n"},
    }


def test_the_volume_lays_the_files_out_at_their_paths_under_the_read_only_root(repository: Path) -> None:
    batch = program("batch-runner", ("workloads/batch/*.py",), "/opt/batch")
    assert batch.volume() == {
        "name": "batch-runner",
        "configMap": {
            "name": "batch-runner",
            "items": [
                {"key": "workloads.batch.lines.py", "path": "workloads/batch/lines.py"},
                {"key": "workloads.batch.runner.py", "path": "workloads/batch/runner.py"},
            ],
        },
    }
    assert batch.mount() == {"name": "batch-runner", "mountPath": "/opt/batch", "readOnly": True}
    assert batch.path_of("workloads/batch/runner.py") == "/opt/batch/workloads/batch/runner.py"
    with pytest.raises(AssertionError, match=r"^workloads/cache_release\.py is not shipped with batch-runner$"):
        batch.path_of("workloads/cache_release.py")


def test_the_digest_follows_every_files_name_and_text_and_nothing_else(repository: Path) -> None:
    batch = program("batch-runner", ("workloads/batch/*.py",), "/opt/batch")
    digest = batch.digest()
    assert len(digest) == 16 and int(digest, 16) >= 0
    # The program's name, root and the order its paths are listed in do not change what runs.
    assert Program("other", tuple(reversed(batch.paths)), "/srv").digest() == digest
    (repository / "workloads/batch/lines.py").write_text("LINES = 'e'\n", encoding="utf-8")
    changed = batch.digest()
    assert changed != digest
    # The same texts under each other's names are other code.
    (repository / "workloads/batch/lines.py").write_text("import lines\n", encoding="utf-8")
    (repository / "workloads/batch/runner.py").write_text("LINES = 'e'\n", encoding="utf-8")
    assert batch.digest() != changed
    # A text moved from the end of one file to the start of the next is other code as well.
    (repository / "workloads/batch/lines.py").write_text("import ", encoding="utf-8")
    (repository / "workloads/batch/runner.py").write_text("lines\nLINES = 'e'\n", encoding="utf-8")
    moved = batch.digest()
    (repository / "workloads/batch/lines.py").write_text("import lines\n", encoding="utf-8")
    (repository / "workloads/batch/runner.py").write_text("LINES = 'e'\n", encoding="utf-8")
    assert moved != batch.digest()
