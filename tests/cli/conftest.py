"""Fixtures of other rooms the commands are tested against: a real service and its database
(the keys commands), a person in every store (the contacts commands)."""

from tests.core.assembly.test_forget import zoe_everywhere  # noqa: F401
from tests.service.conftest import env  # noqa: F401
