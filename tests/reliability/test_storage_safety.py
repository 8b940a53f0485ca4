"""Saved knowledge bases are data, never code (issue 9).

* The package never unpickles or evaluates: an AST scan of every module under ``crux_nb/`` finds no import of
  pickle-family modules (pickle, joblib, cloudpickle, dill, shelve, marshal), no ``read_pickle``,
  ``allow_pickle=True``, ``eval``/``exec``/``compile``/``__import__``, ``yaml.load``; and at run time,
  opening a saved knowledge base with communities and reports triggers no unpickling (``pickle.load(s)`` and
  ``pickle.Unpickler`` patched to raise, plus a process audit hook for ``pickle.find_class``, ``exec``,
  ``compile`` and ``marshal.loads`` events while it opens).
* A pickle planted in the folder (beside the manifest, beside a table's parts, at the root) is ignored; a
  manifest that names a ``.pkl`` file, or a path outside its generation, is rejected with ``StorageError``;
  a pickle renamed ``.parquet`` with a matching checksum is rejected as unreadable. None of them runs: the
  planted payload would create a marker file when unpickled.
* Hostile source ids (``../../evil``, ``/etc/passwd``, ``a/../../b``, ``CON``, ``..``, NUL, back-slashes,
  5,000 characters) are rejected with ``InputError`` at add time or saved as data: no file appears outside
  the save folder, every file name inside it comes from a fixed set, and the ids round-trip exactly.
"""

from __future__ import annotations

import ast
import hashlib
import json
import pickle
import re
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

import crux_nb
from crux_nb.errors import InputError, StorageError
from crux_nb.models import OfflineModel
from crux_nb.schema import SCHEMAS
from crux_nb import open as open_knowledge_base
from crux_nb.store.persist import current_generation
from crux_nb.testing import assert_kb_equal

PACKAGE = Path(crux_nb.__file__).resolve().parent
FORBIDDEN_MODULES = {"pickle", "_pickle", "cPickle", "cloudpickle", "joblib", "dill", "shelve", "marshal"}
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__"}
FORBIDDEN_ATTRS = {"read_pickle", "unsafe_load", "full_load", "PyExtensionType", "deserialize"}


# ------------------------------------------------------------------ static scan
def scan_source(source: str, name: str = "<src>") -> list[str]:
    """Findings of pickle-family imports, dynamic code execution and pickle-enabled loaders in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        where = f"{name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            found += [f"{where} import {a.name}" for a in node.names if a.name.split(".")[0] in FORBIDDEN_MODULES]
        elif isinstance(node, ast.ImportFrom):
            if node.module and node.module.split(".")[0] in FORBIDDEN_MODULES:
                found.append(f"{where} from {node.module} import ...")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in FORBIDDEN_CALLS:
                found.append(f"{where} {func.id}()")
            if isinstance(func, ast.Attribute) and func.attr == "load" and isinstance(func.value, ast.Name) \
                    and func.value.id == "yaml":
                found.append(f"{where} yaml.load()")
            for kw in node.keywords:
                if kw.arg == "allow_pickle" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                    found.append(f"{where} allow_pickle={ast.unparse(kw.value)}")
        elif isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRS:
            found.append(f"{where} .{node.attr}")
        elif isinstance(node, ast.Name) and node.id in ("pickle", "cloudpickle", "joblib", "dill"):
            found.append(f"{where} name {node.id}")
    return found


def test_the_scanner_finds_what_it_looks_for():
    bad = ("import pickle\nfrom joblib import load\nimport cloudpickle as cp\nx = pd.read_pickle(p)\n"
           "y = np.load(f, allow_pickle=True)\nz = eval('1')\nexec(code)\nyaml.load(s)\nw = __import__('os')\n"
           "a = np.load(f, allow_pickle=False)\n")
    assert len(scan_source(bad)) == 9  # everything but the last line


def test_no_module_of_the_package_unpickles_or_evaluates():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 40
    found = [f for path in files for f in scan_source(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE)))]
    assert found == []


# ------------------------------------------------------------------ runtime
TEXTS = {
    f"team-{g}-{k}.md": f"# Note {k}\n\n{lead} works with {partner} on the {service}. {lead} reviewed the {service} "
                        f"plan with {partner} on day {k}."
    for g, (lead, partner, service) in enumerate([
        ("Priya Raman", "Sofia Lindqvist", "Ingest Gateway"),
        ("Marcus Chen", "Daniel Kim", "Query Engine"),
        ("Hannah Okafor", "Nadia Haddad", "Billing Service"),
    ]) for k in range(3)
}

_AUDIT = {"on": False, "events": []}


def _audit(event, args):  # process-wide and permanent: records only while a test switches it on
    if _AUDIT["on"] and event in ("pickle.find_class", "exec", "compile", "marshal.loads", "marshal.load"):
        _AUDIT["events"].append(event)


sys.addaudithook(_audit)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A saved knowledge base with entities, communities and reports; (path, the kb)."""
    kb = crux_nb.knowledge_base(id="safe", communities=crux_nb.communities(model=OfflineModel()))
    for sid, text in TEXTS.items():
        kb.add_text(sid, text, metadata={"team": sid.split("-")[1]})
    kb.communities.prepare(progress=False)
    assert len(kb.communities.frame("reports")) >= 2
    path = tmp_path_factory.mktemp("safe") / "kb"
    kb.save(path)
    return path, kb


