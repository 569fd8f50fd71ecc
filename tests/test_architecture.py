"""Rules about where code may live, checked by reading the source (Zulip-style lint rules with examples).

Each rule is a small checker over (path, text) pairs; the tests run it over the project and over a good and a bad
example, so a checker that stops catching anything fails too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SKIPPED_DIRS = {"tests", ".venv", "var", ".git", "node_modules", "build", "dist", "__pycache__"}

Source = tuple[str, str]  # (path relative to the repository, text)

OPENAI_IMPORT = re.compile(r"^\s*(?:import\s+openai\b|from\s+openai\b)", re.MULTILINE)
OPENAI_SEAM = "memory/llm.py"

VECTOR_SQL = re.compile(r"CosineDistance|L2Distance|MaxInnerProduct|<=>|<->|hnsw", re.IGNORECASE)
RETRIEVAL = "memory/retrieval/"  # the package: every module of it

UI_APPS = ("dashboard/", "chat/", "integrations/")  # interfaces: they call memory services, never write rows
MODEL_WRITE = re.compile(r"\.objects\.create\(|\.save\(|\.delete\(|\.update\(|bulk_create|bulk_update")


def project_sources() -> list[Source]:
    sources = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if SKIPPED_DIRS.intersection(relative.parts[:-1]):
            continue
        sources.append((relative.as_posix(), path.read_text()))
    return sources


def _code(text: str) -> str:
    """The text without comments, so prose about a rule does not break it."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        lines.append(line.split("  #", 1)[0])
    return "\n".join(lines)


def openai_outside_its_seam(sources: Iterable[Source]) -> list[str]:
    """Modules other than memory/llm.py that import the OpenAI client."""
    return [path for path, text in sources if path != OPENAI_SEAM and OPENAI_IMPORT.search(_code(text))]


def vector_sql_outside_retrieval(sources: Iterable[Source]) -> list[str]:
    """Modules outside the memory/retrieval/ package (and migrations) that use vector distances or HNSW settings."""
    return [
        path
        for path, text in sources
        if not path.startswith(RETRIEVAL) and "/migrations/" not in path and VECTOR_SQL.search(_code(text))
    ]


def ui_writes_models(sources: Iterable[Source]) -> list[str]:
    """Lines in dashboard/, chat/ and integrations/ that write models directly instead of calling a service."""
    found = []
    for path, text in sources:
        if not path.startswith(UI_APPS) or "/migrations/" in path:
            continue
        for number, line in enumerate(_code(text).splitlines(), start=1):
            if MODEL_WRITE.search(line):
                found.append(f"{path}:{number}: {line.strip()}")
    return found


def ui_defines_models(sources: Iterable[Source]) -> list[str]:
    """dashboard/, chat/ and integrations/ have no models: every domain model lives in memory/."""
    model_class = re.compile(r"^class\s+\w+\((?:models\.)?Model\)", re.MULTILINE)
    return [path for path, text in sources if path.startswith(UI_APPS) and model_class.search(_code(text))]


RULES = [openai_outside_its_seam, vector_sql_outside_retrieval, ui_writes_models, ui_defines_models]


@pytest.mark.parametrize("rule", RULES, ids=[rule.__name__ for rule in RULES])
def test_the_project_follows_the_rule(rule):
    assert rule(project_sources()) == []


def test_the_scan_covers_the_apps_and_skips_tests_and_the_venv():
    paths = [path for path, _ in project_sources()]

    assert "memory/roles.py" in paths and "manage.py" in paths
    assert any(path.startswith("dashboard/") for path in paths)
    assert not any(path.startswith(("tests/", ".venv/", "var/")) for path in paths)


def test_openai_may_be_imported_only_by_the_llm_seam():
    assert openai_outside_its_seam([(OPENAI_SEAM, "from openai import OpenAI\n")]) == []
    assert openai_outside_its_seam([("chat/views.py", "from memory.llm import build_client\n")]) == []
    assert openai_outside_its_seam([("chat/views.py", "# we never import openai here\n")]) == []

    assert openai_outside_its_seam([("chat/views.py", "import openai\n")]) == ["chat/views.py"]
    assert openai_outside_its_seam([("memory/x.py", "    from openai import OpenAI\n")]) == ["memory/x.py"]


