"""The CI recipes of docs/ci/ run: every shell command in them, here, against a throwaway repository.

Each recipe is parsed (PyYAML) and played as its CI system would play it, as far as that
matters to the commands: the GitHub Actions workflow step by step (``if:`` conditions, ``env``,
``${{ }}`` expressions, and the ``uses:`` steps it relies on: checkout, cache restore and save,
artifact upload), the GitLab jobs by their ``rules``, ``extends``, ``variables``, ``cache`` and
``artifacts``. Every ``run:`` / ``script:`` is run with bash as the CI system runs it (errexit,
pipefail), in a clone of a two-commit git repository with one tiny performance test, with the
CI variables it reads set to temporary paths. A command that fails fails the test, and so does
a ``uses:`` action or an expression this player does not know: the recipes cannot grow a step
that is not run here.

Three pipelines per recipe: a push to main (saves the baseline and keeps the store), a pull
request gated by the paired ``ab`` command against the merge base, and the same pull request
gated two-run against the cached baseline (``ROOFLINE_PAIRED=0``).

The throwaway project pins a config target (no host calibration), small budgets, three paired
rounds, and wide margins (at the max_margin cap): this test checks that the commands run and produce the report, not
what a noisy runner measures.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

RECIPES = Path(__file__).resolve().parents[1] / "docs" / "ci"
DOC = RECIPES.parent / "ci.md"
BASH = shutil.which("bash")
GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(BASH is None or GIT is None, reason="needs bash and git")

PROJECT = {
    "roofline.yaml": """\
# A config target: no host calibration in a test.
target: ci-box
targets:
  ci-box: {peak_flops_per_s: {fp64: 4.0e10}, peak_bytes_per_s: {dram: 2.0e10}, description: "test runner, 2 vCPU"}
