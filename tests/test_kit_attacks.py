"""The grader against cheating and careless students (issue 29): one submission per attack, one grading run.

Honest students are graded beside hostile ones, before and after them; the honest keep their points, the
hostile score 0, no check source reaches a student, and no file outside a sandbox changes. The
submissions are built on the synthetic chapter (tests/fixtures/kit/), so the run takes about a minute.
"""

from __future__ import annotations

import csv
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # kit/ is not installed: it is imported from the repository's root

from kit import definitions, sandbox  # noqa: E402
from kit.escape import FORMULA_START, csv_cell, shown  # noqa: E402
from kit.student import student_edition  # noqa: E402
from tests.test_kit import FIXTURE, FIXTURE_CHECKS, SQUARES_12, reference, submission  # noqa: E402

pytestmark = pytest.mark.skipif(sandbox.available() is not None, reason=f"no sandbox: {sandbox.available()}")

MARKER = "kit-attack-marker"
CHECK_FILE = FIXTURE_CHECKS / "ch90.py"
CHECK_SECRET = "CLIP_CASES"  # a line of the check file that must never reach a student
FORMULA = "=cmd|' /C calc'!A0"  # OWASP's CSV injection example
INJECTS = f"""def clip(xs, low, high):
    raise AssertionError("{FORMULA} <script>alert(1)</script> | [a link](http://x) ![img](http://x)")
raise ValueError("{FORMULA}\\n| a | row |\\n<img src=x onerror=alert(1)>" + "B" * 10_000_000)
"""
BORROWS = """import json
_kit_dumps = json.dumps
def _forged(obj, *args, **kwargs):  # the export's JSON, rewritten: an answer that cannot be decoded (80 GB)
    if isinstance(obj, dict) and isinstance(obj.get("values"), dict):
        obj["values"]["n_squares"] = {"$t": "ndarray", "dtype": "<U100000000", "shape": [200], "v": ["a"] * 200}
    return _kit_dumps(obj, *args, **kwargs)
json.dumps = _forged
"""
FORGES_NAMES = """import json
_kit_dumps = json.dumps
def _forged(obj, *args, **kwargs):  # 300,000 more "functions" in the export: each would cost a parse of the notebook
    if isinstance(obj, dict) and isinstance(obj.get("values"), dict):
        obj["values"].update({f"f{i}": {"$t": "function"} for i in range(300_000)})
    return _kit_dumps(obj, *args, **kwargs)
json.dumps = _forged
""" + "".join(f"v{i} = [{i}, {i} + 1, ({i}, {i})]\n" for i in range(3000))  # a cell that is slow to parse
LIES = """class Liar(list):
    def __iter__(self):
        raise TypeError("read me if you can")
    def __eq__(self, other):
        return True
answer_prediction, answer_why = Liar(["above"]), "The one large value pulls the mean up, not the median."
"""
EXHAUSTS = """import os, subprocess
for place in ["/tmp/work", "/dev/shm", "/", "/dev", "/etc"]:
    try:
        with open(os.path.join(place, "fill"), "wb") as handle:
            while True:
                handle.write(bytes(1 << 20))
    except OSError:
        pass
sleepers, handles = [], []
try:
    while len(sleepers) < 5000:
        sleepers.append(subprocess.Popen(["sleep", "600"]))
except OSError:
    pass
try:
    while True:
        handles.append(open("/dev/null"))
except OSError:
    for handle in handles:
        handle.close()
"""


def hostile(first: str) -> nbformat.NotebookNode:
    """The student edition (0 points when nothing else happens) with an attack as its first code cell."""
    nb = student_edition(reference())
    nb.cells.insert(1, nbformat.v4.new_code_cell(first))
    return nb


def with_answers(cell: str) -> nbformat.NotebookNode:
    """The reference, with a cell before the first answer: the answers are right, the attack rides along."""
    return submission(insert={"90.1": cell})