def test_vector_sql_may_appear_only_in_retrieval():
    good = "qs.annotate(distance=CosineDistance('embedding', v))\nSET LOCAL hnsw.ef_search = 100\n"
    assert vector_sql_outside_retrieval([(RETRIEVAL, good)]) == []
    assert vector_sql_outside_retrieval([("memory/migrations/0002_hnsw.py", "HnswIndex(...)")]) == []
    assert vector_sql_outside_retrieval([("memory/services/x.py", "from memory.retrieval import pages_near\n")]) == []

    for bad in ("CosineDistance('embedding', v)", "ORDER BY embedding <=> %s", "SET hnsw.ef_search = 40"):
        assert vector_sql_outside_retrieval([("dashboard/views.py", bad)]) == ["dashboard/views.py"]


def test_dashboard_and_chat_write_memory_only_through_services():
    good = "from memory.services.knowledge import knowledge_pin\nknowledge_pin(entry_id=entry.id)\n"
    assert ui_writes_models([("dashboard/views.py", good)]) == []
    assert ui_writes_models([("memory/services/x.py", "Page.objects.create(space=space)\n")]) == []

    for bad in (
        "Page.objects.create(space=space)",
        "segment.save()",
        "entry.delete()",
        "Segment.objects.filter(pk=1).update(pinned=True)",
        "KnowledgeEntry.objects.bulk_create(entries)",
    ):
        assert ui_writes_models([("chat/services.py", bad)]) == [f"chat/services.py:1: {bad}"]


def test_dashboard_and_chat_define_no_models():
    assert ui_defines_models([("dashboard/models.py", "from django.db import models\n")]) == []
    assert ui_defines_models([("memory/models/x.py", "class Page(models.Model):\n")]) == []

    assert ui_defines_models([("chat/models.py", "class Draft(models.Model):\n")]) == ["chat/models.py"]


SETTING_FROM_ENV = re.compile(r"""env_(?:str|bool|int|float|list)\(\s*["']([A-Z][A-Z0-9_]*)["']""")


CONFIGURATION_PAGE = ROOT / "docs" / "configuration.md"


def settings_missing_from_docs(settings_text: str, page_text: str) -> list[str]:
    """Environment variables read by settings.py that the configuration page's tables do not list."""
    return sorted({name for name in SETTING_FROM_ENV.findall(settings_text) if f"`{name}`" not in page_text})


def test_every_environment_variable_is_documented_on_the_configuration_page():
    settings_text = (ROOT / "memoryos_site" / "settings.py").read_text()

    assert settings_missing_from_docs(settings_text, CONFIGURATION_PAGE.read_text()) == []


def test_the_configuration_check_catches_an_undocumented_variable():
    settings_text = 'DEBUG = env_bool("DEBUG", False)\nNEW = env_int("BRAND_NEW", 3)\n'

    assert settings_missing_from_docs(settings_text, "| `DEBUG` | `false` |") == ["BRAND_NEW"]
    assert settings_missing_from_docs(settings_text, "| `DEBUG` | | `BRAND_NEW` |") == []


# --- imports: the product never imports the evaluation app, and no module imports itself back -------------------

PRODUCT_APPS = ("memory/", "chat/", "dashboard/", "api/", "integrations/", "memoryos_site/")
PROJECT_PACKAGES = (*PRODUCT_APPS, "evaluation/")
EVALUATION = "evaluation"


