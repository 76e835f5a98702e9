"""translator/tables.py: the bound every per-process table shares."""

from translator.tables import keep


def test_keep_stores_and_returns_the_value():
    table: dict = {}
    value = ("words", 1)
    assert keep(table, "line", value, 4) is value
    assert table == {"line": value}


def test_keep_empties_a_full_table_before_storing():
    table: dict = {}
    for i in range(4):
        keep(table, i, str(i), 4)
    assert len(table) == 4
    keep(table, 99, "new", 4)
    assert table == {99: "new"}  # emptied, then the new entry
    for i in range(10_000):
        keep(table, i, i, 4)
        assert len(table) <= 4


def test_keep_replaces_an_existing_key_without_growing():
    table = {"a": 1}
    keep(table, "a", 2, 2)
    assert table == {"a": 2}