def attacks(paths: dict[str, str]) -> dict:
    """student -> (notebook, expected points of 90.1, 90.2, 90.3); `paths` names what a student would aim at."""
    steal = f"""import glob, os, pathlib
found = []
for pattern in ["{paths['kit']}/**/*.py", "{paths['root']}/**/ch90.py", "/proc/*/cwd/**/ch90.py", "/proc/*/cmdline",
                "/tmp/**/*.py", os.path.expanduser("~") + "/**/*.py"]:
    for name in glob.glob(pattern, recursive=True)[:200]:
        try:
            found.append(pathlib.Path(name).read_text(errors="ignore")[:2000])
        except OSError:
            pass
hist = "\\n".join(globals().get("In", []))
print("\\n".join(found)[:100000])
answer_prediction, answer_why = "above", ("\\n".join(found) + hist)[:5000] or "nothing was found to read here"
"""
    copy_reference = f"""import json, pathlib
ref = json.loads(pathlib.Path("{paths['reference']}").read_text())
for cell in ref["cells"]:
    if "answer" in cell["metadata"].get("tags", []):
        exec("".join(cell["source"]))
"""
    patch = """import builtins, json, numpy
builtins.print = lambda *a, **k: None
builtins.compile = lambda *a, **k: (_ for _ in ()).throw(SystemExit)
numpy.allclose = lambda *a, **k: True
json.dumps = lambda *a, **k: '{"exercise": "90.1", "points": 4000, "feedback": "full marks"}'
class Anything(int):
    def __eq__(self, other): return True
    def __hash__(self): return 0
n_squares, answer_squares = Anything(12), Anything(1)
def clip(xs, low, high): return Anything(0)
answer_prediction = "above"
answer_why = Anything(0)
"""
    vandal = f"""import os, pathlib, shutil
for victim in pathlib.Path("{paths['submissions']}").glob("*"):
    if victim.name != "d-vandal":
        try:
            (victim / "90-synthetic.ipynb").write_text("{{}}")
            (victim / "feedback.md").write_text("# Feedback\\n\\n**6 of 6 points.** forged")
        except OSError:
            pass
        shutil.rmtree(victim, ignore_errors=True)
for out in ["{paths['out']}/grades.csv", "{paths['out']}/a-honest/feedback.md"]:
    try:
        pathlib.Path(out).write_text("forged")
    except OSError:
        pass
"""
    detach = f"""import subprocess
for _ in range(25):
    subprocess.Popen(["sh", "-c", "sleep 1; echo forged > {paths['out']}/grades.csv; sleep 600 # {MARKER}"],
                     start_new_session=True)
"""
    persist = f"""import os, pathlib
targets = ["{CHECK_FILE}", os.path.expanduser("~/.ipython/profile_default/startup/00-kit.py"),
           os.environ.get("IPYTHONDIR", "/tmp") + "/profile_default/startup/00-kit.py",
           "{paths['venv']}/lib/python3.11/site-packages/sitecustomize.py", "{paths['src']}/ragcourse/__init__.py"]
for target in targets:
    try:
        pathlib.Path(target).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(target).write_text("raise SystemExit('{MARKER}')\\n")
    except OSError:
        pass
"""
    hog = """import mmap
reserved = mmap.mmap(-1, 20 << 30)
"""
    net = """import socket
socket.create_connection(("1.1.1.1", 53), timeout=3)
"""
    weird_metadata = student_edition(reference())
    weird_metadata.metadata["ragcourse"] = "x"
    weird_values = with_answers("")
    weird_values.cells.append(nbformat.v4.new_code_cell(
        "answer_squares = float('nan')\nanswer_why = ['deep']\nfor _ in range(200):\n    answer_why = [answer_why]"))
    return {
        "a-honest": (reference, (2, 3, 1)),
        "b-steals-checks": (lambda: hostile(steal), (0, 0, 0)),
        "c-copies-reference": (lambda: hostile(copy_reference), (0, 0, 0)),
        "c-symlink": ("symlink", (0, 0, 0)),
        "c-hardlink": ("hardlink", (0, 0, 0)),
        "d-vandal": (lambda: hostile(vandal), (0, 0, 0)),
        "e-patches": (lambda: hostile(patch), (0, 0, 0)),
        "e-package-own": (lambda: submission(edits={"90.2": "from ragcourse.evaluation import holm as clip"}),
                          (2, 0, 1)),
        "f-detached": (lambda: hostile(detach), (0, 0, 0)),
        "g-persists": (lambda: hostile(persist), (0, 0, 0)),
        "h-metadata": (lambda: weird_metadata, (0, 0, 0)),
        "h-fifo": ("fifo", (0, 0, 0)),
        "h-weird-values": (lambda: weird_values, (0, 3, 0)),
        "i-feedback-link": ("feedback-link", (2, 3, 1)),
        "j-folder-link": ("folder-link", (0, 0, 0)),
        "k-memory": (lambda: with_answers(hog), (2, 3, 1)),
        "l-network": (lambda: with_answers(net), (2, 3, 1)),
        "m-injects": (lambda: submission(edits={"90.2": INJECTS}), (2, 0, 1)),
        "n-exhausts": (lambda: with_answers(EXHAUSTS), (2, 3, 1)),
        "q-forges-names": (lambda: with_answers(FORGES_NAMES), (2, 3, 1)),
        "r-lies": (lambda: submission(edits={"90.3": LIES}), (2, 3, 0)),  # one answer that raises when read
        # graded right after an honest student: their `clip` must not stand in for this one's
        "p-borrows-functions": (lambda: submission(edits={"90.2": "def clip(xs, low, high):\n    return []"},
                                                   insert={"90.1": BORROWS}), (0, 0, 1)),
        '=HYPERLINK("http:evil","x")': (reference, (2, 3, 1)),
        "-1+1 | <b>x<b> [l](y)\n# title": (reference, (2, 3, 1)),
        "o-\udcff-latin1": (reference, (2, 3, 1)),
        "grades.csv": (reference, (2, 3, 1)),
        "grades.csv (student)": (lambda: submission(edits={"90.1": "n_squares = 1"}), (0, 3, 1)),  # not the above's
        "L" * 255: (reference, (2, 3, 1)),
        "z-honest": (reference, (2, 3, 1)),
    }


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _marked_processes() -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            if MARKER.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            continue
    return found


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """Every attack graded in one `python -m kit.grade` run; the files that must not change, before and after."""
    base = tmp_path_factory.mktemp("attack")
    folder, out, outside = base / "submissions", base / "graded", base / "elsewhere"
    folder.mkdir()
    outside.mkdir()
    paths = {"kit": str(ROOT / "kit"), "root": str(ROOT), "reference": str(FIXTURE), "submissions": str(folder),
             "out": str(out), "venv": sys.prefix, "src": str(sandbox.package_root())}
    table = attacks(paths)
    for student, (make, _) in table.items():
        target = folder / student / "90-synthetic.ipynb"
        if make == "folder-link":
            (outside / "90-synthetic.ipynb").write_text(nbformat.writes(reference()), encoding="utf-8")
            (folder / student).symlink_to(outside, target_is_directory=True)
            continue
        (folder / student).mkdir()
        if make == "symlink":
            target.symlink_to(FIXTURE)
        elif make == "hardlink":  # to a copy of the reference where the grader reads it (here: beside the class)
            nbformat.write(reference(), outside / "reference.ipynb")
            target.hardlink_to(outside / "reference.ipynb")
        elif make == "fifo":
            os.mkfifo(target)
        elif make == "feedback-link":
            nbformat.write(reference(), target)
            (folder / student / "feedback.md").symlink_to(folder / "z-honest" / "90-synthetic.ipynb")
        else:
            nbformat.write(make(), target)
    guarded = [CHECK_FILE, FIXTURE, *sorted(folder.glob("[a-z]-*/90-synthetic.ipynb"))]
    guarded = [p for p in guarded if p.is_file() and not p.is_symlink()]
    before = {p: _digest(p) for p in guarded}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(sandbox.package_root()), str(ROOT)]),
           "RAGCOURSE_VARIANT": "0"}
    cmd = [sys.executable, "-m", "kit.grade", str(folder), "--out", str(out), "--checks", str(FIXTURE_CHECKS),
           "--reference", str(FIXTURE.parent), "--chapters", "90", "--cell-timeout", "10", "--notebook-timeout", "60",
           "--check-timeout", "10"]
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    time.sleep(2)  # a detached process would write now
    with (out / "grades.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return {"rows": rows, "out": out, "table": table, "before": before, "outside": outside, "folder": folder,
            "seconds": time.monotonic() - started}


