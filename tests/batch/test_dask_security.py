"""Dask, safely by default (rlcourse.batch.dask_security): the certificates `rlcourse dask certs`
writes, the addresses `--scheduler` refuses, and a real TLS cluster (a scheduler and a worker,
separate processes on the loopback, started with the commands docs/operators/dask.md gives) that grades a
class through rlcourse and runs nothing for a client without the cluster's certificate.

The attack each hostile case stands for: a bare `distributed.Client` (a student's JupyterHub
server on the same network) connects to the grading cluster and runs a function as the grader,
here one that writes a marker file (on the red team's cluster it read the course root, the
solutions and a hidden grader). The function does run for a client holding the certificate, so
a test that sees no marker has shown a refusal, not a function that could never run.
"""
import asyncio
import contextlib
import os
import ssl
import stat
import subprocess
import time

import pytest

from rlcourse.batch.dask_security import (Certificates, Scheduler, UnsafeScheduler, check_listeners,
                                          make_certificates)
from test_autograde import BIN, env, make_class, nbgrader_export, rlcourse
from test_backends import _free_port, _wait_for_workers


# --- the certificates -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certs") / "dask", hosts=["grader.example.edu"])


class TestMakeCertificates:
    def test_each_role_has_a_certificate_signed_by_the_ca_and_a_key_only_its_owner_reads(self, certificates):
        from cryptography import x509

        ca = x509.load_pem_x509_certificate(certificates.ca.read_bytes())
        assert stat.S_IMODE(certificates.folder.stat().st_mode) == 0o700
        for role in ("scheduler", "worker", "client"):
            certificate = x509.load_pem_x509_certificate(certificates.certificate(role).read_bytes())
            certificate.verify_directly_issued_by(ca)
            assert stat.S_IMODE(certificates.key(role).stat().st_mode) == 0o600
            names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            assert "grader.example.edu" in names.get_values_for_type(x509.DNSName)

    def test_the_cas_own_key_is_never_written(self, certificates):
        """No file of the set can sign a new certificate: a set is replaced as a whole."""
        keys = [path.name for path in certificates.folder.iterdir() if b"PRIVATE KEY" in path.read_bytes()]
        assert sorted(keys) == ["client-key.pem", "scheduler-key.pem", "worker-key.pem"]

    def test_an_existing_set_is_never_overwritten(self, certificates):
        before = certificates.key("client").read_bytes()
        with pytest.raises(FileExistsError, match="already exist"):
            make_certificates(certificates.folder)
        assert certificates.key("client").read_bytes() == before

    def test_the_command_writes_them_and_prints_how_to_start_the_cluster(self, tmp_path):
        result = subprocess.run([str(BIN / "rlcourse"), "dask", "certs", str(tmp_path / "certs"),
                                 "--host", "grader.example.edu"], capture_output=True, text=True,
                                env=env(), timeout=120)
        assert result.returncode == 0, result.stderr
        folder = tmp_path / "certs"
        assert "dask scheduler --protocol tls" in result.stdout
        assert f"--tls-cert {folder}/worker.pem" in result.stdout
        assert f"--scheduler tls://grader.example.edu:8786 --dask-certs {folder}" in result.stdout
        assert Certificates(folder).check("client")


