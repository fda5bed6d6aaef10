import pytest

from pagewise import EmptyPage, PageNotAnInteger, Paginator


def test_basic_pages():
    paginator = Paginator(list(range(1, 26)), per_page=10)
    assert paginator.count == 25
    assert paginator.num_pages == 3
    assert list(paginator.page_range) == [1, 2, 3]
    assert list(paginator.page(3)) == [21, 22, 23, 24, 25]


def test_orphans_fold_into_previous_page():
    paginator = Paginator(range(1, 24), per_page=10, orphans=3)
    assert paginator.num_pages == 2
    last = paginator.page(2)
    assert last.start_index() == 11
    assert last.end_index() == 23
    assert len(last) == 13


def test_page_navigation():
    paginator = Paginator("abcdefg", per_page=3)
    page = paginator.page(2)
    assert page.has_next() and page.has_previous()
    assert page.next_page_number() == 3
    assert page.previous_page_number() == 1
    assert "".join(paginator.page(3)) == "g"


def test_invalid_numbers():
    paginator = Paginator(range(5), per_page=2)
    with pytest.raises(PageNotAnInteger):
        paginator.page("x")
    with pytest.raises(EmptyPage):
        paginator.page(0)
    with pytest.raises(EmptyPage):
        paginator.page(4)


def test_get_page_is_forgiving():
    paginator = Paginator(range(5), per_page=2)
    assert paginator.get_page("x").number == 1
    assert paginator.get_page(99).number == 3


def test_empty():
    assert Paginator([]).num_pages == 1
    assert list(Paginator([]).page(1)) == []
    assert Paginator([], allow_empty_first_page=False).num_pages == 0
