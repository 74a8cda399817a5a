"""Attack 9 (exec API edges): a string argv ran its first character; timeouts of 0 or -1 still
started the command; NaN, inf or None timeouts gave opaque errors and could leave the command
running; the two providers treated non-string argv and env values differently.

Now one shared check (``rsigym.sandbox.base.validate_exec_args``) refuses each with the same
exception and message on both providers, before anything starts.
"""

from __future__ import annotations

import math

import pytest

from rsigym.errors import SandboxError
from rsigym.sandbox import LocalSandbox

from .conftest import LIMITS

# Each would leave the file `started` in the work dir if the command ran at all.
TOUCH = ["sh", "-c", "touch started"]
BAD_CALLS = {
    "string_argv": (dict(argv="touch started"), TypeError),
    "bytes_argv": (dict(argv=b"touch started"), TypeError),
    "empty_argv": (dict(argv=[]), ValueError),
    "non_str_argv_item": (dict(argv=["sh", "-c", 1]), TypeError),
    "nul_in_argv": (dict(argv=["sh", "-c", "touch started\x00"]), ValueError),
    "timeout_zero": (dict(timeout=0), ValueError),
    "timeout_negative": (dict(timeout=-1), ValueError),
    "timeout_nan": (dict(timeout=math.nan), ValueError),
    "timeout_inf": (dict(timeout=math.inf), ValueError),
    "timeout_none": (dict(timeout=None), TypeError),
    "timeout_str": (dict(timeout="5"), TypeError),
    "timeout_bool": (dict(timeout=True), TypeError),
    "env_int_value": (dict(env={"K": 1}), TypeError),
    "env_int_key": (dict(env={1: "v"}), TypeError),
    "env_not_a_mapping": (dict(env=[("K", "v")]), TypeError),
    "env_key_with_equals": (dict(env={"A=B": "v"}), ValueError),
    "unknown_identity": (dict(as_user="root"), ValueError),
    "stdin_int": (dict(stdin=5), TypeError),
}


def call(sb, overrides):
    kwargs = {"argv": TOUCH, **overrides}
    return sb.exec(kwargs.pop("argv"), **kwargs)


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_bad_exec_arguments_are_refused_before_anything_starts(any_sandbox, name):
    overrides, error = BAD_CALLS[name]
    with pytest.raises(error):
        call(any_sandbox, overrides)
    with pytest.raises(SandboxError, match="no such file"):
        any_sandbox.read_file("started")


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
@pytest.mark.docker
def test_both_providers_refuse_bad_arguments_with_the_same_error(name, own_sandbox):
    overrides, _ = BAD_CALLS[name]
    with LocalSandbox(LIMITS) as local:
        errors = []
        for sb in (local, own_sandbox):
            with pytest.raises((TypeError, ValueError)) as caught:
                call(sb, overrides)
            errors.append((type(caught.value), str(caught.value)))
    assert errors[0] == errors[1]


def test_a_good_call_still_runs(any_sandbox):
    assert any_sandbox.exec(("sh", "-c", "touch started"), timeout=5, env={"K": "v"}).ok
    assert any_sandbox.read_file("started") == b""
