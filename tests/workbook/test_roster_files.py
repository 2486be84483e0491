"""Rosters as instructors have them: the workbook's CSV, Canvas's gradebook export and
Moodle's participants download, read as they come; any roster that would file one
student's work under another is refused with both lines named."""

from __future__ import annotations

import pytest

from workbook.instructor.roster import RosterError
from workbook.instructor.roster_files import parse_roster

# Canvas's gradebook export as lib/gradebook_exporter.rb writes it: a Manual Posting row
# when an assignment posts by hand, the Points Possible row (four leading spaces), a
# name that starts with "=" quoted as ="...", the Student View user last.
CANVAS = '''Student,ID,SIS User ID,SIS Login ID,Section,Ring AllReduce (9001),Current Score
,,,,,Manual Posting,
    Points Possible,,,,,10.00,(read only)
"Lovelace, Ada",50101,s01,ada@uni.example,Section 1,,
"=""=Eve, Formula""",50107,s07,eve@uni.example,Section 1,,
"O'Brien, Mary_Ann",50104,,mob,Section 2,,
"Nobody, Known",50120,,,Section 2,,
"Student, Test",50199,,,Section 1,,
'''


def test_canvas_gradebook_export_is_a_roster() -> None:
    roster = parse_roster(CANVAS)
    assert roster.source == "Canvas gradebook export"
    assert [(s.id, s.canvas_id, s.name) for s in roster.students] == [
        ("s01", "50101", "Lovelace, Ada"), ("s07", "50107", "=Eve, Formula"),
        ("mob", "50104", "O'Brien, Mary_Ann"), ("canvas-50120", "50120", "Nobody, Known")]
    assert len(roster.skipped) == 1 and "Test Student" in roster.skipped[0]
    assert dict(roster.columns) == {"Ring AllReduce (9001)": 10.0}


def test_canvas_writes_semicolons_in_some_locales() -> None:
    semicolons = CANVAS.replace(",", ";").replace('"Lovelace; Ada"', '"Lovelace, Ada"')
    assert [s.id for s in parse_roster(semicolons).students][:1] == ["s01"]


def test_moodle_participants_download_is_a_roster() -> None:
    text = ("First name,Last name,ID number,Email address,Roles,Groups\n"
            "Ada,Lovelace,20230001,Ada@Uni.example,Student,No groups\n"
            "Alan,Turing,,alan@uni.example,Student,No groups\n")
    roster = parse_roster(text)
    assert [(s.id, s.idnumber, s.email, s.name) for s in roster.students] == [
        ("20230001", "20230001", "Ada@Uni.example", "Ada Lovelace"),
        ("alan@uni.example", "", "alan@uni.example", "Alan Turing")]
    assert roster.by_lms("email")["ada@uni.example"] == "20230001"  # without case


@pytest.mark.parametrize("text, said", [
    ("id,canvas_id\ns1,501\ns2,501\n", "line 3: the canvas_id 501 is already on line 2"),
    ("id,email\ns1,a@x.org\ns2,A@X.org\n", "line 3: the email A@X.org is already on line 2"),
    ("id,moodle_id\ns1,7\ns2,7\n", "the moodle_id 7 is already on line 2"),
    ("id,idnumber\ns1,99\ns2,99\n", "the idnumber 99 is already on line 2"),
    ("id\ns1\ns1\n", "the id s1 is already on line 2"),
    ("Student,ID,SIS User ID,SIS Login ID,Section\n\"A, B\",5,s1,,\n\"C, D\",5,s2,,\n",
     "the canvas_id 5 is already on line 2"),
    ("Student,ID,SIS Login ID,Section\n\"A, B\",x12,,\n", "not a Canvas user id"),
    ("name,points\nAda,3\n", "must name an 'id' column"),
    ("id,name\n", "lists no students"),
])
def test_a_roster_that_would_misfile_work_is_refused(text: str, said: str) -> None:
    with pytest.raises(RosterError, match=said.replace("(", r"\(")):
        parse_roster(text)