def test_every_student_gets_exactly_their_points(attacked):
    got = {}
    for row in attacked["rows"]:
        got.setdefault(row["student"], []).append(float(row["points"]))
    expected = {csv_cell(shown(s)): [float(p) for p in points] for s, (_, points) in attacked["table"].items()}
    assert got == expected, {s: [r["feedback"] for r in attacked["rows"] if r["student"] == s] for s in got}


def test_points_are_numbers_within_the_maximum(attacked):
    assert all(0 <= float(r["points"]) <= float(r["max_points"]) for r in attacked["rows"])


def test_no_check_source_reaches_a_student(attacked):
    out = attacked["out"]
    texts = [(out / "grades.csv").read_text(encoding="utf-8")]
    texts += [p.read_text(encoding="utf-8") for p in out.glob("*/feedback.md")]
    assert not any(CHECK_SECRET in t or str(SQUARES_12) in t or "min(max(x, low), high)" in t for t in texts)


def test_no_file_outside_a_sandbox_changed(attacked):
    changed = [str(p) for p, digest in attacked["before"].items() if not p.is_file() or _digest(p) != digest]
    assert changed == []
    assert not (attacked["outside"] / "feedback.md").exists()
    assert "forged" not in (attacked["out"] / "grades.csv").read_text(encoding="utf-8")
    assert not list(Path(os.path.expanduser("~/.ipython/profile_default/startup")).glob("00-kit.py"))
    assert not (Path(sys.prefix) / "lib" / "python3.11" / "site-packages" / "sitecustomize.py").exists()