def _absolute_imports(node: ast.AST) -> list[str]:
    """Absolute module names one node imports: import statements and importlib.import_module("...") calls."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
        return [arg.value for arg in node.args[:1] if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
    return []


def product_imports_evaluation(sources: Iterable[Source]) -> list[str]:
    """Lines of the product apps that import the evaluation app, at module level or inside a function."""
    found = []
    for path, text in sources:
        if not path.startswith(PRODUCT_APPS):
            continue
        for node in ast.walk(ast.parse(text)):
            for name in _absolute_imports(node):
                if name == EVALUATION or name.startswith(f"{EVALUATION}."):
                    found.append(f"{path}:{node.lineno}: imports {name}; the product never imports {EVALUATION}/")
    return found


def test_the_product_never_imports_the_evaluation_app():
    assert product_imports_evaluation(project_sources()) == []


def test_the_evaluation_rule_catches_every_way_of_importing_it():
    assert product_imports_evaluation([("evaluation/bench/run.py", "from memory.retrieval import retrieve\n")]) == []
    assert product_imports_evaluation([("evaluation/bench/run.py", "from evaluation import scoring\n")]) == []
    assert product_imports_evaluation([("memory/x.py", "import evaluations_helper\n# evaluation.bench.run\n")]) == []

    for bad in (
        "import evaluation",
        "from evaluation.bench.run import memory_bench",
        "def f():\n    from evaluation import scoring",
        "importlib.import_module('evaluation.locomo')",
    ):
        found = product_imports_evaluation([("dashboard/views/x.py", bad)])
        line = bad.count("\n") + 1
        assert len(found) == 1 and found[0].startswith(f"dashboard/views/x.py:{line}: imports evaluation")


INTEGRATIONS = "integrations"
BELOW_INTEGRATIONS = ("memory/", "chat/", "dashboard/", "api/")


def imports_integrations(sources: Iterable[Source]) -> list[str]:
    """Lines of memory/, chat/, dashboard/ and api/ that import integrations/, which sits on top of them:
    `integrations -> api -> chat -> memory`, never back (the site's urls.py mounts it, like every app)."""
    found = []
    for path, text in sources:
        if not path.startswith(BELOW_INTEGRATIONS):
            continue
        for node in ast.walk(ast.parse(text)):
            for name in _absolute_imports(node):
                if name == INTEGRATIONS or name.startswith(f"{INTEGRATIONS}."):
                    found.append(f"{path}:{node.lineno}: imports {name}")
    return found


def test_no_lower_app_imports_the_integrations():
    assert imports_integrations(project_sources()) == []


def test_the_integrations_rule_catches_an_import_from_below():
    assert imports_integrations([("integrations/proxy.py", "from chat.services import reply_draft\n")]) == []
    assert imports_integrations([("memoryos_site/urls.py", "import integrations.urls\n")]) == []

    assert imports_integrations([("api/views/x.py", "from integrations.tools import x\n")]) == [
        "api/views/x.py:1: imports integrations.tools"
    ]


def module_name(path: str) -> str:
    """`memory/services/turns.py` -> `memory.services.turns`; a package's `__init__.py` is the package."""
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return getattr(test, "id", getattr(test, "attr", None)) == "TYPE_CHECKING"


def _import_statements(node: ast.AST, *, lazy: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """Import statements run when the module is imported (with `lazy`, also those inside functions).

    Imports under `if TYPE_CHECKING:` never run, so they are left out either way (their `else:` is not).
    """
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and not lazy:
            continue
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            yield from _import_statements(ast.Module(body=child.orelse, type_ignores=[]), lazy=lazy)
        else:
            yield from _import_statements(child, lazy=lazy)


def _nearest_module(name: str, modules: set[str]) -> str | None:
    """The longest prefix of a dotted name that is a project module; None outside the project."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if (candidate := ".".join(parts[:end])) in modules:
            return candidate
    return None


def _from_module(statement: ast.ImportFrom, path: str) -> str:
    """The module a `from ... import` names, relative imports resolved against `path`."""
    base = statement.module or ""
    if statement.level:
        package = module_name(path).split(".")
        if not path.endswith("__init__.py"):
            package = package[:-1]
        package = package[: len(package) - statement.level + 1]
        base = ".".join([*package, base] if base else package)
    return base


def _imported_modules(statement: ast.Import | ast.ImportFrom, path: str, modules: set[str]) -> Iterator[str | None]:
    """Project modules a statement names: `from pkg import name` is `pkg.name` if that is a module, else `pkg`.

    Only the module named counts, not the packages above it, so a package's re-exports make no false cycles.
    """
    if isinstance(statement, ast.Import):
        for alias in statement.names:
            yield _nearest_module(alias.name, modules)
        return
    base = _from_module(statement, path)
    for alias in statement.names:
        candidate = f"{base}.{alias.name}"
        yield candidate if candidate in modules else _nearest_module(base, modules)


def import_graph(sources: Iterable[Source], *, lazy: bool = False) -> dict[str, set[str]]:
    """Module -> project modules it imports, for the modules under PROJECT_PACKAGES."""
    texts = {path: text for path, text in sources if path.startswith(PROJECT_PACKAGES)}
    modules = {module_name(path) for path in texts}
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for path, text in texts.items():
        source = module_name(path)
        for statement in _import_statements(ast.parse(text), lazy=lazy):
            graph[source].update(m for m in _imported_modules(statement, path, modules) if m and m != source)
    return graph


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components with more than one module, each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while (member := stack.pop()) != node:
                component.append(member)
            component.append(node)
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)


def _shortest_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """The shortest cycle through the component's first module, by breadth-first search inside the component."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    queue = [start]
    for node in queue:
        for target in sorted(graph[node] & members):
            if target == start:
                return [*paths[node], start]
            if target not in paths:
                paths[target] = [*paths[node], target]
                queue.append(target)
    raise AssertionError(f"{component} is not strongly connected")


def import_cycles(sources: Iterable[Source], *, lazy: bool = False) -> list[str]:
    """One cycle per group of mutually importing modules, written `a -> b -> a`."""
    graph = import_graph(sources, lazy=lazy)
    return [" -> ".join(_shortest_cycle(graph, component)) for component in _strongly_connected(graph)]


def test_the_project_has_no_import_cycles():
    assert import_cycles(project_sources()) == []


def test_imports_inside_functions_close_no_cycle_except_services_queueing_their_tasks():
    """Tasks import the services they run at the top; a service names the task it queues inside the function that
    queues it. Those edges into memory.tasks are the only ones allowed to close a cycle."""
    graph = import_graph(project_sources(), lazy=True)
    queueing = {module for module, targets in graph.items() if "memory.tasks" in targets}
    assert queueing <= {m for m in graph if m.startswith("memory.services.")}, queueing
    for module in queueing:
        graph[module] = graph[module] - {"memory.tasks"}
    assert [" -> ".join(_shortest_cycle(graph, c)) for c in _strongly_connected(graph)] == []


def test_the_import_graph_covers_every_app_and_reads_real_imports():
    graph = import_graph(project_sources())

    assert {module.split(".")[0] for module in graph} == {path.rstrip("/") for path in PROJECT_PACKAGES}
    assert {"memory.services.promotion", "memory.services.updating"} <= graph["memory.tasks"]
    assert (
        "evaluation.scope" in graph["evaluation.bench.run"]
        and "memory.retrieval.search" in graph["evaluation.bench.run"]
    )
    assert "memory.tasks" not in graph["memory.services.updating"]  # imported inside a function
    assert "memory.tasks" in import_graph(project_sources(), lazy=True)["memory.services.updating"]


def test_the_cycle_check_resolves_imports_as_python_does():
    views = ("chat/views.py", "from chat import services\nfrom memory.retrieval import retrieve\n")
    services = ("chat/services.py", "from chat.views import helper\n")
    assert import_cycles([views, services, ("chat/__init__.py", ""), ("memory/retrieval.py", "")]) == [
        "chat.services -> chat.views -> chat.services"
    ]
    relative = ("chat/services.py", "from .views import helper\n")
    assert import_cycles([views, relative, ("chat/__init__.py", "")]) == [
        "chat.services -> chat.views -> chat.services"
    ]

    lazy = ("chat/services.py", "def f():\n    from chat.views import helper\n")
    typing = ("chat/services.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from chat.views import x\n")
    for source in (lazy, typing):
        assert import_cycles([views, source, ("chat/__init__.py", "")]) == []
    assert import_cycles([views, lazy, ("chat/__init__.py", "")], lazy=True) == [
        "chat.services -> chat.views -> chat.services"
    ]

    # a package re-exporting its modules is no cycle: importing chat.views does not count as importing chat
    package = ("chat/__init__.py", "from chat.views import helper\n")
    assert import_cycles([package, ("chat/views.py", "from chat import services\n"), ("chat/services.py", "")]) == []
    # but `from chat import name` that is not a module does import chat/__init__
    reexport = ("chat/views.py", "from chat import helper\n")
    assert import_cycles([package, reexport]) == ["chat -> chat.views -> chat"]


# --- names: two modules never share a name for different things (house style 20) ------------------------------

# Names every app may have, each for the same role (Django's conventions, and each interface's `access` and `schema`).
PER_APP_NAMES = {
    "__init__", "admin", "apps", "urls", "views", "models", "forms", "tasks", "services", "selectors",
    "serializers", "access", "schema", "management", "commands", "migrations", "templatetags",
}  # fmt: skip
# A module inside a layer package is named for the sub-domain it serves, and each layer has one of that name
# (models/webhooks.py, services/..., selectors/..., views/webhooks.py); a command or a template-tag library is named
# for what it is called by (`manage.py currency_eval`, `{% load console %}`). None of them is compared.
LAYER_PACKAGES = {"models", "services", "selectors", "views", "commands", "migrations", "templatetags"}


def modules_sharing_a_name(sources: Iterable[Source]) -> list[str]:
    """Names that two modules outside the layer packages hold (a package is named by its folder)."""
    paths_by_name: dict[str, list[str]] = {}
    for path, _ in sources:
        parts = module_name(path).split(".")
        if parts[-1] in PER_APP_NAMES or LAYER_PACKAGES.intersection(parts[:-1]):
            continue
        paths_by_name.setdefault(parts[-1], []).append(path)
    return [f"{name}: {', '.join(paths)}" for name, paths in sorted(paths_by_name.items()) if len(paths) > 1]


def test_no_two_modules_share_a_name():
    assert modules_sharing_a_name(project_sources()) == []


def test_the_name_rule_catches_two_modules_of_one_name():
    good = [
        ("memory/webhooks.py", ""),
        ("memory/models/webhooks.py", ""),
        ("api/views/webhooks.py", ""),
        ("api/urls.py", ""),
        ("chat/urls.py", ""),
        ("evaluation/currency_eval.py", ""),
        ("evaluation/management/commands/currency_eval.py", ""),
    ]
    assert modules_sharing_a_name(good) == []

    assert modules_sharing_a_name([("chat/offline.py", ""), ("memory/offline.py", "")]) == [
        "offline: chat/offline.py, memory/offline.py"
    ]
    assert modules_sharing_a_name([("memory/steps/__init__.py", ""), ("evaluation/steps.py", "")]) == [
        "steps: memory/steps/__init__.py, evaluation/steps.py"
    ]


# --- selectors only read: no ORM write, no SQL that writes, no import of what writes ---------------------------------

SELECTORS = "memory/selectors/"
# Any call of these names counts, a dict's or a set's `.update()` too: selectors merge with `|=` instead, so the rule
# needs no type inference. (A many-to-many manager's add/set/remove/clear share their names with set and list
# methods, so they are left to review.)
ORM_WRITES = frozenset(
    {"save", "create", "get_or_create", "update_or_create", "update", "delete", "bulk_create", "bulk_update"}
)
SQL_WRITE = re.compile(r"\b(?:INSERT\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM)\b", re.IGNORECASE)
WRITERS = ("memory.services", "memory.tasks")


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the module's, classes' and functions' docstring nodes: prose, not SQL."""
    owners = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, owners) and node.body and isinstance(node.body[0], ast.Expr)
    }


