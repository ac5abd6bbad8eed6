"""Notebook code shared by several hostile entries (not an entry: its name starts with "_").

FIND: the course and class directories this worker can discover, through the engine's location
and its own ancestor processes up to the grader (never other processes on the machine, so a
successful attack only ever touches the test's own copies).
READ: the text of graders/ps1/*.py and solutions/ps1/*.py wherever FIND found a course.
"""
FIND = r'''
import os as _os


def _hostile_ancestors():
    """(pid, argv, cwd) of this process's ancestors, up to the grader (never beyond it)."""
    found, pid = [], _os.getppid()
    while pid > 1 and len(found) < 4:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = [part.decode() for part in handle.read().split(b"\0") if part]
            cwd = _os.readlink(f"/proc/{pid}/cwd")
            with open(f"/proc/{pid}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        found.append((pid, argv, cwd))
        if "autograde" in argv or "grade" in argv:
            break  # the grader itself: stop here
        pid = parent
    return found


def _hostile_course_dirs():
    courses, classes = [], []
    try:
        import rlcourse
        courses.append(_os.path.dirname(_os.path.dirname(rlcourse.__file__)))
    except Exception:
        pass
    for _pid, argv, cwd in _hostile_ancestors():
        courses.append(cwd)
        if "--course-dir" in argv and argv.index("--course-dir") + 1 < len(argv):
            classes.append(argv[argv.index("--course-dir") + 1])
    return ([c for c in dict.fromkeys(courses) if _os.path.isdir(_os.path.join(c, "graders"))],
            list(dict.fromkeys(classes)))
'''

READ = r'''
import glob as _glob


def _hostile_read_hidden():
    texts = []
    for course in _hostile_course_dirs()[0]:
        for pattern in ("graders/ps1/*.py", "solutions/ps1/*.py"):
            for path in sorted(_glob.glob(_os.path.join(course, pattern))):
                try:
                    with open(path) as handle:
                        texts.append(f"=== {path}\n" + handle.read())
                except OSError as error:
                    texts.append(f"=== {path}: {error}")
    return "\n".join(texts) or "no hidden file found"
'''