def test_nothing_a_submission_started_outlives_it(attacked):
    assert _marked_processes() == []


def test_feedback_says_why_for_the_careless_and_the_hostile(attacked):
    out = attacked["out"]
    feedback = {p.parent.name: p.read_text(encoding="utf-8") for p in out.glob("*/feedback.md")}
    assert "not a regular file" in feedback["h-fifo"]
    assert "link" in feedback["c-symlink"] and "link" in feedback["j-folder-link"]
    assert "hard link" in feedback["c-hardlink"]
    # two names that differ only by the escape get two folders, each with its own student's feedback
    assert feedback["grades.csv (student)"].startswith("# Feedback for grades.csv\n")
    assert feedback["grades.csv (student) (student)"].startswith("# Feedback for grades.csv (student)\n")
    assert "imported, not written by you" in feedback["e-package-own"]
    assert "Cannot allocate memory" in feedback["k-memory"] or "MemoryError" in feedback["k-memory"]
    assert "unreachable" in feedback["l-network"] or "OSError" in feedback["l-network"]


def test_a_copy_of_the_package_own_function_is_refused():
    from ragcourse import evaluation

    source = definitions.program([f"import numpy as np\n{_source(evaluation.holm)}".replace("def holm(", "def mine(")],
                                 "mine")
    assert definitions.not_own_work(source, "mine") == "`mine` is the package's own function, copied: write it yourself"
    renamed = (_source(evaluation.holm).replace("def holm(", "def mine(").replace("order", "ranks")
               .replace("adjusted", "out").replace("scaled", "steps"))  # a near-copy: its variables renamed
    assert "copied" in definitions.not_own_work(definitions.program([f"import numpy as np\n{renamed}"], "mine"), "mine")
    assert "new name" in definitions.not_own_work(["from ragcourse.evaluation import holm", "mine = holm"], "mine")
    assert definitions.not_own_work(["def mine(p):\n    return sorted(p)"], "mine") is None


def _source(fn) -> str:
    import inspect
    import textwrap

    return textwrap.dedent(inspect.getsource(fn))


def test_the_sandbox_sees_no_checkout_no_network_and_no_other_process(tmp_path):
    probe = f"""import os, socket, json
seen = {{"kit": os.path.exists({str(ROOT / 'kit')!r}), "notebooks": os.path.exists({str(ROOT / 'notebooks')!r}),
        "pids": len([p for p in os.listdir('/proc') if p.isdigit()]), "uid": os.getuid()}}
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    seen["network"] = True
except OSError:
    seen["network"] = False
answer_why = json.dumps(seen)
"""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(probe)])
    result = sandbox.run_notebook(nbformat.writes(nb).encode(), ["answer_why"],
                                  {"cell": 30, "notebook": 60, "check": 30, "grace": 10})
    import json

    seen = json.loads(result["exported"]["values"]["answer_why"])
    assert seen["kit"] is False and seen["notebooks"] is False and seen["network"] is False
    assert seen["pids"] <= 4 and seen["uid"] != 0, seen


def test_grades_and_feedback_are_safe_to_open_whatever_a_student_named_or_raised(attacked):
    """No grades.csv cell starts a spreadsheet formula; no feedback.md carries HTML, a link or a broken table."""
    out = attacked["out"]
    with (out / "grades.csv").open(encoding="utf-8", newline="") as handle:
        cells = [cell for row in csv.reader(handle) for cell in row]
    assert not [c for c in cells if c.lstrip(" ")[:1] in FORMULA_START]
    assert any(FORMULA in c for c in cells)  # the student's text is there, defused
    pages = {p.parent.name: p.read_text(encoding="utf-8") for p in out.glob("*/feedback.md")}
    assert len(pages) == len(attacked["table"])
    for name, text in pages.items():
        assert "<" not in text and "](" not in text.replace("\\](", ""), name
        table = [line for line in text.splitlines() if line.startswith("| ")]
        assert all(line.replace("\\|", "").count("|") == 4 for line in table), name
        assert table or "not a real folder" in text, name
    assert FORMULA.replace("|", "\\|") in pages["m-injects"] and len(pages["m-injects"]) < 20_000


