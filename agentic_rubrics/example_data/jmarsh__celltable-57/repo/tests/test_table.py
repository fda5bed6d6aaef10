from celltable import Table, render_table


def test_box_table():
    t = Table(["Name", "Qty"], align="lr")
    t.add_row(["apples", 3]).add_row(["kiwi", 12])
    assert t.render() == (
        "┌────────┬─────┐\n"
        "│ Name   │ Qty │\n"
        "├────────┼─────┤\n"
        "│ apples │   3 │\n"
        "│ kiwi   │  12 │\n"
        "└────────┴─────┘"
    )


def test_markdown_table():
    out = render_table([["a", 1.5]], ["key", "value"], style="markdown")
    assert out == "| key | value |\n|-----|-------|\n| a   | 1.5   |"


def test_truncate_overflow():
    t = Table(["Text"], max_width=6, style="ascii")
    t.add_row(["abcdefghij"])
    assert "| abcde… |" in t.render()


def test_cjk_alignment():
    t = Table(["City"], style="ascii").add_row(["東京"]).add_row(["Oslo"])
    lines = t.render().splitlines()
    assert lines[3] == "| 東京 |"
    assert lines[4] == "| Oslo |"
