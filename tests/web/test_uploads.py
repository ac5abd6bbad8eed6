"""The upload path counts bytes, not headers (issue 29, finding 6), on a real `rlcourse web`: a
chunked body (no Content-Length) far over the cap is refused having put no more than the cap on
disk; refused uploads count, and a student who keeps sending them is refused unread; a student's
kept uploads have a quota. Nothing here is graded."""
import http.client
import os
import threading
import time
from pathlib import Path

import pytest

from rlcourse.web.intake import MAX_BODY_BYTES, MAX_UPLOAD_BYTES, REFUSALS_ALLOWED
from webserver import DEMO, Server, copy_course, release, tokens_for

NOTEBOOK = DEMO / "alan" / "ps1" / "ps1.ipynb"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """ps1 released with a 1 MB history quota; the server's temporary files in a folder of its
    own (TMPDIR), so the test can see what it spools."""
    base = tmp_path_factory.mktemp("uploads")
    course = copy_course(base / "course", toml_extra="[web]\nhistory_megabytes = 1\n")
    class_dir, spool = base / "class", base / "spool"
    spool.mkdir()
    tokens = tokens_for(class_dir, ["ada", "eve", "mallory", "grace"])
    release(class_dir, "ps1")
    server = Server(course, class_dir, extra_env={"TMPDIR": str(spool)})
    yield server, tokens, spool
    server.stop()


def spooled_bytes(pid: int, folder: Path) -> int:
    """The bytes of the files the process `pid` holds open in `folder` (deleted ones included:
    Python's temporary files are unlinked as soon as they are made)."""
    total = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(str(folder)):
                total += os.stat(f"/proc/{pid}/fd/{fd}").st_size
        except OSError:
            continue
    return total


def send_chunked(url: str, token: str, file_bytes: int, outcome: dict) -> None:
    """POST a multipart upload of `file_bytes` with Transfer-Encoding: chunked (no
    Content-Length), 1 MB a chunk; `outcome` gets the status, or the error the sender met."""
    boundary = "rlcourse-test-boundary"
    host, port = url.removeprefix("http://").split(":")

    def body():
        yield (f"--{boundary}\r\nContent-Disposition: form-data; name=\"assignment\"\r\n\r\nps1\r\n"
               f"--{boundary}\r\nContent-Disposition: form-data; name=\"notebook\"; filename=\"ps1.ipynb\"\r\n"
               "Content-Type: application/octet-stream\r\n\r\n").encode()
        chunk = b"x" * (1 << 20)
        for _ in range(file_bytes >> 20):
            yield chunk
        yield f"\r\n--{boundary}--\r\n".encode()

    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    try:
        connection.request("POST", "/api/submissions", body=body(), encode_chunked=True, headers={
            "Authorization": f"Bearer {token}", "Transfer-Encoding": "chunked",
            "Content-Type": f"multipart/form-data; boundary={boundary}"})
        outcome["status"] = connection.getresponse().status
    except OSError as error:  # the service stopped reading past what it drains
        outcome["error"] = repr(error)
    finally:
        connection.close()


@pytest.mark.hostile("chunked-upload-past-the-cap")
def test_a_chunked_400_mb_upload_is_refused_having_spooled_no_more_than_the_cap(served):
    """Is a 400 MB file part sent chunked refused, with at most the cap of it ever on the
    service's disk, and the service still up?"""
    server, tokens, spool = served
    outcome, peak = {}, 0
    sender = threading.Thread(target=send_chunked, args=(server.url, tokens["mallory"], 400 << 20, outcome))
    started = time.monotonic()
    sender.start()
    while sender.is_alive():
        peak = max(peak, spooled_bytes(server.process.pid, spool))
        time.sleep(0.005)
    sender.join()
    assert outcome.get("status", 413) == 413, outcome
    print(f"spooled at most {peak / 2**20:.1f} MB; {outcome}; {time.monotonic() - started:.1f} s")
    assert 1 << 20 < peak <= MAX_BODY_BYTES, f"{peak / 2**20:.1f} MB spooled"  # seen, and capped
    assert time.monotonic() - started < 60
    assert server.api("/api/whoami", tokens["mallory"])[0] == 200
    assert not (server.class_dir / "web" / "history").exists()


@pytest.mark.hostile("oversized-upload-flood")
def test_refused_uploads_count_and_a_student_who_sends_many_is_refused_unread(served, tmp_path):
    """After REFUSALS_ALLOWED refusals (oversized files and files that are not notebooks), is
    the student's next upload, a good notebook, refused before it is read, saying until when,
    while another student is not?"""
    server, tokens, _ = served
    junk, big = tmp_path / "ps1.ipynb", tmp_path / "big" / "ps1.ipynb"
    junk.write_text("not a notebook")
    big.parent.mkdir()
    big.write_bytes(b" " * (MAX_UPLOAD_BYTES + 200_000))
    statuses = [server.upload(tokens["eve"], big if attempt < 3 else junk)[0] for attempt in range(REFUSALS_ALLOWED)]
    assert statuses == [413] * 3 + [422] * (REFUSALS_ALLOWED - 3)
    status, body, _ = server.upload(tokens["eve"], NOTEBOOK)
    assert status == 429, body
    assert f"{REFUSALS_ALLOWED} of your uploads were refused in the last 60 min" in body["error"]
    assert "takes no upload from you until 20" in body["error"]
    assert server.upload(tokens["grace"], junk)[0] == 422  # another student: read, and refused for what it is
    assert server.api("/api/submissions", tokens["eve"])[1] == []


@pytest.mark.hostile("fills-the-history-folder")
def test_the_history_quota_refuses_an_upload_with_a_clear_message(served):
    """With 1 MB allowed and nearly all of it kept already, is the next upload refused, saying
    how much is kept and what to do, and nothing stored?"""
    server, tokens, _ = served
    kept = server.class_dir / "web" / "history" / "ada" / "ps1" / "20260101T000000000000-0000"
    kept.mkdir(parents=True)
    (kept / "ps1.ipynb").write_bytes(b" " * ((1 << 20) - NOTEBOOK.stat().st_size // 2))
    status, body, _ = server.upload(tokens["ada"], NOTEBOOK)
    assert status == 413, body
    assert "your uploads of ps1 kept by the service take 1.0 MB of the 1 MB each student may keep" in body["error"]
    assert "ps1.ipynb" in body["error"] and "ask the course staff to remove old uploads" in body["error"]
    assert sorted(path.name for path in kept.parent.iterdir()) == [kept.name]
    assert server.api("/api/submissions", tokens["ada"])[1] == []