def test_the_sandbox_writes_only_to_its_sized_tmp_and_goes_first_when_memory_runs_out(tmp_path):
    probe = """import os, shutil, subprocess
info = {"oom": open("/proc/self/oom_score_adj").read().strip()}
if shutil.which("unshare"):  # a user namespace inside is root there: it could mount a tmpfs without a size
    info["nested"] = subprocess.run(["unshare", "-Urm", "true"], capture_output=True).returncode
for place in ["/", "/dev", "/etc", "/opt", "/root", "/tmp/work", "/dev/shm"]:
    written = 0
    try:
        with open(os.path.join(place, "fill"), "wb") as handle:
            while written < 64 << 20:
                handle.write(bytes(1 << 20))
                written += 1 << 20
    except OSError:
        pass
    info[place] = written >> 20
"""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(probe)])
    result = sandbox.run_notebook(nbformat.writes(nb).encode(), ["info"],
                                  {"cell": 30, "notebook": 60, "check": 30, "grace": 10},
                                  quota=sandbox.Quota(tmp_size=16 << 20))
    info = dict(result["exported"]["values"]["info"]["v"])
    assert info["oom"] == "1000"
    assert [info[p] for p in ["/", "/dev", "/etc", "/opt", "/root"]] == [0] * 5, info
    assert 8 <= info["/tmp/work"] <= 16 and 8 <= info["/dev/shm"] <= 16, info
    if sandbox._no_nested_userns(shutil.which("bwrap")):
        assert info.get("nested", 1) != 0, info


THREADS = """import threading, time
for _ in range(300):
    threading.Thread(target=time.sleep, args=(120,), daemon=True).start()
print("up", flush=True)
time.sleep(120)
"""


def test_a_sandbox_starts_while_its_user_already_runs_many_threads():
    """RLIMIT_NPROC counts all of a user's processes: 300 threads elsewhere must not leave a sandbox unable to start.

    The threads run as the sandbox's user on the host: nobody where the grader drops to it, else the grader's
    own user (root, when the interpreter is out of nobody's reach: its pids cgroup is the cap)."""
    as_user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if sandbox.drop_to_nobody() else []
    threads_elsewhere = subprocess.Popen([*as_user, sys.executable, "-c", THREADS], stdout=subprocess.PIPE, text=True)
    try:
        assert threads_elsewhere.stdout.readline().strip() == "up"
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import threading\nanswer = 41 + 1")])
        result = sandbox.run_notebook(nbformat.writes(nb).encode(), ["answer"],
                                      {"cell": 30, "notebook": 60, "check": 30, "grace": 10})
    finally:
        threads_elsewhere.kill()
        threads_elsewhere.wait()
    assert (result.get("exported") or {}).get("values") == {"answer": 42}, result


SPAWNS = """import threading, time
def spawn(n):
    started = 0
    try:
        for _ in range(n):
            threading.Thread(target=time.sleep, args=(120,), daemon=True).start()
            started += 1
    except RuntimeError:
        pass
    return started
"""


def test_a_sandbox_keeps_its_processes_beside_a_classmates_that_uses_up_its_own():
    """With -j, sandboxes of one user run side by side. Running as nobody, RLIMIT_NPROC once counted that user's
    processes in every sandbox: a classmate who started all they could left the sandbox beside unable to start one."""
    deadline = time.monotonic() + 120
    student, hog = sandbox.Functions([SPAWNS], deadline), sandbox.Functions([SPAWNS], deadline)
    try:
        assert student.call("spawn", (1,), {}) == 1  # its sandbox is up first
        assert 0 < hog.call("spawn", (1000,), {}) < sandbox.Quota().sandbox_processes  # stopped by its own cap
        assert student.call("spawn", (20,), {}) == 20
    finally:
        student.close()
        hog.close()


FORGES_INPUT = """import os
def f(folder):
    path = os.path.join(folder, "input.txt")
    try:
        open(path, "w").write("forged")
    except OSError as err:
        return type(err).__name__, open(path).read()
    return "written", open(path).read()
"""


def test_a_function_reads_but_cannot_write_the_folder_its_check_shares():
    """The exchange folder (a check's input files) is read-only to the student's function: no forged input."""
    import tempfile

    exchange = Path(tempfile.mkdtemp(prefix="ragcourse-test-exchange-"))
    exchange.chmod(0o755)
    (exchange / "input.txt").write_text("the check's input")
    # as chapter 8's check does: its own TemporaryDirectory (0700, the grader's) inside the exchange folder
    inner = Path(tempfile.mkdtemp(dir=exchange))
    (inner / "input.txt").write_text("the check's input")
    functions = sandbox.Functions([FORGES_INPUT], time.monotonic() + 60, exchange=exchange)
    try:
        assert functions.call("f", (str(exchange),), {}) == ("OSError", "the check's input")
        assert functions.call("f", (str(inner),), {}) == ("OSError", "the check's input")
        assert (exchange / "input.txt").read_text() == (inner / "input.txt").read_text() == "the check's input"
    finally:
        functions.close()
        shutil.rmtree(exchange)


