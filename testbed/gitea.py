"""A throw-away Gitea on loopback for the forge suite: SQLite, an admin user and token made by its
CLI, repositories and pull requests through its API (``/api/v1``, Gitea's API reference).

``Gitea.start(root)`` writes ``root/app.ini`` (HTTP on 127.0.0.1 only, no SSH, registration off,
Actions on, offline mode), runs ``gitea migrate``, ``gitea admin user create --admin`` and
``gitea admin user generate-access-token``, then ``gitea web`` and waits for ``/api/healthz``.
The binary and its run-time files (``options/``, ``templates/``: a build without ``bindata``
reads them from ``STATIC_ROOT_PATH``) come from the toolchain (``python3 dev.py toolchain
--forge``). ``stop()`` ends the one process it started.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed import toolchain

ADMIN = "forge-admin"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def app_ini(root: Path, port: int, share: Path) -> str:
    """Gitea's configuration for a loopback forge under ``root`` (Gitea's config cheat sheet)."""
    return f"""APP_NAME = llm-serving forge
RUN_MODE = prod
WORK_PATH = {root}

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = {port}
ROOT_URL = http://127.0.0.1:{port}/
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
STATIC_ROOT_PATH = {share}
APP_DATA_PATH = {root}/data

[database]
DB_TYPE = sqlite3
PATH = {root}/data/gitea.db

[repository]
ROOT = {root}/repos

[security]
INSTALL_LOCK = true
SECRET_KEY = {secrets.token_hex(32)}
INTERNAL_TOKEN = {secrets.token_hex(32)}

[oauth2]
JWT_SECRET = {base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")}

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = false

[actions]
ENABLED = true

[mailer]
ENABLED = false

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[cron]
ENABLED = false

[log]
MODE = file
LEVEL = Warn
ROOT_PATH = {root}/log
"""


@dataclass
class Gitea:
    root: Path
    port: int
    token: str
    proc: subprocess.Popen

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api(self) -> str:
        return f"{self.url}/api/v1"

    def clone_url(self, repo: str) -> str:
        """The repository's HTTP URL with the admin's token as password (git push/fetch)."""
        return f"http://{ADMIN}:{self.token}@127.0.0.1:{self.port}/{ADMIN}/{repo}.git"

    @classmethod
    def start(cls, root: Path, timeout: float = 120) -> Gitea:
        cache = toolchain.cache_dir()
        binary = cache / "bin" / "gitea"
        if not binary.exists():
            raise FileNotFoundError(f"{binary} is missing; run `python3 dev.py toolchain --forge`")
        root.mkdir(parents=True, exist_ok=True)
        port = free_port()
        ini = root / "app.ini"
        ini.write_text(app_ini(root, port, toolchain.gitea_share(cache)))
        env = {"HOME": str(root), "GITEA_WORK_DIR": str(root), "PATH": "/usr/local/bin:/usr/bin:/bin"}
        if os.getuid() == 0:  # Gitea refuses root unless told (modules/setting/setting.go); a test container runs as root
            env["GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT"] = "true"
        base = [str(binary), "--config", str(ini), "--work-path", str(root)]

        def cli(*args: str) -> str:
            proc = subprocess.run([*base, *args], env=env, capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:
                raise RuntimeError(f"gitea {' '.join(args[:3])} failed ({proc.returncode}): {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
            return proc.stdout

        cli("migrate")
        cli("admin", "user", "create", "--admin", "--username", ADMIN, "--password", secrets.token_hex(16),
            "--email", f"{ADMIN}@example.invalid", "--must-change-password=false")
        token = cli("admin", "user", "generate-access-token", "--username", ADMIN, "--token-name", "ci",
                    "--scopes", "all", "--raw").strip().splitlines()[-1]
        log = (root / "web.log").open("w")
        proc = subprocess.Popen([*base, "web"], env=env, stdout=log, stderr=subprocess.STDOUT)
        forge = cls(root, port, token, proc)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{forge.url}/api/healthz", timeout=5) as r:
                    if r.status == 200:
                        return forge
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                forge.stop()
                raise RuntimeError(f"gitea web did not answer on {forge.url} (exit {proc.poll()}): {(root / 'web.log').read_text()[-2000:]}")
            time.sleep(0.5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def call(self, method: str, path: str, body: Any = None, *, auth: bool = True) -> tuple[int, Any]:
        """One API call (``path`` under /api/v1, or a whole URL), with the admin's token unless
        ``auth`` is False; returns (HTTP status, the JSON body, the text, or None)."""
        url = path if path.startswith("http") else f"{self.api}{path}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
        if auth:
            req.add_header("Authorization", f"token {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as err:
            raw = err.read()
            try:
                return err.code, json.loads(raw) if raw else None
            except ValueError:
                return err.code, raw.decode(errors="replace")

    def create_repo(self, name: str) -> None:
        status, body = self.call("POST", "/user/repos", {"name": name, "default_branch": "main", "private": False})
        if status != 201:
            raise RuntimeError(f"creating {name}: {status} {body}")

    def wait_branch(self, repo: str, branch: str, timeout: float = 60) -> None:
        """Wait until the API knows ``branch`` (a push's branch reaches Gitea's database through
        its post-receive hook, after ``git push`` returns)."""
        deadline = time.monotonic() + timeout
        while (status := self.call("GET", f"/repos/{ADMIN}/{repo}/branches/{branch}")[0]) != 200:
            if time.monotonic() > deadline:
                raise RuntimeError(f"branch {branch} of {repo} not known to Gitea after {timeout:.0f} s (last status {status})")
            time.sleep(0.5)

    def open_pull(self, repo: str, head: str, base: str, title: str) -> int:
        for branch in (base, head):
            self.wait_branch(repo, branch)
        status, body = self.call("POST", f"/repos/{ADMIN}/{repo}/pulls", {"head": head, "base": base, "title": title})
        if status != 201:
            raise RuntimeError(f"opening {head} -> {base}: {status} {body}")
        return int(body["number"])

    def comments(self, repo: str, number: int) -> list[dict]:
        status, body = self.call("GET", f"/repos/{ADMIN}/{repo}/issues/{number}/comments")
        if status != 200:
            raise RuntimeError(f"listing comments: {status} {body}")
        return list(body)

    def comment(self, repo: str, number: int, text: str) -> None:
        status, body = self.call("POST", f"/repos/{ADMIN}/{repo}/issues/{number}/comments", {"body": text})
        if status != 201:
            raise RuntimeError(f"commenting: {status} {body}")
