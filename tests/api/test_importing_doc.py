"""docs/importing.md's "Move memory between installations" examples, run as written: the import command (dry run, then
for real) on an export's zip, then the API call on the same file against the live server."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command

from memory.models import EndUser, ExportJob, Page
from memory.services.audit import Actor
from memory.services.gdpr_export import export_build, export_request
from memory.services.tenancy import tenant_create
from tests.api.conftest import make_token
from tests.bundles import governed_memory

PAGE = Path(__file__).resolve().parents[2] / "docs" / "importing.md"


def section_commands() -> list[str]:
    """The section's shell commands; a command continued over lines is one, comments are dropped."""
    section = PAGE.read_text().split("\n## Move memory between installations\n", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL):
        joined = block.replace("\\\n", " ")
        commands += [line.strip() for line in joined.splitlines() if line.strip() and not line.startswith("#")]
    return commands


@pytest.fixture
def export_zip(alice, assistant, django_capture_on_commit_callbacks, settings, tmp_path, monkeypatch) -> Path:
    """Alice's export of Acme, saved as export.zip in the working directory the commands run in."""
    settings.EXPORT_DIR = tmp_path / "exports"
    governed_memory(alice, assistant, django_capture_on_commit_callbacks)
    job = export_request(end_user=alice, actor=Actor.system("test"))
    export_build(job_id=job.pk)
    target = tmp_path / "work" / "export.zip"
    target.parent.mkdir()
    shutil.copy(ExportJob.objects.get(pk=job.pk).file_path, target)
    monkeypatch.chdir(target.parent)
    return target


@pytest.mark.skipif(
    not all(shutil.which(tool) for tool in ("curl", "unzip", "python3")), reason="the examples need curl and unzip"
)
def test_the_import_examples_work(export_zip, live_server):
    demo = tenant_create(slug="demo", name="Demo")
    env = {"PATH": "/usr/bin:/bin", "MEMORYOS_URL": live_server.url, "TOKEN": make_token(demo, "govern")}
    commands = section_commands()
    assert [c.split(" ", 1)[0] for c in commands] == [".venv/bin/python", ".venv/bin/python", "unzip", "python3"]

    for command in commands[:2]:
        call_command(*shlex.split(command.split("manage.py ", 1)[1]))
    result = subprocess.run(
        ["bash", "-c", " && ".join(commands[2:])], env=env, capture_output=True, text=True, timeout=60, check=True
    )

    imported = EndUser.objects.get(tenant=demo, external_id="alice")
    assert Page.objects.filter(space__end_user=imported).count() == 12
    body = json.loads(result.stdout)
    assert body["dry_run"] and body["already_imported"] and body["counts"]["pages"] == 12
