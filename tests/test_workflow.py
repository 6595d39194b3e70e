"""A linter for the publishing workflow (.github/workflows/book.yml), which cannot run here.

No actionlint is installable offline (its PyPI wrapper downloads the binary at build time), so this checks
what actionlint would for this workflow: a JSON schema of the keys GitHub Actions accepts (jsonschema and
PyYAML are pinned), every action pinned to a major version and given only inputs it declares, every
`${{ }}` expression naming a known context and an existing step id, `needs` naming jobs that exist; then
what this project needs: it runs .ci/run in Debian with Python 3.11, and publishes to GitHub Pages the
folder .ci/run builds, with the permissions Pages asks for. Mutated workflows show each rule can fail.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}")
FUNCTIONS = {"contains", "startsWith", "endsWith", "format", "join", "toJSON", "fromJSON", "hashFiles", "success",
             "always", "cancelled", "failure"}
CONTEXTS = {"github", "env", "vars", "job", "jobs", "steps", "runner", "secrets", "strategy", "matrix", "needs",
            "inputs"}
# Inputs each action used here declares in its action.yml (at the pinned major version).
ACTIONS = {
    "actions/checkout@v4": {"repository", "ref", "token", "ssh-key", "ssh-known-hosts", "ssh-strict", "ssh-user",
                            "persist-credentials", "path", "clean", "filter", "sparse-checkout",
                            "sparse-checkout-cone-mode", "fetch-depth", "fetch-tags", "show-progress", "lfs",
                            "submodules", "set-safe-directory", "github-server-url"},
    "actions/configure-pages@v5": {"static_site_generator", "generator_config_file", "token", "enablement"},
    "actions/upload-pages-artifact@v3": {"name", "path", "retention-days"},
    "actions/deploy-pages@v4": {"token", "timeout", "error_count", "reporting_interval", "artifact_name",
                                "preview"},
}
STEP = {"type": "object", "additionalProperties": False,
        "properties": {k: {} for k in ("id", "name", "if", "uses", "run", "with", "env", "shell",
                                       "working-directory", "continue-on-error", "timeout-minutes")},
        "oneOf": [{"required": ["uses"], "not": {"required": ["run"]}},
                  {"required": ["run"], "not": {"required": ["uses"]}}]}
JOB = {"type": "object", "additionalProperties": False, "required": ["runs-on", "steps"],
       "properties": {"name": {"type": "string"}, "runs-on": {"type": "string"}, "needs": {},
                      "if": {"type": "string"}, "permissions": {"type": "object"}, "environment": {},
                      "container": {}, "timeout-minutes": {"type": "integer", "minimum": 1},
                      "concurrency": {}, "env": {"type": "object"}, "defaults": {}, "outputs": {},
                      "strategy": {}, "services": {}, "continue-on-error": {},
                      "steps": {"type": "array", "minItems": 1, "items": STEP}}}
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["on", "jobs"],
          "properties": {"name": {"type": "string"}, "run-name": {"type": "string"}, "on": {},
                         "permissions": {"type": "object"}, "concurrency": {}, "env": {"type": "object"},
                         "defaults": {}, "jobs": {"type": "object", "minProperties": 1,
                                                  "additionalProperties": JOB}}}
PERMISSION_SCOPES = {"actions", "attestations", "checks", "contents", "deployments", "discussions", "id-token",
                     "issues", "packages", "pages", "pull-requests", "repository-projects", "security-events",
                     "statuses"}


def load(text: str | None = None) -> dict:
    """The workflow as data; YAML 1.1 reads the key `on` as True, so it is put back."""
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8") if text is None else text)
    if True in data:
        data["on"] = data.pop(True)
    return data


def _expressions(node, path: str = ""):
    """(where, expression) for every ${{ }} in the workflow's strings, and every `if:` (an implicit one)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "if" and isinstance(value, str) and "${{" not in value:
                yield f"{path}.if", value
            yield from _expressions(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _expressions(value, f"{path}[{i}]")
    elif isinstance(node, str):
        yield from ((path, m.group(1)) for m in EXPRESSION.finditer(node))


def _expression_problems(where: str, expression: str, ids: set[str]) -> list[str]:
    """Unknown contexts, functions and step ids in one expression."""
    code = re.sub(r"'(?:[^']|'')*'", "''", expression)  # string literals are not contexts
    found = [f"{where}: unknown function {f!r}" for f in re.findall(r"([A-Za-z]\w*)\s*\(", code)
             if f not in FUNCTIONS]
    for context, rest in re.findall(r"(?<![\w.-])([a-z][\w-]*)((?:\.[\w-]+)*)(?![\w.-]|\s*\()", code):
        step = rest.split(".")[1:2]
        if context in {"true", "false", "null"}:
            continue
        if context not in CONTEXTS:
            found.append(f"{where}: unknown context {context!r} in ${{{{{expression}}}}}")
        elif context == "steps" and step and step[0] not in ids:
            found.append(f"{where}: no step with id {step[0]!r}")
    return found


def _job_problems(name: str, job: dict, data: dict) -> list[str]:
    needs = job.get("needs", [])
    found = [f"{name}: needs unknown job {n!r}" for n in ([needs] if isinstance(needs, str) else needs)
             if n not in data["jobs"]]
    for scopes in (job.get("permissions", {}), data.get("permissions", {})):
        found += [f"{name}: unknown permission {s!r}" for s in scopes if s not in PERMISSION_SCOPES]
    for i, step in enumerate(job["steps"]):
        uses = step.get("uses")
        if uses is not None and uses not in ACTIONS:
            found.append(f"{name}, step {i}: {uses!r} is not an action pinned to a known major version")
        elif uses is not None:
            found += [f"{name}, step {i}: {uses} has no input {k!r}" for k in step.get("with", {})
                      if k not in ACTIONS[uses]]
    ids = {s["id"] for s in job["steps"] if "id" in s}
    for where, expression in _expressions(job, name):
        found += _expression_problems(where, expression, ids)
    return found


def problems(data: dict) -> list[str]:
    """Everything wrong with the workflow `data`, as sentences (none: it passes)."""
    found = [f"schema: {e.message} at {'/'.join(map(str, e.absolute_path))}"
             for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(data)]
    if found:
        return found
    for where, expression in _expressions({k: v for k, v in data.items() if k != "jobs"}, "workflow"):
        found += _expression_problems(where, expression, set())
    for name, job in data["jobs"].items():
        found += _job_problems(name, job, data)
    return found


def test_the_workflow_passes_the_linter():
    assert problems(load()) == []


def test_it_runs_the_ci_script_in_debian_with_python_311():
    data = load()
    on = data["on"]
    assert on["push"]["branches"] == ["main"] and "workflow_dispatch" in on and "pull_request" in on
    build = data["jobs"]["build"]
    assert build["container"].startswith("python:3.11-") and build["container"].endswith(("bookworm", "trixie"))
    assert [s["run"] for s in build["steps"] if "run" in s] == [".ci/run"]
    assert (ROOT / ".ci" / "run").stat().st_mode & 0o111, ".ci/run is not executable"
    assert build["timeout-minutes"] >= 50, "the CI budget is 50 minutes: the job must be allowed that long"


def test_it_publishes_the_folder_ci_builds_to_github_pages():
    data = load()
    build, deploy = data["jobs"]["build"], data["jobs"]["deploy"]
    upload = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert upload["with"]["path"] == "book/_build/html"
    assert "test -f book/_build/html/index.html" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert deploy["needs"] == "build" and deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    assert [s["uses"] for s in deploy["steps"]] == ["actions/deploy-pages@v4"]
    assert data["permissions"] == {"contents": "read"}, "the build job needs no more than to read the code"


def _mutated(change) -> dict:
    data = copy.deepcopy(load())
    change(data)
    return data


@pytest.mark.parametrize(("change", "expected"), [
    (lambda d: d["jobs"]["build"]["steps"][1].update(uses="actions/checkout@v4"), "schema"),
    (lambda d: d["jobs"]["build"].pop("runs-on"), "schema"),
    (lambda d: d["jobs"]["build"].update(timeout=5), "schema"),
    (lambda d: d["jobs"]["build"]["steps"][3]["with"].update(paht="x"), "has no input 'paht'"),
    (lambda d: d["jobs"]["build"]["steps"][0].update(uses="actions/checkout@main"), "not an action pinned"),
    (lambda d: d["jobs"]["deploy"].update(needs="bulid"), "needs unknown job 'bulid'"),
    (lambda d: d["jobs"]["deploy"]["permissions"].update(page="write"), "unknown permission 'page'"),
    (lambda d: d["jobs"]["deploy"]["environment"].update(url="${{ steps.deploy.outputs.page_url }}"),
     "no step with id 'deploy'"),
    (lambda d: d["jobs"]["deploy"].update({"if": "gihub.ref == 'refs/heads/main'"}), "unknown context 'gihub'"),
    (lambda d: d["jobs"]["deploy"].update({"if": "contains(github.ref, 'main') && sucess()"}),
     "unknown function 'sucess'"),
])
def test_the_linter_catches_a_broken_workflow(change, expected):
    found = problems(_mutated(change))
    assert any(expected in p for p in found), found