# ---- the walls around a sandbox (issue 43): kernel interfaces, system calls, memory, leftovers, links ----

LIMITS = {"cell": 60, "notebook": 90, "check": 30, "grace": 10}
KERNEL_PROBE = """import ctypes, json, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)
seen = {"seccomp": open("/proc/self/status").read().split("Seccomp:")[1].split()[0]}
for path in ["/proc/sys/vm/overcommit_memory", "/proc/sys/kernel/hostname", "/proc/sysrq-trigger",
             "/proc/self/oom_score_adj", "/proc/1/oom_score_adj"]:
    try:
        with open(path, "w") as handle:
            handle.write("1")
        seen[path] = "written"
    except OSError as err:
        seen[path] = type(err).__name__
calls = {"unshare": lambda: libc.unshare(0x10000000), "unshare-mount": lambda: libc.unshare(0x00020000),
         "mount": lambda: libc.mount(b"none", b"/tmp/work", b"tmpfs", 0, None),
         "ptrace": lambda: libc.ptrace(16, 1, 0, 0), "setns": lambda: libc.setns(0, 0),
         "keyctl": lambda: libc.syscall(250, 0, 0, 0, 0, 0), "bpf": lambda: libc.syscall(321, 0, 0, 0),
         "kexec": lambda: libc.syscall(246, 0, 0, 0, 0)}
for name, call in calls.items():
    ctypes.set_errno(0)
    seen[name] = (call(), ctypes.get_errno())
seen["unshare-command"] = subprocess.run(["unshare", "-U", "true"], capture_output=True).returncode
answer = json.dumps(seen)
"""


def _one_cell(source: str, names: list[str], quota: sandbox.Quota | None = None) -> dict:
    quota = quota or sandbox.Quota()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    return sandbox.run_notebook(nbformat.writes(nb).encode(), names, LIMITS, quota=quota)


def test_no_kernel_interface_is_writable_and_forbidden_calls_fail_under_seccomp():
    import errno
    import json

    result = _one_cell(KERNEL_PROBE, ["answer"])
    seen = json.loads(result["exported"]["values"]["answer"])
    assert seen.pop("seccomp") == "2", seen  # a filter is loaded
    assert "written" not in [seen.pop(p) for p in list(seen) if p.startswith("/proc")], seen
    assert seen.pop("unshare-command") != 0
    assert all(value == [-1, errno.EPERM] for value in seen.values()), seen


MANY_GIGABYTES = """import fcntl, mmap, os, time
done, write = os.pipe()
fcntl.fcntl(done, fcntl.F_SETFL, os.O_NONBLOCK)
for _ in range(20):
    if os.fork() == 0:
        block = mmap.mmap(-1, 1 << 30)
        for offset in range(0, 1 << 30, 4096):
            block[offset] = 1
        os.write(write, b"1")  # this child holds its whole gigabyte
        time.sleep(60)
        os._exit(0)
time.sleep(15)
try:
    held = len(os.read(done, 100))
except BlockingIOError:
    held = 0
"""


@pytest.mark.parametrize("cgroup", [True, False], ids=["cgroup", "watch"])
def test_twenty_processes_of_a_gigabyte_stay_within_the_sandbox_memory(cgroup):
    """20 x 1 GB against 2 GB for the whole sandbox: a cgroup kills some, or the watch stops the sandbox."""
    from kit import walls

    if cgroup and not walls.cgroups_usable():
        pytest.skip("no cgroup can be made here: the watch is the wall (tested beside)")
    result = _one_cell(MANY_GIGABYTES, ["held"], sandbox.Quota(sandbox_memory=2 << 30, cgroup=cgroup))
    held = ((result.get("exported") or {}).get("values") or {}).get("held")
    notes = " ".join(result.get("notes", []))
    if held is None:  # the whole sandbox was stopped, or its kernel killed
        assert "memory limit" in notes or "kernel died" in notes, result
    else:  # the kernel and one gigabyte fit in 2 GB, never two
        assert held <= 1, result
    assert cgroup or held is None, result  # the watch stops the whole sandbox


SLEEPS = "import time\ntime.sleep(300)\nanswer_squares = 1\n"