# --- what --scheduler accepts -----------------------------------------------------------------------
class TestSchedulerChecked:
    @pytest.mark.parametrize("address", ["tcp://192.0.2.10:8786", "192.0.2.10:8786", "tcp://0.0.0.0:8786",
                                         "ws://192.0.2.10:8786", "tcp://[2001:db8::1]:8786"])
    def test_a_plain_address_beyond_the_loopback_is_refused(self, address):
        with pytest.raises(UnsafeScheduler, match="runs code as the grader"):
            Scheduler.checked(address)

    @pytest.mark.parametrize("address", ["tcp://127.0.0.1:8786", "tcp://localhost:8786", "tcp://[::1]:8786",
                                         "127.0.0.1:8786"])
    def test_a_plain_address_on_the_loopback_is_accepted(self, address):
        assert Scheduler.checked(address).plain

    def test_insecure_is_the_instructors_explicit_choice(self):
        scheduler = Scheduler.checked("tcp://192.0.2.10:8786", insecure=True)
        assert scheduler.arguments() == ["--scheduler", "tcp://192.0.2.10:8786", "--insecure"]

    def test_tls_needs_the_clients_certificate(self, certificates):
        with pytest.raises(UnsafeScheduler, match="--dask-certs"):
            Scheduler.checked("tls://192.0.2.10:8786")
        scheduler = Scheduler.checked("tls://192.0.2.10:8786", certificates=certificates.folder)
        assert not scheduler.plain
        assert scheduler.security().require_encryption

    def test_a_client_key_others_may_read_is_refused(self, tmp_path):
        certificates = make_certificates(tmp_path / "certs")
        certificates.key("client").chmod(0o644)
        with pytest.raises(UnsafeScheduler, match="chmod 600"):
            Scheduler.checked("tls://192.0.2.10:8786", certificates=certificates.folder)

    def test_certificates_with_a_plain_address_ask_for_tls(self, certificates):
        with pytest.raises(UnsafeScheduler, match="tls://"):
            Scheduler.checked("tcp://127.0.0.1:8786", certificates=certificates.folder)

    def test_an_unknown_protocol_is_refused(self):
        with pytest.raises(UnsafeScheduler):
            Scheduler.checked("inproc://192.0.2.10/1/2")


class TestWebGradingProcess:
    """`rlcourse web --scheduler` hands the scheduler to its grading process on the command line
    (rlcourse.web.job), which checks it again."""

    def test_the_scheduler_travels_whole(self, certificates):
        from rlcourse.web.job import scheduler_from

        for scheduler in (Scheduler.checked("tls://192.0.2.10:8786", certificates=certificates.folder),
                          Scheduler.checked("tcp://192.0.2.10:8786", insecure=True),
                          Scheduler.checked("tcp://127.0.0.1:8786")):
            assert scheduler_from(scheduler.arguments()) == scheduler
        assert scheduler_from([]) is None

    def test_a_plain_address_beyond_the_loopback_is_refused_there_too(self):
        from rlcourse.web.job import scheduler_from

        with pytest.raises(UnsafeScheduler):
            scheduler_from(["--scheduler", "tcp://192.0.2.10:8786"])


class TestCheckListeners:
    def test_a_plain_listener_on_every_interface_is_refused(self):
        """A worker started without --host advertises 127.0.0.1 and binds 0.0.0.0."""
        found = {"scheduler": ["tcp://127.0.0.1:8786"], "worker tcp://127.0.0.1:4000": ["tcp://0.0.0.0:4000"]}
        with pytest.raises(UnsafeScheduler, match=r"worker tcp://127.0.0.1:4000 on tcp://0.0.0.0:4000"):
            check_listeners(Scheduler.checked("tcp://127.0.0.1:8786"), found)

    def test_tls_listeners_anywhere_and_plain_ones_on_the_loopback_pass(self):
        found = {"scheduler": ["tls://0.0.0.0:8786"], "worker": ["tls://0.0.0.0:4000"],
                 "nanny": ["tcp://127.0.0.1:4001"]}
        check_listeners(Scheduler.checked("tcp://127.0.0.1:8786"), found)


@pytest.mark.hostile("dask-plain-scheduler-beyond-loopback")
def test_autograde_and_web_refuse_a_plain_scheduler_beyond_the_loopback_before_connecting(tmp_path):
    """The old documented setup (`dask scheduler` on every interface, `--scheduler tcp://HOST:8786`):
    refused at once with what to do, before a notebook could be sent (192.0.2.10 is a
    documentation address nothing answers: a connection attempt would hang, not fail)."""
    class_dir = make_class(tmp_path / "class", {"ada": "ada"})
    started = time.monotonic()
    for command in (["autograde", "ps1"], ["web"]):
        result = rlcourse(class_dir, *command, "--scheduler", "tcp://192.0.2.10:8786", check=False)
        assert result.returncode == 2, result.stderr
        assert "runs code as the grader" in result.stderr and "rlcourse dask certs" in result.stderr
    assert time.monotonic() - started < 60
    assert not (class_dir / "autograded").exists()


