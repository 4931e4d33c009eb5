"""A small stand-in for the `expecttest` package (Debian 12 does not ship
it), enough for torch's test utilities to import and for the cases
tests/torch/test_upstream.py runs: ``TestCase`` with ``assertExpectedInline``
and ``assertExpectedRaisesInline`` comparing against the inline expectation
(no accept mode, no rewriting of test files)."""

import textwrap
import unittest

#: Whether expectations are rewritten (never, here).
ACCEPT = False


def _normalize(s: str) -> str:
    return textwrap.dedent(s).strip()


class TestCase(unittest.TestCase):
    longMessage = True

    def assertExpectedInline(self, actual: str, expect: str, skip: int = 0) -> None:  # noqa: N802 - upstream name
        self.assertEqual(_normalize(expect), _normalize(actual))

    def assertExpectedRaisesInline(self, exc_type, callable_, expect: str, *args, **kwargs) -> None:  # noqa: N802
        try:
            callable_(*args, **kwargs)
        except exc_type as e:
            self.assertExpectedInline(str(e), expect)
            return
        self.fail(f"did not raise {exc_type.__name__}")