def test_a_kill_9_of_the_grader_leaves_nothing_at_the_next_start(tmp_path):
    """The grader's job folders and cgroups are named by its pid and start time: the next start removes them."""
    import signal

    from kit import walls

    folder = tmp_path / "class"
    (folder / "ann").mkdir(parents=True)
    nbformat.write(hostile(SLEEPS), folder / "ann" / "90-synthetic.ipynb")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(sandbox.package_root()), str(ROOT)])}
    grader = subprocess.Popen([sys.executable, "-m", "kit.grade", str(folder), "--out", str(tmp_path / "out"),
                               "-j", "1", "--checks", str(FIXTURE_CHECKS), "--reference", str(FIXTURE.parent)],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mine = Path(walls.run_folder()).parent.glob(f"{walls.PREFIX}{grader.pid}-*")
    deadline = time.monotonic() + 240
    while not [p for p in mine if list(p.glob("ragcourse-notebook-*"))] and time.monotonic() < deadline:
        time.sleep(1)
        mine = list(Path(walls.run_folder()).parent.glob(f"{walls.PREFIX}{grader.pid}-*"))
    grader.send_signal(signal.SIGKILL)
    grader.wait()
    assert mine, "the grader never started a sandbox"
    removed = walls.clean_stale()
    assert all(str(p) in removed for p in mine) and not [p for p in mine if p.exists()]
    groups = [g for base in walls._cgroup_bases().values() for g in base.glob(f"{walls.PREFIX}{grader.pid}-*")]
    assert groups == []


def test_graders_in_two_pid_namespaces_never_remove_each_others_job_folders(tmp_path, monkeypatch):
    """A grader in a container sharing /tmp sees pids that name other processes, or none, in its namespace:
    neither judges the other's folders stale, and each still removes its own namespace's leftovers."""
    import tempfile

    from kit import walls

    shared = tmp_path / "tmp"  # both sides' temporary folder: no real grader's folder is ever in reach
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    inner = ("import sys\nfrom kit import walls\nwalls._cgroup_bases = lambda: {}\n"  # the folders only
             "print(walls.run_folder(), walls.clean_stale(), flush=True)\nsys.stdin.readline()\n")
    ours, leftover = walls.run_folder(), shared / f"{walls.PREFIX}1-0-ns{walls._pid_namespace()}"
    leftover.mkdir()  # a killed grader of this namespace
    env = {**os.environ, "TMPDIR": str(shared),
           "PYTHONPATH": os.pathsep.join([str(sandbox.package_root()), str(ROOT)])}
    namespace = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "--kill-child"]
    other = subprocess.Popen([*namespace, sys.executable, "-c", inner], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # any user, as a container
    try:
        line = other.stdout.readline().split(" ", 1)
        if len(line) < 2:
            pytest.skip(f"no pid namespace here: {other.stderr.read()[-300:]}")
        theirs = Path(line[0])
        assert theirs.is_dir() and ours.is_dir() and str(ours) not in line[1]
        removed = walls.clean_stale()
        assert str(theirs) not in removed and theirs.is_dir()
        assert str(leftover) in removed and not leftover.exists()
    finally:
        other.communicate("\n", timeout=60)
    assert not theirs.exists()  # it removed its own at exit


# ---- what the checker decodes (issue 44): bounded however nested, no module the data names is imported ----


def test_a_nested_forged_answer_is_refused_before_it_is_built():
    """1,000 rows x 10 nested strings of a wide dtype (42 KB of JSON) was 4 GB in the checker."""
    import json
    import resource

    from kit import codec

    nested = {"$t": "ndarray", "dtype": "<U100000", "shape": [1000], "v": [[""] * 10 for _ in range(1000)]}
    wide = {"$t": "frame", "columns": list(range(10)), "index": list(range(1000)), "v": [[[""] * 10] * 10] * 1000,
            "dtypes": ["<U16"] * 10}
    many = [[""] * 1000 for _ in range(6000)]  # 6 million values from 30 MB of JSON
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for data in (nested, many):
        with pytest.raises(ValueError):
            codec.loads(json.dumps(data))
    try:  # a frame of nested lists: built small, or refused
        codec.loads(json.dumps(wide))
    except ValueError:
        pass
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 1 << 20  # KB: under 1 GB more


def test_a_record_or_exception_class_named_by_the_data_imports_nothing():
    from kit import codec

    name = "ragcourse.cli.__main__"
    sys.modules.pop(name, None)
    for forged in ({"$t": "obj", "class": f"{name}:main", "v": {}}, {"$t": "obj", "class": "os:system", "v": {}}):
        with pytest.raises(ValueError, match="not one of the package's records"):
            codec.decode(forged)
    error = sandbox._exception(f"{name}:main", "boom")
    assert isinstance(error, sandbox.StudentError) and name not in sys.modules
    from ragcourse.groundtruth import Question

    record = Question("q", "doc", "needle", "?", "?")
    assert codec.decode(codec.encode(record)) == record  # the package's own records still travel


MANY_THREADS = """import threading, time
threading.stack_size(1 << 16)
started = 0
try:
    for _ in range(3000):
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        started += 1
except RuntimeError:
    pass
"""


def test_a_sandbox_cannot_start_more_than_its_processes_whoever_its_user_is_on_the_host():
    """As root with the interpreter under /root, the sandbox's user is root on the host, where RLIMIT_NPROC
    never applies (1,212 threads against a limit of 615): a pids cgroup caps it, or the grader refuses."""
    from kit import walls

    result = _one_cell(MANY_THREADS, ["started"])
    started = result["exported"]["values"]["started"]
    assert walls.cgroups_usable() or sandbox.drop_to_nobody() or os.geteuid() != 0
    assert started < sandbox.Quota().sandbox_processes + sandbox.Quota().processes, started


def _analysis_job(tmp_path: Path, nb: nbformat.NotebookNode, names: list[str]) -> dict:
    nbformat.write(nb, tmp_path / "submission.ipynb")
    return {"notebook": str(tmp_path / "submission.ipynb"), "result": None, "names": names, "stubs": {},
            "out": str(tmp_path / "student.json"), "unsafe": False, "check_seconds": 10}


def test_the_graders_reading_of_a_huge_notebook_costs_only_that_notebook(tmp_path):
    """60 MB of 2 MB list-assignment cells drove the grader itself to 5.8 GB: now a child under limits reads it."""
    import resource

    from kit import analysis

    cell = "x = [" + "0, " * 600_000 + "]\n"  # 1.8 MB: under the size a cell is not read at all
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell) for _ in range(33)])
    job = _analysis_job(tmp_path, nb, ["x"])
    (tmp_path / "result.json").write_text('{"exported": {"values": {"x": {"$t": "function"}}}}')  # so it is parsed
    job["result"] = str(tmp_path / "result.json")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    found = analysis.analyse(job, memory=768 << 20, seconds=20)
    assert found["readable"] is False and found["why"].startswith("too large to grade: "), found
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 << 10  # KB


