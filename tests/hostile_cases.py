"""A pytest plugin that lists the hostile bank's marked cases without running them: each test
marked `@pytest.mark.hostile("case")`, as collected, written as JSON lines {"case", "nodeid"} to
the file $RLCOURSE_HOSTILE_CASES (tests/test_hostile_bank.py loads it with `-p hostile_cases`)."""
import json
import os


def pytest_collection_modifyitems(session, config, items):
    with open(os.environ["RLCOURSE_HOSTILE_CASES"], "w") as out:
        for item in items:
            for marker in item.iter_markers("hostile"):
                out.write(json.dumps({"case": marker.args[0] if marker.args else None,
                                      "nodeid": item.nodeid}) + "\n")
