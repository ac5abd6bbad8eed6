"""The documentation site builds as `make docs` builds it: `mkdocs build --strict`, which fails on
a broken link or anchor, a page missing from the nav, or an undocumented option (the reference
hook). Every page of mkdocs.yml's nav, the generated ones included, is in the site."""
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).parent / "mkdocs"


def nav_pages(nav) -> list[str]:
    pages = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += nav_pages(value) if isinstance(value, list) else [value]
    return pages


class IgnoreTags(yaml.SafeLoader):
    """mkdocs.yml may use MkDocs' own tags (!ENV, !relative); none matter for its nav."""


IgnoreTags.add_multi_constructor("!", lambda loader, suffix, node: None)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([str(MKDOCS), "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return out, done.stderr


@pytest.mark.slow
def test_the_strict_build_passes_and_warns_of_nothing(site):
    _, log = site
    assert not re.search(r"^(WARNING|ERROR)", log, flags=re.MULTILINE), log


@pytest.mark.slow
def test_every_page_of_the_nav_is_in_the_site(site):
    out, _ = site
    nav = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=IgnoreTags)["nav"]
    pages = nav_pages(nav)
    assert "reference/cli.md" in pages and "threat-model.md" in pages
    for page in pages:
        folder = page.removesuffix("index.md") if page.endswith("index.md") else page.removesuffix(".md") + "/"
        html = out / folder / "index.html"
        assert html.is_file(), page


@pytest.mark.slow
def test_the_generated_pages_are_built_from_the_code(site):
    out, _ = site
    cli = (out / "reference" / "cli" / "index.html").read_text()
    assert "rlcourse autograde" in cli and "--no-similarity" in cli
    toml = (out / "reference" / "assignment-toml" / "index.html").read_text()
    assert "submission_seconds" in toml and "history_megabytes" in toml
    assert not (out / "hooks").exists()  # the hook is the build's code, not a page