def test_a_notebook_of_many_statements_is_read_in_about_linear_time(tmp_path):
    """A 650 KB notebook stalled the class for 38 min (definitions.program was quadratic in the grader)."""
    import json

    from kit import analysis

    values = "".join(f"v{i} = [{i}, {i} + 1, ({i}, {i})]\n" for i in range(20_000))
    uses = "def f():\n    return [" + ", ".join(f"v{i}[0]" for i in range(0, 20_000, 7)) + "]\n"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(values), nbformat.v4.new_code_cell(uses)])
    job = _analysis_job(tmp_path, nb, ["f"])
    (tmp_path / "result.json").write_text(json.dumps({"exported": {"values": {"f": {"$t": "function"}}}}))
    job["result"] = str(tmp_path / "result.json")
    assert analysis.analyse(job, seconds=60)["readable"]  # within its limit, where the old reading took minutes
    functions = json.loads((tmp_path / "student.json").read_text())["functions"]
    assert len(functions["f"]) == 1 + len(range(0, 20_000, 7))


READ_THE_JOB = """
import glob
seen = "".join(open(p, encoding="utf-8", errors="replace").read() for p in glob.glob("/opt/kit-job/*.json"))
get_ipython().events.register("pre_run_cell", lambda info: globals().__setitem__("cell", info.raw_cell))
"""


def test_a_submission_that_reads_its_job_and_the_export_cell_learns_no_answer_name():
    """The sandbox's job file listed every name the reference's answer cells bind; now they go in sealed."""
    result = _one_cell(READ_THE_JOB, ["seen", "cell", "answer_nobody_guesses"])
    values = result["exported"]["values"]
    assert '"digests"' in values["seen"] and "answer_nobody_guesses" not in values["seen"], values["seen"][:300]
    assert "_kit_export" in values["cell"] and "answer_nobody_guesses" not in values["cell"]


def test_where_no_sandbox_can_be_made_the_grader_refuses_and_grades_nothing(tmp_path):
    """As any user: without a wall (here bwrap missing from PATH), nothing is graded and the message says why."""
    folder = tmp_path / "class"
    (folder / "ann").mkdir(parents=True)
    nbformat.write(reference(), folder / "ann" / "90-synthetic.ipynb")
    env = {**os.environ, "PATH": str(tmp_path / "empty"),
           "PYTHONPATH": os.pathsep.join([str(sandbox.package_root()), str(ROOT)])}
    done = subprocess.run([sys.executable, "-m", "kit.grade", str(folder), "--out", str(tmp_path / "out"),
                           "--checks", str(FIXTURE_CHECKS), "--reference", str(FIXTURE.parent)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "cannot isolate submissions, so nothing was graded" in done.stderr, done.stderr
    assert "bwrap is not installed" in done.stderr and not (tmp_path / "out").exists()
