"""The two Hypothesis profiles of the generated crossings, chosen by MB_CROSSINGS.

ci (default): derandomized, a bounded number of examples per property, and the committed example database
read only, so that a failure a long run found (and that was committed) is replayed by every CI run.
Hypothesis refuses `derandomize=True` beside a database (it implies database=None), so CI derandomizes by a
fixed seed per property (`hypothesis.seed`, from the property's name, applied before the settings, since it
too drops the database): the same examples on every run, after the database's.
long: random, many examples, the same database written, so that what it finds is kept.

Usage from a test module:
    from crossings.profiles import settings_for
    @settings_for("rows_split_matches_model")  # or settings_for("x", ci=20, long=2000)
    @given(...)             # settings_for returns a decorator: it goes above @given
    def test_...(...): ...
"""
import hashlib
import os

from hypothesis import HealthCheck, seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase

EXAMPLES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "examples")

# Per-property examples: CI keeps the whole file within its time budget; long runs search far wider.
# The counts live here, not on the tests: Hypothesis keys the database by the test's source (decorators
# included), so a count changed on the test would orphan the examples stored for it.
CI_EXAMPLES = 12
LONG_EXAMPLES = 1500
CI_EXAMPLES_BY_PROPERTY = {
    'rows_split_matches_model': 120,
    'packed_split_matches_model': 120,
    'files_alone_merge_back': 40,
    'bytes_do_not_depend_on_jobs': 40,
    'reducers_match_numpy': 120,
    'refusals_are_documented': 120,
}

_SUPPRESSED = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
               HealthCheck.function_scoped_fixture]


def profile_name():
    name = os.environ.get("MB_CROSSINGS", "ci")
    if name not in ("ci", "long"):
        raise ValueError(f"MB_CROSSINGS={name!r}: expected 'ci' or 'long'")
    return name


def database():
    os.makedirs(EXAMPLES_DIR, exist_ok=True)
    db = DirectoryBasedExampleDatabase(EXAMPLES_DIR)
    return db if profile_name() == "long" else ReadOnlyDatabase(db)


def ci_scale():
    """MB_CROSSINGS_CI_SCALE (default 1) times every CI count: the sanitizer build's ctest, whose binary is
    several times slower, runs a share of the examples (tests/CMakeLists.txt)."""
    return float(os.environ.get("MB_CROSSINGS_CI_SCALE", "1"))


def settings_for(name, ci=None, long=LONG_EXAMPLES, **extra):
    """A decorator (above @given) that gives one property the active profile's settings: `ci` / `long`
    examples (`ci` defaults to CI_EXAMPLES_BY_PROPERTY[name], else CI_EXAMPLES), and in ci a fixed seed from
    `name`. `extra` overrides any setting."""
    long_run = profile_name() == "long"
    if ci is None:
        ci = CI_EXAMPLES_BY_PROPERTY.get(name, CI_EXAMPLES)
    ci = max(1, round(ci * ci_scale()))
    kwargs = dict(
        max_examples=long if long_run else ci,
        deadline=None,
        database=database(),
        suppress_health_check=_SUPPRESSED,
        print_blob=True,
        report_multiple_bugs=True,   # CI reports every distinct failure a property finds
    )
    kwargs.update(extra)
    chosen = settings(**kwargs)

    def apply(test):
        # hypothesis.seed also sets database=None; the settings applied after it put the database back
        if not long_run:
            test = seed(int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big"))(test)
        return chosen(test)
    return apply