# --- a real TLS cluster -------------------------------------------------------------------------------
@contextlib.contextmanager
def tls_cluster(folder, certificates: Certificates, workers: int = 1):
    """A scheduler and workers as docs/operators/dask.md starts them on TLS (`Certificates.commands`), each a
    separate process, bound to the loopback for the test."""
    port = _free_port()
    address = f"tls://127.0.0.1:{port}"
    logs = folder / "dask-logs"
    logs.mkdir()

    def tls(role):
        return ["--tls-ca-file", str(certificates.ca), "--tls-cert", str(certificates.certificate(role)),
                "--tls-key", str(certificates.key(role))]

    processes = [subprocess.Popen([str(BIN / "dask"), "scheduler", "--protocol", "tls", "--host", "127.0.0.1",
                                   "--port", str(port), "--no-dashboard", *tls("scheduler")], env=env(),
                                  stdout=open(logs / "scheduler.txt", "w"), stderr=subprocess.STDOUT)]
    try:
        for index in range(workers):
            processes.append(subprocess.Popen(
                [str(BIN / "dask"), "worker", address, "--nthreads", "1", "--name", f"grader-{index}",
                 "--no-dashboard", *tls("worker")], env=env(),
                stdout=open(logs / f"worker-{index}.txt", "w"), stderr=subprocess.STDOUT))
        from distributed import Client

        with Client(address, security=certificates.security("client"), timeout="60s") as client:
            client.wait_for_workers(workers, timeout=120)
        yield address, logs
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, certificates):
    folder = tmp_path_factory.mktemp("tls-cluster")
    with tls_cluster(folder, certificates) as (address, logs):
        yield address, logs


def attackers_function():
    """The function an attacker sends: on the red team's cluster it read the course and the
    solutions; here it writes a marker. Made inside a function so that it travels by value, as
    an attacker's own code does (the workers cannot import this test module)."""
    def write_marker(path):
        with open(path, "w") as handle:
            handle.write(f"ran as uid {os.getuid()}\n")
        return "ran"

    return write_marker


def attack(address: str, marker, ssl_context=None, *, server: str = "worker") -> str:
    """Connect to one of the cluster's servers as a bare Dask client would (Dask's own comm and
    messages) and ask it to run the attacker's function (`run_function` of the scheduler, `run` of
    a worker or a nanny, which run it in their own process); returns how it ended."""
    from distributed.comm import connect
    from distributed.protocol.pickle import dumps

    async def run() -> str:
        extra = {"ssl_context": ssl_context} if ssl_context is not None else {}
        comm = await connect(address, timeout=5, **extra)
        try:
            await comm.write({"op": "run_function" if server == "scheduler" else "run", "function": dumps(attackers_function()),
                              "args": dumps((str(marker),)), "reply": True})
            return str(await comm.read())
        finally:
            await comm.close()

    try:
        return asyncio.run(run())
    except Exception as error:  # noqa: BLE001 - any refusal will do; the marker says what ran
        return f"refused: {type(error).__name__}: {error}"


def no_certificate():
    """A TLS client context as an attacker makes one: it trusts any server, presents nothing."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def client_context(certificates: Certificates):
    return certificates.security("client").get_connection_args("client")["ssl_context"]


@pytest.fixture(scope="module")
def servers(cluster, certificates) -> dict[str, str]:
    """Every port of the cluster: the scheduler's, and the worker's and its nanny's own."""
    from distributed import Client

    from rlcourse.batch.dask_security import listeners

    with Client(cluster[0], security=certificates.security("client"), timeout="30s") as client:
        found = listeners(client)
    ports = {server.split()[0]: address.replace("0.0.0.0", "127.0.0.1")
             for server, addresses in found.items() for address in addresses}
    assert set(ports) == {"scheduler", "worker", "nanny"} and ports["scheduler"] == cluster[0]
    return ports


