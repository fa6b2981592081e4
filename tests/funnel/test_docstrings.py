"""The examples in the docstrings of the funnel and gain modules run."""

import doctest

import pytest

import zcl_assets.experience_gain.gain
import zcl_assets.funnel.exploration


@pytest.mark.parametrize("module", [zcl_assets.funnel.exploration, zcl_assets.experience_gain.gain])
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