budget: 0.05s
# The test checks that the recipe's commands run, not detection: noise must not roll back.
gate: {min_effect: {p50: 100%, p95: 100%, p99: 100%}}
ab: {rounds: 3, budget: 0.15s}
""",
    "pytest.ini": "[pytest]\npythonpath = .\nroofline_min_samples = 5\nroofline_warmup = 1ms\n",
    ".gitignore": ".roofline/\n/roofline.html\n/roofline.md\n",
    "kernel.py": "def work(n):\n    return sum(range(n))\n",
    "tests/perf/test_kernel.py": (
        "from kernel import work\n\n\ndef test_work(roofline):\n    roofline(work, 2000)\n"
    ),
}
CHANGED_KERNEL = '''def work(n):
    """Sum the first n integers (the pull request's change: a docstring)."""
    return sum(range(n))
'''


# --------------------------------------------------------------------------- the repository
@dataclass
class Repo:
    """The throwaway origin: ``main`` (one commit) and ``feature`` (one more)."""

    path: Path
    env: dict[str, str]
    main: str
    feature: str

    def git(self, *args: str, cwd: Path | None = None) -> str:
        done = subprocess.run(
            [GIT or "git", *args],
            cwd=cwd or self.path,
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    def clone(self, where: Path, branch: str) -> Path:
        """A fresh checkout of ``branch``, with ``origin/*`` refs (as a full-history clone has)."""
        self.git("clone", "-q", str(self.path), str(where))
        self.git("checkout", "-q", branch, cwd=where)
        return where


def _environment(tmp: Path) -> dict[str, str]:
    """The commands' environment: this interpreter's scripts first, no registry, no outer pytest."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "GITHUB_", "CI_", "RUNNER_")) and k != "PYTHONPATH"
    }
    env.update(
        PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""),
        # The install step finds pytest-roofline already installed; it must never reach an index.
        PIP_NO_INDEX="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        GIT_AUTHOR_NAME="ci",
        GIT_AUTHOR_EMAIL="ci@example.invalid",
        GIT_COMMITTER_NAME="ci",
        GIT_COMMITTER_EMAIL="ci@example.invalid",
        GIT_CONFIG_GLOBAL=str(tmp / "gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
        CI="true",
    )
    (tmp / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n", encoding="utf-8")
    return env


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    tmp = tmp_path_factory.mktemp("origin")
    path = tmp / "project"
    path.mkdir()
    env = _environment(tmp)
    made = Repo(path, env, "", "")
    made.git("init", "-q", "-b", "main")
    for name, text in PROJECT.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text, encoding="utf-8")
    made.git("add", "-A")
    made.git("commit", "-q", "-m", "a tiny performance test")
    made.main = made.git("rev-parse", "HEAD")
    made.git("checkout", "-q", "-b", "feature")
    (path / "kernel.py").write_text(CHANGED_KERNEL, encoding="utf-8")
    made.git("commit", "-q", "-am", "the pull request")
    made.feature = made.git("rev-parse", "HEAD")
    made.git("checkout", "-q", "main")
    return made


def _bash(script: str, *, cwd: Path, env: Mapping[str, str], what: str) -> None:
    """Run ``script`` as a CI runner runs a step: bash, errexit, pipefail. Fails the test if it fails."""
    done = subprocess.run(
        [BASH or "bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        pytest.fail(
            f"{what} failed (exit {done.returncode}):\n{script}\n--- stdout\n{done.stdout[-4000:]}"
            f"\n--- stderr\n{done.stderr[-4000:]}"
        )


# --------------------------------------------------------------------------- GitHub Actions
_GH_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op>==|!=|&&|\|\||!|\(|\))"
    r"|(?P<fn>always|success|failure|cancelled)\(\)|(?P<name>[A-Za-z_][\w.-]*))"
)
_GH_EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")


def github_expression(text: str, context: Mapping[str, str], *, failed: bool = False) -> Any:
    """Evaluate a GitHub Actions expression of the small grammar the recipe uses."""
    code, position = [], 0
    while position < len(text.rstrip()):
        match = _GH_TOKEN.match(text, position)
        if match is None:
            pytest.fail(f"the recipe player cannot read the expression {text!r}")
        position = match.end()
        if match["str"] is not None:
            code.append(repr(match["str"][1:-1].replace("''", "'")))
        elif match["op"] is not None:
            code.append({"&&": " and ", "||": " or ", "!": " not "}.get(match["op"], match["op"]))
        elif match["fn"] is not None:
            code.append(
                {"always": "True", "success": str(not failed), "failure": str(failed)}.get(
                    match["fn"], "False"
                )
            )
        else:
            if match["name"] not in context:
                pytest.fail(f"the recipe uses {match['name']!r}, which the player does not set")
            code.append(repr(context[match["name"]]))
    return eval("".join(code), {"__builtins__": {}}, {})  # only tokens this player wrote


def _expand(value: str, context: Mapping[str, str]) -> str:
    return _GH_EXPRESSION.sub(lambda m: str(github_expression(m[1], context)), value)


@dataclass
class Played:
    """What a pipeline did: the steps or jobs that ran, and the files it kept."""

    ran: list[str] = field(default_factory=list)
    artifacts: dict[str, Path] = field(default_factory=dict)


def play_github(
    workflow: Mapping[Any, Any],
    *,
    workspace: Path,
    context: Mapping[str, str],
    env: Mapping[str, str],
    cache: dict[str, Path],
    cache_root: Path,
) -> Played:
    """Play the workflow's single job in ``workspace`` (already checked out)."""
    (job,) = workflow["jobs"].values()
    played, failed = Played(), False
    base_env = {**env, **{k: str(v) for k, v in (workflow.get("env") or {}).items()}}
    base_env.update({k: str(v) for k, v in (job.get("env") or {}).items()})
    for step in job["steps"]:
        name = step.get("name") or step.get("uses") or step["run"].splitlines()[0]
        condition = str(step.get("if", "success()"))
        if not re.search(r"\b(always|success|failure|cancelled)\(\)", condition):
            condition = f"success() && ({condition})"
        if not github_expression(condition, context, failed=failed):
            continue
        played.ran.append(name)
        inputs = {k: _expand(str(v), context) for k, v in (step.get("with") or {}).items()}
        if "run" in step:
            step_env = {
                **base_env,
                **{k: _expand(str(v), context) for k, v in (step.get("env") or {}).items()},
            }
            _bash(_expand(step["run"], context), cwd=workspace, env=step_env, what=f"step {name!r}")
            continue
        action = step["uses"].split("@")[0]
        if action == "actions/checkout":
            # The player checked out the commit; the recipe must fetch the whole history.
            assert str(inputs.get("fetch-depth")) == "0", "the merge base needs fetch-depth: 0"
        elif action == "actions/setup-python":
            assert inputs.get("python-version")
        elif action == "actions/cache/restore":
            keys = [inputs["key"], *inputs.get("restore-keys", "").split()]
            hit = next(
                (
                    cache[k]
                    for wanted in keys
                    for k in sorted(cache, reverse=True)
                    if k == wanted or k.startswith(wanted)
                ),
                None,
            )
            if hit is not None:
                shutil.copytree(hit, workspace / inputs["path"], dirs_exist_ok=True)
        elif action == "actions/cache/save":
            key = inputs["key"]
            assert key not in cache, f"cache key {key!r} saved twice (GitHub caches are immutable)"
            cache[key] = cache_root / f"{len(cache)}-{key}"
            shutil.copytree(workspace / inputs["path"], cache[key])
        elif action == "actions/upload-artifact":
            for line in inputs["path"].split():
                path = workspace / line
                assert path.is_file(), f"artifact {line} was not written"
                played.artifacts[line] = path
        else:
            pytest.fail(f"the recipe uses {action}, which this test does not play")
    return played


def _github_env(workspace: Path, summary: Path, event: str, run_id: int) -> dict[str, str]:
    return {
        "GITHUB_EVENT_NAME": event,
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_RUN_ID": str(run_id),
        "RUNNER_OS": "Linux",
        "RUNNER_TEMP": str(summary.parent),
    }


def _labels(workspace: Path, env: Mapping[str, str]) -> list[str]:
    done = subprocess.run(
        ["pytest-roofline", "runs", "--json"],
        cwd=workspace,
        env=dict(env),
        capture_output=True,
        text=True,
        check=True,
    )
    return [run["label"] for run in yaml.safe_load(done.stdout)]


def test_the_github_actions_workflow_runs_on_main_and_on_pull_requests(
    repo: Repo, tmp_path: Path
) -> None:
    workflow = yaml.safe_load((RECIPES / "github-actions.yml").read_text(encoding="utf-8"))
    cache: dict[str, Path] = {}
    (tmp_path / "cache").mkdir()

    # A push to main: the baseline is measured, saved and kept in the cache.
    main = repo.clone(tmp_path / "main", "main")
    summary = tmp_path / "summary-main.md"
    context = {
        "github.event_name": "push",
        "github.ref": "refs/heads/main",
        "github.run_id": "1",
        "runner.os": "Linux",
    }
    env = {
        **repo.env,
        **_github_env(main, summary, "push", 1),
        "GITHUB_REF": "refs/heads/main",
        "GITHUB_REF_NAME": "main",
    }
    played = play_github(
        workflow,
        workspace=main,
        context=context,
        env=env,
        cache=cache,
        cache_root=tmp_path / "cache",
    )
    assert "Save a baseline (main)" in played.ran
    assert "Gate the pull request" not in played.ran
    assert len(cache) == 1
    assert "main" in _labels(main, env)
    assert summary.read_text(encoding="utf-8").startswith("## pytest-roofline: **")
    assert set(played.artifacts) == {"roofline.html", "roofline.md"}

    # A pull request, paired (the recipe's default) and two-run.
    for paired in ("1", "0"):
        workspace = repo.clone(tmp_path / f"pr-{paired}", "feature")
        summary = tmp_path / f"summary-pr-{paired}.md"
        run_id = 2 + int(paired)
        context = {**context, "github.event_name": "pull_request", "github.run_id": str(run_id)}
        env = {
            **repo.env,
            **_github_env(workspace, summary, "pull_request", run_id),
            "GITHUB_REF": "refs/pull/1/merge",
            "GITHUB_BASE_REF": "main",
            "GITHUB_HEAD_REF": "feature",
        }
        chosen = {**workflow, "env": {**workflow["env"], "ROOFLINE_PAIRED": paired}}
        played = play_github(
            chosen,
            workspace=workspace,
            context=context,
            env=env,
            cache=cache,
            cache_root=tmp_path / "cache",
        )
        assert "Gate the pull request" in played.ran and "Summary" in played.ran
        assert "Save a baseline (main)" not in played.ran
        text = summary.read_text(encoding="utf-8")
        assert text.startswith("## pytest-roofline: ")
        # The paired run is saved as "ab"; the two-run gate compares with the cached "main".
        assert ("**ab** vs" in text) if paired == "1" else ("vs **main**" in text)
        assert "`roofline.html` (written beside this summary)" in text
        assert (
            (workspace / "roofline.html").read_text(encoding="utf-8").startswith("<!doctype html>")
        )
        assert set(played.artifacts) == {"roofline.html", "roofline.md"}
        assert len(cache) == 1  # pull requests read the store, they do not keep one


# --------------------------------------------------------------------------- GitLab CI
_GL_TOKEN = re.compile(
    r"\s*(?:(?P<str>\"[^\"]*\"|'[^']*')|(?P<var>\$\{?\w+\}?)|(?P<op>==|!=|&&|\|\||\(|\)))"
)
_GL_RESERVED = {
    "variables",
    "stages",
    "default",
    "include",
    "workflow",
    "image",
    "services",
    "cache",
}


def gitlab_rule(text: str, variables: Mapping[str, str]) -> bool:
    """Evaluate a ``rules: if:`` expression of the small grammar the recipe uses."""
    code, position = [], 0
    while position < len(text.rstrip()):
        match = _GL_TOKEN.match(text, position)
        if match is None:
            pytest.fail(f"the recipe player cannot read the rule {text!r}")
        position = match.end()
        if match["str"] is not None:
            code.append(repr(match["str"][1:-1]))
        elif match["var"] is not None:
            code.append(repr(variables.get(match["var"].strip("${}"))))
        else:
            code.append({"&&": " and ", "||": " or "}.get(match["op"], match["op"]))
    return bool(eval("".join(code), {"__builtins__": {}}, {}))  # only tokens this player wrote


def _merged(base: Mapping[str, Any], job: Mapping[str, Any]) -> dict[str, Any]:
    """GitLab's ``extends``: hashes merge deeply, anything else is replaced."""
    out = dict(base)
    for key, value in job.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _resolved(pipeline: Mapping[str, Any], name: str) -> dict[str, Any]:
    job = dict(pipeline[name])
    parents = job.pop("extends", [])
    for parent in [parents] if isinstance(parents, str) else parents:
        job = _merged(_resolved(pipeline, parent), job)
    return job


def _script(lines: Any) -> str:
    return "\n".join([lines] if isinstance(lines, str) else lines)


def play_gitlab(
    pipeline: Mapping[str, Any],
    *,
    workspace: Path,
    variables: Mapping[str, str],
    env: Mapping[str, str],
    cache: dict[str, Path],
    cache_root: Path,
) -> Played:
    """Play every job of the pipeline whose rules match, in order, in ``workspace``."""
    played = Played()
    for name in pipeline:
        if name.startswith(".") or name in _GL_RESERVED:
            continue
        job = _resolved(pipeline, name)
        job_vars = {
            **{k: str(v) for k, v in (pipeline.get("variables") or {}).items()},
            **{k: str(v) for k, v in (job.get("variables") or {}).items()},
            **variables,
        }
        rules = job.get("rules")
        if rules is not None:
            rule = next((r for r in rules if "if" not in r or gitlab_rule(r["if"], job_vars)), None)
            if rule is None or rule.get("when") == "never":
                continue
        played.ran.append(name)
        job_env = {**env, **job_vars}
        spec = job.get("cache") or {}
        key, policy = spec.get("key"), spec.get("policy", "pull-push")
        if key is not None and policy in ("pull", "pull-push") and key in cache:
            shutil.copytree(cache[key], workspace, dirs_exist_ok=True)
        body = _script(job.get("before_script", [])) + "\n" + _script(job["script"])
        _bash(body, cwd=workspace, env=job_env, what=f"job {name!r}")
        if key is not None and policy in ("push", "pull-push"):
            stored = cache_root / f"{len(cache)}-{key}"
            for path in spec["paths"]:
                shutil.copytree(workspace / path, stored / path, dirs_exist_ok=True)
            cache[key] = stored
        if "after_script" in job:
            _bash(
                _script(job["after_script"]),
                cwd=workspace,
                env=job_env,
                what=f"{name} after_script",
            )
        for path in (job.get("artifacts") or {}).get("paths", []):
            assert (workspace / path).exists(), f"{name}: artifact {path} was not written"
            played.artifacts[path] = workspace / path
    return played


def test_the_gitlab_ci_jobs_run_on_the_default_branch_and_on_merge_requests(
    repo: Repo, tmp_path: Path
) -> None:
    pipeline = yaml.safe_load((RECIPES / "gitlab-ci.yml").read_text(encoding="utf-8"))
    cache: dict[str, Path] = {}
    (tmp_path / "cache").mkdir()

    main = repo.clone(tmp_path / "main", "main")
    variables = {
        "CI_PIPELINE_SOURCE": "push",
        "CI_COMMIT_BRANCH": "main",
        "CI_DEFAULT_BRANCH": "main",
        "CI_COMMIT_SHA": repo.main,
        "CI_PROJECT_DIR": str(main),
    }
    played = play_gitlab(
        pipeline,
        workspace=main,
        variables=variables,
        env=repo.env,
        cache=cache,
        cache_root=tmp_path / "cache",
    )
    assert played.ran == ["roofline-baseline"]
    assert "main" in _labels(main, repo.env)
    assert set(played.artifacts) == {"roofline.html", "roofline.md"}
    assert list(cache) == ["roofline-store"]

    merge_base = repo.git("merge-base", repo.main, repo.feature)
    for paired in ("1", "0"):
        workspace = repo.clone(tmp_path / f"mr-{paired}", "feature")
        variables = {
            # A merge request pipeline has no CI_COMMIT_BRANCH.
            "CI_PIPELINE_SOURCE": "merge_request_event",
            "CI_DEFAULT_BRANCH": "main",
            "CI_COMMIT_SHA": repo.feature,
            "CI_MERGE_REQUEST_DIFF_BASE_SHA": merge_base,
            "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
            "CI_PROJECT_DIR": str(workspace),
            # A pipeline variable overrides the file's default, as a job that cannot afford
            # two trees would set it.
            "ROOFLINE_PAIRED": paired,
        }
        played = play_gitlab(
            pipeline,
            workspace=workspace,
            variables=variables,
            env=repo.env,
            cache=cache,
            cache_root=tmp_path / "cache",
        )
        assert played.ran == ["roofline-gate"]
        text = (workspace / "roofline.md").read_text(encoding="utf-8")
        assert ("**ab** vs" in text) if paired == "1" else ("vs **main**" in text)
        assert set(played.artifacts) == {"roofline.html", "roofline.md"}


# --------------------------------------------------------------------------- the page that shows them
@pytest.mark.parametrize("name", ["github-actions.yml", "gitlab-ci.yml"])
def test_docs_ci_shows_each_recipe_exactly_as_the_file(name: str) -> None:
    text = (RECIPES / name).read_text(encoding="utf-8")
    assert f"```yaml\n{text}```" in DOC.read_text(encoding="utf-8")


def test_the_expression_players_read_what_the_recipes_use() -> None:
    context = {"github.event_name": "push", "runner.os": "Linux"}
    assert github_expression("github.event_name == 'push'", context) is True
    assert github_expression("success() && (github.event_name == 'pull_request')", context) is False
    assert github_expression("always()", context, failed=True) is True
    assert _expand("roofline-${{ runner.os }}-", context) == "roofline-Linux-"
    assert gitlab_rule(
        "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH",
        {"CI_COMMIT_BRANCH": "main", "CI_DEFAULT_BRANCH": "main"},
    )
    assert not gitlab_rule("$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH", {"CI_DEFAULT_BRANCH": "main"})
    assert gitlab_rule(
        '$CI_PIPELINE_SOURCE == "merge_request_event"',
        {"CI_PIPELINE_SOURCE": "merge_request_event"},
    )
