"""KEDA's cron expressions read as robfig/cron v3.0.1's parser reads them (KEDA v2.20.2), on hand-made expressions."""

from __future__ import annotations

import pytest

from stacks.cron import CronError, schedule

EVERY_DAY = frozenset(range(1, 32))
EVERY_MONTH = frozenset(range(1, 13))
EVERY_WEEKDAY = frozenset(range(7))


def test_five_fields_each_read_with_whether_it_was_a_star() -> None:
    assert schedule("0 22 * * *") == (
        (frozenset({0}), False),
        (frozenset({22}), False),
        (EVERY_DAY, True),
        (EVERY_MONTH, True),
        (EVERY_WEEKDAY, True),
    )


@pytest.mark.parametrize(
    ("expression", "field", "expected"),
    [
        ("1,5,,10 * * * *", 0, (frozenset({1, 5, 10}), False)),
        ("*/15 * * * *", 0, (frozenset({0, 15, 30, 45}), False)),
        ("*/1 * * * *", 0, (frozenset(range(60)), True)),
        ("*/2 * * * *", 0, (frozenset(range(0, 60, 2)), False)),
        ("* * ? * *", 2, (EVERY_DAY, True)),
        ("*-5 * * * *", 0, (frozenset(range(60)), True)),
        ("10-20/5 * * * *", 0, (frozenset({10, 15, 20}), False)),
        ("5/20 * * * *", 0, (frozenset({5, 25, 45}), False)),
        ("+7 * * * *", 0, (frozenset({7}), False)),
        ("0 0 * JAN-mar *", 3, (frozenset({1, 2, 3}), False)),
        ("0 0 * dec *", 3, (frozenset({12}), False)),
        ("0 0 * * SUN,Sat", 4, (frozenset({0, 6}), False)),
        ("0 0 * * mon-fri", 4, (frozenset({1, 2, 3, 4, 5}), False)),
        ("0 0 31 * *", 2, (frozenset({31}), False)),
        ("0 0 1 * 6", 4, (frozenset({6}), False)),
        ("59 23 * * *", 1, (frozenset({23}), False)),
        ("*,5 * * * *", 0, (frozenset(range(60)), True)),
    ],
)
def test_each_form_of_a_field_matches_what_the_parser_matches(expression: str, field: int, expected: tuple[frozenset[int], bool]) -> None:
    assert schedule(expression)[field] == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("@daily", "is a descriptor, which KEDA's parser does not take; write the 5 fields, e.g. '0 0 * * *' for @daily"),
        ("TZ=UTC 0 0 * * *", "names a time zone in the expression; set the window's timezone instead"),
        ("CRON_TZ=UTC 0 0 * * *", "names a time zone in the expression; set the window's timezone instead"),
        ("0 0 * *", "has 4 fields; KEDA takes exactly 5 fields: minute hour day-of-month month day-of-week"),
        ("0 0 0 * * *", "has 6 fields; KEDA takes exactly 5 fields: minute hour day-of-month month day-of-week"),
        ("1/2/3 * * * *", "has too many '/' in '1/2/3'"),
        ("1-2-3 * * * *", "has too many '-' in '1-2-3'"),
        ("60 * * * *", "is out of range in '60': the minute takes 0-59"),
        ("0 24 * * *", "is out of range in '24': the hour takes 0-23"),
        ("0 0 0 * *", "is out of range in '0': the day of month takes 1-31"),
        ("0 0 * 13 *", "is out of range in '13': the month takes 1-12 or names such as jan, feb, mar"),
        ("0 0 * * 7", "is out of range in '7': the day of week takes 0-6 or names such as sun, mon, tue"),
        ("0 0 * * 5-7", "is out of range in '5-7': the day of week takes 0-6 or names such as sun, mon, tue"),
        ("20-10 * * * *", "has a range that ends before it starts: '20-10'"),
        ("0-x * * * *", "has 'x' in '0-x', which KEDA's parser does not take: the minute takes 0-59 (no L, W or #)"),
        ("*/0 * * * *", "has a step of 0 in '*/0'"),
        ("0 0 L * *", "has 'L' in 'L', which KEDA's parser does not take: the day of month takes 1-31 (no L, W or #)"),
        ("*/x * * * *", "has 'x' in '*/x', which KEDA's parser does not take: a step is a whole number (no L, W or #)"),
        ("*/-1 * * * *", "has a negative number in '*/-1'"),
        ("-5 * * * *", "has '' in '-5', which KEDA's parser does not take: the minute takes 0-59 (no L, W or #)"),
        (
            "*/9223372036854775808 * * * *",
            "has '9223372036854775808' in '*/9223372036854775808', which KEDA's parser does not take: a step is a whole number",
        ),
        ("9223372036854775807 * * * *", "is out of range in '9223372036854775807': the minute takes 0-59"),
        ("٣ * * * *", "has '٣' in '٣', which KEDA's parser does not take: the minute takes 0-59"),
    ],
)
def test_what_the_parser_refuses_is_refused_saying_why(expression: str, message: str) -> None:
    with pytest.raises(CronError) as caught:
        schedule(expression)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("60 * * * *", "is out of range in '60': the minute takes 0-59"),
        ("0 0 * 0 *", "is out of range in '0': the month takes 1-12 or names such as jan, feb, mar"),
    ],
)
def test_an_out_of_range_value_names_the_fields_range_and_only_a_named_fields_first_names(expression: str, message: str) -> None:
    with pytest.raises(CronError) as caught:
        schedule(expression)
    assert str(caught.value) == message