@pytest.fixture
def copy(saved, tmp_path):
    src, _ = saved
    dst = tmp_path / "kb"
    shutil.copytree(src, dst)
    return dst


class _Boom:
    """Unpickling this creates ``marker`` (a stand-in for any code a pickle can run)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path(self.marker).touch, ())


@pytest.fixture
def no_unpickling(monkeypatch):
    """Any unpickling fails the test; returns the audit events seen while ``guard`` is on."""

    def refuse(*args, **kwargs):
        raise AssertionError("crux_nb unpickled while opening a saved knowledge base")

    class Refuse(pickle.Unpickler):
        def __init__(self, *args, **kwargs):
            refuse()

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "Unpickler", Refuse)
    monkeypatch.setattr(pd, "read_pickle", refuse)

    class Guard:
        def __enter__(self):
            _AUDIT["events"].clear()
            _AUDIT["on"] = True
            return _AUDIT["events"]

        def __exit__(self, *exc):
            _AUDIT["on"] = False

    return Guard


def test_the_guard_sees_unpickling(no_unpickling, tmp_path):
    """The patched functions and the audit hook catch unpickling, also through the C accelerator."""
    import _pickle

    data = pickle.dumps(_Boom(tmp_path / "PWNED"))
    with pytest.raises(AssertionError, match="unpickled"):
        pickle.loads(data)
    with no_unpickling() as events:
        _pickle.loads(data)
    assert "pickle.find_class" in events and (tmp_path / "PWNED").exists()


def test_opening_a_saved_knowledge_base_never_unpickles(saved, copy, no_unpickling):
    _, kb = saved
    open_knowledge_base(copy)  # warm: lazy imports exec module code, which is not what this test is about
    with no_unpickling() as events:
        reopened = open_knowledge_base(copy, communities=crux_nb.communities(model=OfflineModel()))
        reports = reopened.communities.frame("reports")
    assert events == []
    assert_kb_equal(reopened, kb)
    assert len(reports) >= 2 and reopened.communities.status() == "ready"


def plant(folder: Path, name: str, marker: Path) -> Path:
    path = folder / name
    path.write_bytes(pickle.dumps(_Boom(marker)))
    return path


def generation_folder(root: Path) -> Path:
    return root / "generations" / current_generation(root)


def test_planted_pickles_are_ignored(saved, copy, tmp_path, no_unpickling):
    _, kb = saved
    marker = tmp_path / "PWNED"
    gen = generation_folder(copy)
    table_dirs = [p for p in gen.iterdir() if p.is_dir()]
    planted = [plant(copy, "kb.pkl", marker), plant(gen, "manifest.pkl", marker), plant(gen, "chunks.pkl", marker)]
    planted += [plant(d, "part-00001.pkl", marker) for d in table_dirs]
    with no_unpickling() as events:
        reopened = open_knowledge_base(copy)
    assert events == [] and not marker.exists()
    assert_kb_equal(reopened, kb)
    assert all(p.exists() for p in planted)


def _manifest(copy: Path) -> tuple[Path, dict]:
    path = generation_folder(copy) / "manifest.json"
    return path, json.loads(path.read_text())


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _entry_rows(entry: dict) -> int:
    return entry["rows"]


MANIFEST_ATTACKS = {
    # format 1 (one file per table) naming a pickle
    "table_file_pkl": lambda gen, entry, pkl: {"file": "chunks.pkl", "rows": _entry_rows(entry), "sha256": _sha(pkl)},
    # a partitioned table whose part is a pickle
    "part_file_pkl": lambda gen, entry, pkl: {"folder": "chunks", "rows": _entry_rows(entry),
                                              "parts": [{"file": pkl.name, "rows": _entry_rows(entry), "sha256": _sha(pkl)}]},
    # parts outside the generation
    "part_traversal": lambda gen, entry, pkl: {"folder": "chunks", "rows": _entry_rows(entry),
                                               "parts": [{"file": "../../../evil.pkl", "rows": _entry_rows(entry),
                                                          "sha256": _sha(pkl)}]},
    "folder_traversal": lambda gen, entry, pkl: {"folder": "../../..", "rows": _entry_rows(entry),
                                                 "parts": [{"file": "part-00000.parquet", "rows": _entry_rows(entry),
                                                            "sha256": _sha(pkl)}]},
    "absolute_file": lambda gen, entry, pkl: {"file": str(pkl), "rows": _entry_rows(entry), "sha256": _sha(pkl)},
}


@pytest.mark.parametrize("verify", [True, False], ids=["verify", "no_verify"])
@pytest.mark.parametrize("attack", sorted(MANIFEST_ATTACKS))
def test_a_manifest_naming_a_pickle_is_rejected(copy, tmp_path, no_unpickling, attack, verify):
    marker = tmp_path / "PWNED"
    gen = generation_folder(copy)
    pkl = plant(gen / "chunks", "part-00000.pkl", marker)
    plant(gen, "chunks.pkl", marker)
    plant(copy.parent, "evil.pkl", marker)
    path, manifest = _manifest(copy)
    manifest["tables"]["chunks"] = MANIFEST_ATTACKS[attack](gen, manifest["tables"]["chunks"], pkl)
    path.write_text(json.dumps(manifest))
    with no_unpickling() as events, pytest.raises(StorageError) as info:
        open_knowledge_base(copy, verify=verify)
    assert "chunks" in str(info.value)
    assert events == [] and not marker.exists()


def test_a_pickle_renamed_parquet_with_a_matching_checksum_is_rejected(copy, tmp_path, no_unpickling):
    marker = tmp_path / "PWNED"
    gen = generation_folder(copy)
    path, manifest = _manifest(copy)
    entry = manifest["tables"]["chunks"]
    if "parts" in entry:
        target = gen / "chunks" / entry["parts"][0]["file"]
        target.write_bytes(pickle.dumps(_Boom(marker)))
        entry["parts"][0]["sha256"] = _sha(target)
    else:
        target = gen / entry["file"]
        target.write_bytes(pickle.dumps(_Boom(marker)))
        entry["sha256"] = _sha(target)
    path.write_text(json.dumps(manifest))
    with no_unpickling() as events, pytest.raises(StorageError, match="cannot be read as Parquet"):
        open_knowledge_base(copy)
    assert events == [] and not marker.exists()


# ------------------------------------------------------------------ hostile ids
HOSTILE_IDS = ["../../evil", "/etc/passwd", "a/../../b", "CON", "..", ".", "a\x00b", "nul", "C:\\evil",
               "..\\..\\evil", "x" * 5000, "chunks", "manifest.json", "CURRENT", "../generations/g999999/CURRENT",
               "%2e%2e%2fevil", "a:b%3Ac", "\u202eevil.md", "~/.ssh/id_rsa"]
# every name a saved folder may hold (format 1 single files or format 2 part folders; leases while saving)
ALLOWED = re.compile(r"^(CURRENT|switch|lease|lease\.guard|communities\.lease|communities\.lease\.guard|generations"
                     r"|generations/g\d{6,}|generations/g\d{6,}/manifest\.json"
                     rf"|generations/g\d{{6,}}/({'|'.join(SCHEMAS)})(\.parquet|/part-\d{{5}}\.parquet)?"
                     # saved indexes: names from the code (crux_nb.store.indexes), never from data
                     r"|generations/g\d{6,}/indexes(/[a-z][a-z0-9_]*(/[a-z][a-z0-9_]*(/part-\d{5}\.parquet)?)?)?)$")


def walk(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_hostile_source_ids_never_become_file_names(tmp_path):
    base = tmp_path / "outer" / "inner"
    base.mkdir(parents=True)
    (tmp_path / "outer" / "keep.txt").write_text("untouched")
    before = walk(tmp_path)
    kb = crux_nb.knowledge_base(id="../../kb-id", communities=crux_nb.communities(model=OfflineModel()))
    accepted, rejected = [], []
    for sid in HOSTILE_IDS:
        try:
            kb.add_text(sid, f"# {sid[:40]}\n\nPriya Raman reviewed the Ingest Gateway with Marcus Chen.",
                        metadata={"path": sid[:200]})
            accepted.append(sid)
        except InputError:
            rejected.append(sid)
    frame_ids = ["../frame/../../x", "/tmp/frame-evil"]
    kb.add_frame(pd.DataFrame({"id": frame_ids, "text": ["Daniel Kim owns the Query Engine."] * 2}))
    accepted += frame_ids
    assert "a\x00b" in rejected or "a\x00b" in accepted  # either is fine; NUL must not reach a file name
    assert len(accepted) >= len(HOSTILE_IDS) - 3
    kb.communities.prepare(progress=False)
    target = base / "kb"
    kb.save(target)
    kb.save(target)  # a second generation too

    after = walk(tmp_path)
    new = after - before
    outside = sorted(p for p in new if not p.startswith(str(target.relative_to(tmp_path))))
    assert outside == [], outside
    assert (tmp_path / "outer" / "keep.txt").read_text() == "untouched"
    names = walk(target)
    assert names and all(ALLOWED.match(n) for n in names), sorted(n for n in names if not ALLOWED.match(n))
    for name in names:
        assert "\x00" not in name and ".." not in Path(name).parts
    assert not (Path("/etc") / "passwd.parquet").exists()

    reopened = open_knowledge_base(target)
    assert sorted(reopened.documents["source_id"]) == sorted(accepted)
    assert_kb_equal(reopened, kb)
