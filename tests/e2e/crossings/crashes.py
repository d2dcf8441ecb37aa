"""No generated case may crash microbatch or libhdf5: every run of the crossings goes through `checked`,
which fails the example on either crash report (docs/behavior.md: exit 4 for a defect of microbatch, and the
message about the input for a crash inside libhdf5)."""
import functools

CRASH_WORDS = ("crashed (", "crashed reading this", "a defect of microbatch")


def assert_no_crash(res):
    assert res.code != 4 and not any(w in res.err for w in CRASH_WORDS), f"a crash:\n{res}"
    return res


def checked(launch):
    """`launch` (conftest's run or held_run, or a helper returning a Result), with assert_no_crash on its result."""
    @functools.wraps(launch)
    def wrapper(*args, **kwargs):
        return assert_no_crash(launch(*args, **kwargs))
    return wrapper
