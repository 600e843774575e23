"""The embedded Unity Catalog server's Java classpath, resolved with Maven on first use.

Why Maven and a vendored build: the open-source server is not published on Maven Central (only its
clients are), so its sources ship in ``uc_server_source/`` (v0.6.0, see AIR_CHANGES.md there) and
``mvn install`` builds them into the user's Maven repository (setting ``maven_repo``), fetching
the ~260 dependency jars from Maven Central once. The resulting classpath is cached in
``<state>/classpath.json`` with the digest of the sources and the repository it points into, so a
later start runs no Maven at all; a classpath whose jars were deleted is resolved again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .. import settings
from ..errors import MavenError
from ..io.atomic import write_atomic

__all__ = ["SERVER_ARTIFACT", "SOURCE_DIR", "Classpath", "server_classpath", "source_digest"]

SOURCE_DIR = Path(__file__).resolve().parent / "uc_server_source"
SERVER_ARTIFACT = "io.unitycatalog:unitycatalog-server:0.6.0-air"
MAIN_CLASS = "io.unitycatalog.server.UnityCatalogServer"
_RESOLVE_TIMEOUT = 1800.0  # a first resolve downloads ~240 MB; a slow mirror needs minutes
_LOG_TAIL = 3


@dataclass(frozen=True)
class Classpath:
    """The jars a ``java -cp`` needs, and how they were had: ``resolved_s`` is the seconds Maven ran
    for this call (0.0 when the cached classpath was still whole)."""

    jars: tuple[str, ...]
    resolved_s: float

    def argument(self) -> str:
        """The ``-cp`` argument."""
        return os.pathsep.join(self.jars)


def source_digest(source: Path = SOURCE_DIR) -> str:
    """sha256 over the build's files (names and bytes), so an upgraded package rebuilds the server."""
    h = hashlib.sha256()
    for path in sorted(p for p in source.rglob("*") if p.is_file() and "target" not in p.relative_to(source).parts):
        h.update(str(path.relative_to(source)).encode() + b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


def _server_jar(repo: Path) -> Path:
    group, artifact, version = SERVER_ARTIFACT.split(":")
    return repo.joinpath(*group.split("."), artifact, version, f"{artifact}-{version}.jar")


def _cached(cache: Path, digest: str, repo: Path) -> tuple[str, ...] | None:
    try:
        doc = json.loads(cache.read_text())
    except (OSError, ValueError):
        return None
    jars = tuple(doc.get("classpath") or ())
    if doc.get("digest") != digest or doc.get("repo") != str(repo) or not jars:
        return None
    return jars if all(os.path.exists(j) for j in jars) else None


def _tools() -> tuple[str, str]:
    mvn, java = shutil.which("mvn"), shutil.which("java")
    if not mvn:
        raise MavenError(
            f"cannot build {SERVER_ARTIFACT}: no `mvn` on PATH; install Maven 3.8+ (apt-get install maven) and retry"
        )
    if not java:
        raise MavenError(f"cannot build {SERVER_ARTIFACT}: no `java` on PATH; install Java 17+ and retry")
    return mvn, java


def _failure(log: Path) -> str:
    """The first lines of Maven's own explanation in *log* (its ``[ERROR]`` lines), on one line."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return "no log"
    errors = [ln.removeprefix("[ERROR]").strip() for ln in lines if ln.startswith("[ERROR]")]
    return "; ".join(e for e in errors if e)[:400] or (lines[-1].strip() if lines else "no output")


def server_classpath(state_dir: Path, *, repo: Path | None = None) -> Classpath:
    """The embedded server's classpath, built and resolved into *repo* (default: the ``maven_repo``
    setting) on first use and cached under *state_dir*. Raises :class:`MavenError` naming the
    artifact and the fix when Maven or Java is missing or the build fails (its log:
    ``<state_dir>/maven.log``)."""
    repo = Path(repo or settings.maven_repo()).expanduser().resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    cache = state_dir / "classpath.json"
    digest = source_digest()
    if jars := _cached(cache, digest, repo):
        return Classpath(jars, 0.0)
    mvn, _ = _tools()
    jar = _server_jar(repo)
    stamp = jar.with_suffix(".air-digest")
    built = jar.exists() and stamp.exists() and stamp.read_text().strip() == digest
    goals = ["dependency:build-classpath"] if built else ["install", "dependency:build-classpath"]
    listing, log = state_dir / "classpath.txt", state_dir / "maven.log"
    cmd = [
        mvn,
        "-B",
        f"-Dmaven.repo.local={repo}",
        f"-Dair.build.dir={state_dir / 'build'}",
        "-DskipTests",
        f"-Dmdep.outputFile={listing}",
        "-Dmdep.includeScope=runtime",
        "-f",
        str(SOURCE_DIR / "pom.xml"),
        *goals,
    ]
    t0 = time.monotonic()
    try:
        with open(log, "wb") as out:
            done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=_RESOLVE_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise MavenError(
            f"building {SERVER_ARTIFACT} took over {_RESOLVE_TIMEOUT:.0f} s; check that Maven Central is reachable "
            f"(log: {log}) and retry"
        ) from None
    if done.returncode != 0:
        raise MavenError(
            f"cannot build {SERVER_ARTIFACT} into {repo}: {_failure(log)}; fix that (log: {log}, "
            "`maven_repo` setting for another repository) and retry"
        )
    jars = (str(jar), *(j for j in listing.read_text().strip().split(os.pathsep) if j))
    write_atomic(stamp, digest)
    write_atomic(cache, json.dumps({"digest": digest, "repo": str(repo), "classpath": jars}))
    return Classpath(jars, time.monotonic() - t0)
