import pytest

from offline.clinic_cases import small_clinic


@pytest.fixture(scope="module")
def clinic():
    """The small clinic task of :mod:`clinic_cases` and its logged episodes."""
    return small_clinic()
