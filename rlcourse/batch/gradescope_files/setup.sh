#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image: it installs the
# pinned environment rlcourse grades with (Python 3.11, the course's constraints.txt, torch's
# CPU wheel, bubblewrap) and fills JAX's compilation cache with the reference solution's programs.
#
#   SETUP_TARGET     where the virtual environment goes (default: /autograder/venv, which
#                    run_autograder uses); CI installs into a fresh one to check nothing is missing
#   TORCH_INDEX_URL  the index of torch's CPU wheels (default: PyTorch's); empty: pip's own
#                    configuration must provide torch==2.13.0 (a machine with a local wheel)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
target="${SETUP_TARGET:-/autograder/venv}"
torch_index="${TORCH_INDEX_URL-https://download.pytorch.org/whl/cpu}"
assignment="{{ assignment }}"

# System packages: Python 3.11 and its venv module, and bubblewrap for the workers' sandbox.
need=()
command -v python3.11 >/dev/null || need+=(python3.11 python3.11-venv)
command -v bwrap >/dev/null || need+=(bubblewrap)
if [ ${#need[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    if ! apt-get install -y -qq "${need[@]}"; then
        # Ubuntu 24.04 has no python3.11 of its own: the deadsnakes archive builds it.
        apt-get install -y -qq software-properties-common
        add-apt-repository -y ppa:deadsnakes/ppa
        apt-get update -qq
        apt-get install -y -qq "${need[@]}"
    fi
fi

# The environment: the engine from this folder, every dependency pinned by constraints.txt.
python3.11 -m venv "$target"
"$target/bin/python" -m pip install --quiet --upgrade "pip==26.3"
index_options=()
if [ -n "$torch_index" ]; then
    index_options=(--extra-index-url "$torch_index")
fi
"$target/bin/python" -m pip install --quiet "${index_options[@]}" \
    --constraint "$here/constraints.txt" "$here"

# The graders, the oracle and solutions and the instructor's notebook: root's alone (owned by a
# uid no process runs as, 0700/0600). The grading process, root, reads them through its
# capabilities; workers keep none, and where bubblewrap cannot start they run as nobody, or as
# uid 0 where nobody cannot start Python (rlcourse.worker.privileges): not the owner either way.
"$target/bin/python" -m rlcourse.batch.gradescope lock "$assignment" --course "$here"
# Workers drop to nobody only if nobody can start this environment's Python.
chmod go+rx "$target"
if command -v setpriv >/dev/null && ! setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$target/bin/python" -I -c "import numpy" >/dev/null 2>&1; then
    echo "rlcourse: WARNING: user nobody cannot start $target/bin/python: where bubblewrap cannot" \
         "run, workers would keep uid 0 (without capabilities) and the grader's other files;" \
         "make $target and its parents readable by all" >&2
fi

# Compile the reference once here, so that no upload pays for it (the cache stays read-only
# to students' workers).
"$target/bin/python" -m rlcourse.batch.gradescope warm "$assignment" --course "$here"
echo "rlcourse: autograder for $assignment installed in $target"
