# rlcourse: `make demo` grades the bundled demo submissions; `make test` runs the whole suite.
# Both install the pinned environment into .venv first if it is missing or out of date.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# nbgrader starts alembic and jupyter by name, so the environment's bin/ must be on PATH.
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: install demo web-demo lint test test-install test-fast docs release claims benchmark clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt tests/web/hub-proxy/package-lock.json \
		jupyterlab-rlcourse/pyproject.toml jupyterlab-rlcourse/package-lock.json jupyterlab-rlcourse/src/index.ts
	@command -v bwrap >/dev/null || (apt-get update -qq && apt-get install -y -qq bubblewrap) \
		|| echo "bubblewrap could not be installed: workers will run with resource limits only"
	@command -v shellcheck >/dev/null || (apt-get update -qq && apt-get install -y -qq shellcheck) \
		|| echo "shellcheck could not be installed: the Gradescope scripts' check will fail"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip==26.3"
	$(BIN)/python -m pip install --quiet --constraint constraints.txt --editable ".[lint,hub,lti,test,docs]"
	@# JupyterHub's proxy, from npm at the versions of its lock file, for the real-hub test.
	@command -v npm >/dev/null || (apt-get update -qq && apt-get install -y -qq npm) \
		|| echo "npm could not be installed: tests/web/test_jupyterhub_real.py will be skipped"
	mkdir -p $(VENV)/hub-proxy
	cp tests/web/hub-proxy/package.json tests/web/hub-proxy/package-lock.json $(VENV)/hub-proxy/
	cd $(VENV)/hub-proxy && npm ci --no-audit --no-fund --loglevel=error \
		|| echo "configurable-http-proxy could not be installed: tests/web/test_jupyterhub_real.py will be skipped"
	@# JupyterLab's "Submit to rlcourse" button (jupyterlab-rlcourse/): its server extension into .venv,
	@# and its front end built from the lock file (npm ci, tsc, jupyter-builder) and linked into .venv.
	$(BIN)/python -m pip install --quiet --no-deps --editable jupyterlab-rlcourse
	rm -rf jupyterlab-rlcourse/jupyterlab_rlcourse/labextension
	cd jupyterlab-rlcourse && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build \
		&& $(CURDIR)/$(BIN)/jupyter-builder develop --overwrite . \
		|| echo "JupyterLab's Submit to rlcourse button could not be built: its browser test will be skipped"
	touch $@

demo: install
	$(BIN)/rlcourse demo

# The submission service on a fresh class of the demo's students (and a staff account), with
# their tokens printed: sign in at http://127.0.0.1:8000/, or submit a demo notebook with
# `rlcourse submit ps1 demo/submitted/alan/ps1/ps1.ipynb --server http://127.0.0.1:8000 --token T`.
WEB_DEMO := $(CURDIR)/.rlcourse-cache/web-demo
web-demo: install
	rm -rf $(WEB_DEMO)
	$(BIN)/rlcourse students tokens --course-dir $(WEB_DEMO) --staff prof \
		$(foreach student,ada grace alan barbara ken edsger linus,--student $(student))
	@# The service takes only assignments released to the class: their rows in its gradebook.
	cd $(WEB_DEMO) && for assignment in ps1 ps2 ps3; do \
		$(CURDIR)/$(BIN)/nbgrader db assignment add $$assignment --log-level=ERROR || exit 1; done
	$(BIN)/rlcourse web --course-dir $(WEB_DEMO)

# The stages import one way (import-linter's contracts in pyproject.toml; docs/architecture.md),
# and ruff finds no mistake. Seconds; `make test` runs it first.
lint: install
	$(BIN)/lint-imports
	$(BIN)/ruff check

# The suite on both cores: a test file per pytest-xdist process at a time (module fixtures, such
# as a bank graded in one batch, are paid once), then the `serial` tests alone: their limits or
# margins are of seconds and assume no other test beside them (the hostile batch's memory bomb).
# Both parts always run; the target fails if either did.
test: install lint
	$(BIN)/python -m pytest -m "not install and not serial" -n 2 --dist loadfile; parallel=$$?; \
	$(BIN)/python -m pytest -m "serial and not install"; serial=$$?; \
	test $$parallel -eq 0 && test $$serial -eq 0

# Installs that take minutes (the Gradescope image's setup.sh into a fresh venv): CI runs them
# after `make test`, so `make test` keeps its time budget.
test-install: install
	$(BIN)/python -m pytest -m install

test-fast: install
	$(BIN)/python -m pytest -m "not slow and not install" -n 2 --dist loadfile

# The documentation site (mkdocs.yml) into site/: --strict fails on a broken link, a page left
# out of the nav or an undocumented option or key (the reference pages are generated from the
# code by docs/hooks/reference.py). `make test` runs the same build (tests/docs/test_site.py).
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --clean --site-dir site

# Every assignment, as rlcourse finds them (Course.assignment_names: graders/<name>/assignment.toml),
# whatever its name: `rlcourse new hw1` makes one that a `source/ps*` pattern would miss.
ASSIGNMENTS := $(notdir $(patsubst %/assignment.toml,%,$(wildcard graders/*/assignment.toml)))

# Regenerate release/ from source/ with nbgrader (commit the result).
release: install
	for name in $(ASSIGNMENTS); do $(BIN)/nbgrader generate_assignment $$name --force || exit 1; done

# Rerun the experiments behind every sentence the notebooks state about them (claims/run.py), each
# assignment under two numerical configurations (as here, and on another floating-point path), in
# a process of its own, two at a time (one per core): prints every claim's margin under both and
# fails a claim that does not hold by its floor, or that the notebook no longer states. CI runs it.
claims: install
	$(BIN)/python claims/run.py --jobs 2

benchmark: install
	$(BIN)/python benchmarks/grade_throughput.py
	$(BIN)/python benchmarks/similarity.py

clean:
	rm -rf $(VENV) .rlcourse-cache gradebook.db