def _string_text(node: ast.AST) -> str | None:
    """A string literal's text; an f-string's with `{}` for each value."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else "{}" for part in node.values)
    return None


def _write_in(node: ast.AST, path: str, skipped: set[int]) -> str | None:
    """What makes one node a write, or None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ORM_WRITES:
        return f"calls .{node.func.attr}()"
    text = None if id(node) in skipped else _string_text(node)
    if text is not None and (match := SQL_WRITE.search(text)):
        return f"SQL that writes ({match.group(0)})"
    names = _absolute_imports(node)
    if isinstance(node, ast.ImportFrom):
        base = _from_module(node, path)
        names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
    for name in names:
        if any(name == writer or name.startswith(f"{writer}.") for writer in WRITERS):
            return f"imports {name}"
    return None


def selectors_write(sources: Iterable[Source]) -> list[str]:
    """Lines of memory/selectors/ that write: an ORM write, SQL that inserts, updates or deletes, or an import of
    memory.services or memory.tasks (a read that needs one of them is a service's, or the caller's, job)."""
    found = []
    for path, text in sources:
        if not path.startswith(SELECTORS):
            continue
        tree = ast.parse(text)
        skipped = _docstrings(tree) | {
            id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values
        }
        for node in ast.walk(tree):
            if problem := _write_in(node, path, skipped):
                found.append((node.lineno, f"{path}:{node.lineno}: {problem}"))
    return [line for _, line in sorted(found)]


