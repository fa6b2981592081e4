"""The examples in the docstrings of the report modules run and hold."""

import doctest

import pytest

from zcl_assets.reports import formatting, methods, text


@pytest.mark.parametrize("module", [methods, formatting, text], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