@pytest.mark.slow
@pytest.mark.nbgrader
class TestTlsCluster:
    def test_rlcourse_grades_a_class_through_it_with_the_client_certificate(self, cluster, certificates, tmp_path):
        address, _ = cluster
        class_dir = make_class(tmp_path / "class", {"ada": "ada", "alan": "alan"})
        run = rlcourse(class_dir, "autograde", "ps1", "--scheduler", address,
                       "--dask-certs", certificates.folder)
        assert f"dask: grading on {address} (1 workers)" in run.stderr
        assert "plain TCP" not in run.stderr
        assert "2 graded" in run.stdout
        assert nbgrader_export(class_dir) == {"ada": 42.0, "alan": 34.0}

    @pytest.mark.parametrize("server", ["scheduler", "worker", "nanny"])
    def test_the_certificate_holder_runs_code_on_every_server(self, servers, certificates, tmp_path, server):
        """The control: the attack runs for a client holding the certificate, so the refusals
        below are the TLS layer's doing (the client key is the cluster's password)."""
        marker = tmp_path / "ran-as-grader"
        outcome = attack(servers[server], marker, client_context(certificates), server=server)
        assert marker.exists(), outcome

    @pytest.mark.hostile("dask-client-without-certificate")
    def test_a_tls_client_without_a_certificate_is_refused_by_every_server(self, cluster, servers, tmp_path):
        marker = tmp_path / "ran-as-grader"
        for server, address in servers.items():
            outcome = attack(address, marker, no_certificate(), server=server)
            assert outcome.startswith("refused") and not marker.exists(), (server, outcome)
        assert "TLS handshake failed" in (cluster[1] / "scheduler.txt").read_text()

    @pytest.mark.hostile("dask-client-with-another-ca")
    def test_a_client_with_a_certificate_of_its_own_ca_is_refused(self, servers, tmp_path):
        marker = tmp_path / "ran-as-grader"
        forged = client_context(make_certificates(tmp_path / "forged"))
        forged.check_hostname, forged.verify_mode = False, ssl.CERT_NONE  # it trusts any server
        for server, address in servers.items():
            outcome = attack(address, marker, forged, server=server)
            assert outcome.startswith("refused") and not marker.exists(), (server, outcome)

    @pytest.mark.hostile("dask-plain-client-to-tls-scheduler")
    def test_a_plain_client_is_refused(self, servers, tmp_path):
        marker = tmp_path / "ran-as-grader"
        for server, address in servers.items():
            outcome = attack(address.replace("tls://", "tcp://"), marker, server=server)
            assert outcome.startswith("refused") and not marker.exists(), (server, outcome)


@pytest.mark.slow
@pytest.mark.nbgrader
@pytest.mark.hostile("dask-worker-listening-in-clear")
def test_a_plain_cluster_whose_worker_listens_on_every_interface_is_refused(tmp_path):
    """`dask worker tcp://127.0.0.1:PORT` without --host binds 0.0.0.0 while advertising
    127.0.0.1: anyone who reaches its port runs code as the grader, whatever the scheduler's
    address. rlcourse asks where each server listens and refuses before sending a notebook."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    processes = [subprocess.Popen([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                   "--no-dashboard"], env=env(), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)]
    try:
        processes.append(subprocess.Popen([str(BIN / "dask"), "worker", address, "--nthreads", "1",
                                           "--no-dashboard"], env=env(), stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
        _wait_for_workers(address, 1)
        class_dir = make_class(tmp_path / "class", {"ada": "ada"})
        run = rlcourse(class_dir, "autograde", "ps1", "--scheduler", address, check=False)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "listens in clear beyond the loopback" in run.stderr and "0.0.0.0" in run.stderr
    assert not (class_dir / "autograded").exists()
