"""The public data sets the cross-encoder learns from, read from git mirrors at pinned commits.

Each source is a repository at a commit and the files used, with their sha256 and licence
(manifest.json). `read(mirror, source)` checks every file against the manifest before a row is
read: a moved commit or a changed file is an error, never silently other data.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

MANIFEST = Path(__file__).with_name("manifest.json")


@dataclass(frozen=True)
class Source:
    name: str
    repo: str
    commit: str
    licence: str
    files: dict[str, str]  # path -> sha256


def sources() -> list[Source]:
    raw = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return [Source(s["name"], s["repo"], s["commit"], s["licence"], s["files"]) for s in raw["sources"]]


def mirror_dir(mirrors: Path, repo: str) -> Path:
    """Where `fetch` puts a repository: <mirrors>/<owner>+<name>/repo, a bare git directory or,
    for some repositories, a work tree with its .git inside."""
    path = mirrors / repo.replace("/", "+") / "repo"
    return path / ".git" if (path / ".git").is_dir() else path


def read_file(mirrors: Path, source: Source, path: str) -> bytes:
    git_dir = mirror_dir(mirrors, source.repo)
    data = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{source.commit}:{path}"],
                          check=True, capture_output=True).stdout
    digest = hashlib.sha256(data).hexdigest()
    if digest != source.files[path]:
        raise ValueError(f"{source.repo}@{source.commit}:{path} has sha256 {digest}, "
                         f"the manifest says {source.files[path]}")
    return data