def test_selectors_never_write():
    sources = project_sources()

    assert any(path.startswith(SELECTORS) for path, _ in sources)
    assert selectors_write(sources) == []


def test_the_selector_rule_catches_every_way_of_writing():
    good = (
        '"""Reads: nothing here may update a row or delete from a table."""\n'
        "from memory.models import Page\n"
        "from memory.selectors.items import page_get\n"
        "from . import items\n"
        "def page_list(*, tenant):\n"
        '    """Pages, newest first (INSERT INTO nothing)."""\n'
        "    wanted = set()\n"
        "    wanted |= {1, 2}\n"
        "    cursor.execute(f'SELECT id FROM {table} WHERE updated_at > %s')\n"
        "    return Page.objects.filter(tenant=tenant).select_related('space')\n"
    )
    assert selectors_write([("memory/selectors/x.py", good)]) == []
    assert selectors_write([("memory/services/x.py", "page.save()\nfrom memory.tasks import x_task\n")]) == []

    for bad, expected in (
        ("page.save()", "1: calls .save()"),
        ("Page.objects.create(space=space)", "1: calls .create()"),
        ("Segment.objects.get_or_create(pk=1)", "1: calls .get_or_create()"),
        ("Segment.objects.update_or_create(pk=1, defaults={})", "1: calls .update_or_create()"),
        ("Segment.objects.filter(pk=1).update(pinned=True)", "1: calls .update()"),
        ("seen.update(ids)", "1: calls .update()"),
        ("entry.delete()", "1: calls .delete()"),
        ("KnowledgeEntry.objects.bulk_create(entries)", "1: calls .bulk_create()"),
        ("Page.objects.bulk_update(pages, ['pinned'])", "1: calls .bulk_update()"),
        ("cursor.execute('INSERT INTO memory_page (id) VALUES (1)')", "1: SQL that writes (INSERT INTO)"),
        ("cursor.execute(f'update {table} set pinned = true')", "1: SQL that writes (update {} set)"),
        ('SQL = """\n    DELETE FROM memory_page WHERE id = %s\n"""', "1: SQL that writes (DELETE FROM)"),
        ("from memory.services.audit import audit_record", "1: imports memory.services.audit"),
        ("from memory import services", "1: imports memory.services"),
        ("from ..services import gdpr", "1: imports memory.services"),
        ("import memory.tasks", "1: imports memory.tasks"),
        ("def f():\n    from memory.tasks import page_task", "2: imports memory.tasks"),
        ("importlib.import_module('memory.services.gdpr')", "1: imports memory.services.gdpr"),
    ):
        assert selectors_write([("memory/selectors/x.py", bad)]) == [f"memory/selectors/x.py:{expected}"]
